"""The installed ``wfctl``: a failed run can be continued after a fix, and every hint it prints
is a command that works (each test runs the printed commands as printed)."""

from __future__ import annotations

import shlex
import string
from pathlib import Path

import pytest

from tests.cli.conftest import WORKFLOWS, Invocation, invoke, run_id_of, wfctl
from tests.conftest import failure_of

STEP_BUG = """
from wfctl import step, workflow


@step
async def first(x: str) -> str:
    return f"first {x}"


@step
async def second(x: str) -> str:
    $second_body


@workflow(name="fixable")
async def fixable(x: str) -> list[str]:
    return [await first(x), await second(x)]
"""

INPUT_BUG = """
from typing import Any

from wfctl import step, workflow


@step
async def price(item: str) -> int:
    return len(item)


@workflow(name="ordering")
async def ordering(order: dict[str, Any]) -> int:
    each = await price(order["item"])
    return each * $quantity
"""


def _write(path: Path, template: str, **fields: str) -> Path:
    path.write_text(string.Template(template).substitute(fields), encoding="utf-8")
    return path


def _fail(
    store: Path, code: Path, input_json: str, error: str, where: str
) -> tuple[str, list[str]]:
    """Run ``code`` to a failure; return its run id and the commands it printed for people."""
    failed = wfctl("run", code, "--input", input_json, "--store", store)
    assert failed.code == 1
    assert f"failed: {error}" in failed.stderr and "Traceback" not in failed.stderr
    assert f"\nIt failed in {where}" in failed.stderr
    run_id = failed.stderr.split("run ", 1)[1].split()[0]
    commands = [line.strip() for line in failed.stderr.splitlines() if line.startswith("  wfctl ")]
    return run_id, commands


def _run_printed(command: str) -> Invocation:
    argv = shlex.split(command)
    assert argv[0] == "wfctl"
    return wfctl(*argv[1:], "--json")


def _kinds(store: Path, run_id: str) -> list[str]:
    log = invoke("log", run_id, "--store", store, "--json").json()
    return [c["kind"] for c in log["checkpoints"]]


def test_a_failed_run_continues_in_place_after_its_code_is_fixed(
    store: Path, tmp_path: Path
) -> None:
    code = _write(tmp_path / "fixable.py", STEP_BUG, second_body='raise RuntimeError("bug")')
    run_id, (retry, retry_changed, rerun) = _fail(
        store, code, '"x"', "RuntimeError: bug", "step second#0; the steps that succeeded are kept"
    )
    assert retry == f"wfctl resume {run_id} --store {store}"
    assert retry_changed == f"{retry} --allow-changed"
    assert rerun == f"wfctl run {code}:fixable --store {store} --input '\"x\"'"

    _write(code, STEP_BUG, second_body='return f"second {x}"')  # the fix
    refused = wfctl(*shlex.split(retry)[1:])
    assert refused.code == 2
    line = refused.error_line()
    assert "workflow 'fixable' changed since the checkpoint was written" in line
    assert line.endswith(f"; to go ahead with the new code: {retry_changed}")
    assert _kinds(store, run_id) == ["root", "step", "failed"]  # the refusal recorded nothing

    done = _run_printed(retry_changed)
    assert done.code == 0, done.stderr
    doc = done.json()
    assert doc["run_id"] == run_id and doc["status"] == "completed"
    assert doc["outputs"] == [["first x", "second x"]]
    # The step that succeeded is served from the record; the failed one ran the new code.
    assert doc["step_counts"] == {"executed": 1, "cached": 1, "changed": 0}
    assert _kinds(store, run_id) == ["root", "step", "failed", "resume", "step", "completed"]
    verified = wfctl("verify-lineage", run_id, "--store", store)
    assert verified.code == 0, verified.stdout


def test_a_step_that_calls_sys_exit_failed_in_that_step_and_a_plain_retry_runs_it_again(
    store: Path, tmp_path: Path
) -> None:
    ready = tmp_path / "ready"
    # The step exits until a file exists: a cause outside the code, as a missing input would be.
    body = f"import os, sys; return x if os.path.exists({str(ready)!r}) else sys.exit(7)"
    code = _write(tmp_path / "fixable.py", STEP_BUG, second_body=body)
    error = "WorkflowExitError: SystemExit(7) raised in step second#0"
    run_id, (retry, retry_changed, _rerun) = _fail(
        store, code, '"x"', error, "step second#0; the steps that succeeded are kept"
    )
    assert retry == f"wfctl resume {run_id} --store {store}"
    assert retry_changed == f"{retry} --allow-changed"
    as_json = wfctl("run", code, "--input", '"x"', "--store", store, "--json")
    assert as_json.code == 1
    doc = as_json.json()
    assert doc["failed_step_key"] == "second#0"
    assert doc["resume_command"] == f"wfctl resume {doc['run_id']} --store {store}"
    retry_hint = doc["hints"][0]
    assert retry_hint["when"] == "after fixing the cause outside the code (second#0 runs again)"

    ready.touch()  # the cause, fixed
    done = _run_printed(retry)
    assert done.code == 0, done.stderr
    assert done.json()["run_id"] == run_id and done.json()["outputs"] == [["first x", "x"]]
    assert done.json()["step_counts"] == {"executed": 1, "cached": 1, "changed": 0}
    assert _kinds(store, run_id) == ["root", "step", "failed", "resume", "step", "completed"]


def test_library_equivalent_continues_a_failed_run_with_allow_changed(tmp_path: Path) -> None:
    import asyncio

    from wfctl import FileCheckpointStorage, WorkflowChangedError
    from wfctl._drive._loader import load_workflow  # internal: loads a file as the CLI does

    code = _write(tmp_path / "fixable.py", STEP_BUG, second_body='raise RuntimeError("bug")')
    storage = FileCheckpointStorage(tmp_path / "store")
    first = load_workflow(str(code)).build(checkpoint_storage=storage)
    with pytest.raises(RuntimeError, match="bug") as caught:
        asyncio.run(first.run("y"))
    failed = failure_of(caught)
    _write(code, STEP_BUG, second_body="return x * 2")
    fixed = load_workflow(str(code)).build(checkpoint_storage=storage)
    try:
        asyncio.run(fixed.resume(failed.run_id))
    except WorkflowChangedError:
        pass
    else:
        raise AssertionError("changed code must be refused without allow_changed")
    done = asyncio.run(fixed.resume(failed.run_id, allow_changed=True))
    assert done.run_id == failed.run_id and done.get_outputs() == [["first y", "yy"]]
    assert list(done.cached) == ["first#0"] and list(done.executed) == ["second#0"]


def test_a_failure_in_the_body_from_the_input_does_not_advise_a_plain_retry(
    store: Path, tmp_path: Path
) -> None:
    code = _write(tmp_path / "ordering.py", INPUT_BUG, quantity='order["qty"]')
    run_id, (retry_changed, rerun) = _fail(
        store, code, '{"item": "pen"}', "KeyError: 'qty'", "the workflow body, outside any step"
    )
    assert retry_changed == f"wfctl resume {run_id} --store {store} --allow-changed"
    assert rerun == f'wfctl run {code}:ordering --store {store} --input \'{{"item": "pen"}}\''
    as_json = wfctl("run", code, "--input", '{"item": "pen"}', "--store", store, "--json")
    assert as_json.json()["failed_step_key"] is None
    assert [h["command"].split(" --store")[0] for h in as_json.json()["hints"]] == [
        f"wfctl resume {as_json.json()['run_id']}",
        f"wfctl run {code}:ordering",
    ]
    assert as_json.json()["resume_command"] == as_json.json()["hints"][0]["command"]

    # Start again with another input: the printed command, its --input edited.
    again = _run_printed(rerun.replace('"pen"}', '"pen", "qty": 2}'))
    assert again.code == 0, again.stderr
    assert again.json()["outputs"] == [6] and again.json()["run_id"] != run_id

    # Or fix the code and continue the failed run in place.
    _write(code, INPUT_BUG, quantity='order.get("qty", 1)')
    fixed = _run_printed(retry_changed)
    assert fixed.code == 0, fixed.stderr
    assert fixed.json()["run_id"] == run_id and fixed.json()["outputs"] == [3]
    assert fixed.json()["step_counts"] == {"executed": 0, "cached": 1, "changed": 0}


def test_answering_a_paused_run_whose_code_changed_names_the_exact_command(
    store: Path, tmp_path: Path
) -> None:
    code = tmp_path / "purchase.py"
    code.write_text((WORKFLOWS / "purchase.py").read_text(encoding="utf-8"), encoding="utf-8")
    run_id = run_id_of(wfctl("run", code, "--store", store, "--json"))
    code.write_text(
        code.read_text(encoding="utf-8").replace("ordered {quantity} x", "ordering {quantity} x"),
        encoding="utf-8",
    )
    refused = wfctl("resume", run_id, "-r", "approve=true", "-r", "qty=2", "--store", store)
    assert refused.code == 2
    command = refused.error_line().split("to go ahead with the new code: ", 1)[1]
    assert command == (
        f"wfctl resume {run_id} --store {store} --response approve=true --response qty=2 "
        "--allow-changed"
    )
    done = _run_printed(command)
    assert done.code == 0, done.stderr
    assert done.json()["outputs"] == [{"status": "ordering 2 x laptop"}]


def test_resuming_a_completed_run_points_at_a_replay_that_works(store: Path) -> None:
    run_id = run_id_of(wfctl("run", WORKFLOWS / "greet.py", "--store", store, "--json"))
    refused = wfctl("resume", run_id, "--store", store)
    assert refused.code == 2
    line = refused.error_line()
    command = line.split("from a checkpoint: ", 1)[1].rstrip(")")
    assert command == f"wfctl replay --checkpoint {run_id}.2 --store {store}"
    replayed = _run_printed(command)
    assert replayed.code == 0, replayed.stderr


UNPRINTABLE = """
from wfctl import step, workflow


class Unprintable(Exception):
    def __str__(self) -> str:
        raise RuntimeError("no text for this one")


@step
async def lookup(x: int) -> int:
    raise Unprintable()


@workflow(name="unprintable")
async def unprintable(x: int) -> int:
    return await lookup(x)
"""


def test_a_run_failed_by_an_exception_that_cannot_be_printed_is_reported_as_itself(
    store: Path, tmp_path: Path
) -> None:
    code = tmp_path / "unprintable.py"
    code.write_text(UNPRINTABLE)
    done = wfctl("run", code, "--input", "1", "--store", store)
    assert done.code == 1, done.stderr
    assert "internal error" not in done.stderr and "Traceback" not in done.stderr
    # Was "failed: RuntimeError: no text for this one", "in the workflow body": describing
    # the step's error raised in its place.
    assert "failed: Unprintable: <exception str() failed>" in " ".join(done.stderr.split())
    assert "It failed in step lookup#0" in done.stderr
    doc = wfctl("run", code, "--input", "1", "--store", store, "--json").json()
    assert doc["error"] == "Unprintable: <exception str() failed>"
    assert doc["failed_step_key"] == "lookup#0"
