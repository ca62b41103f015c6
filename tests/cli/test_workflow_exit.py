"""``sys.exit()`` inside workflow code fails the run; it never ends ``wfctl`` itself.

asyncio re-raises a ``SystemExit`` escaping a task out of the event loop, so without a guard
``sys.exit(0)`` in a step made ``wfctl run`` exit 0 with nothing on stdout and the run left
``interrupted``. A module that calls ``sys.exit()`` while it is imported cannot be loaded, as
one that raises anything else: before, its status became ``wfctl``'s (3 reads as "paused"),
with nothing printed.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.cli.conftest import WORKFLOWS, invoke, run_id_of, wfctl

EXITS = WORKFLOWS / "exits.py"


@pytest.mark.parametrize(
    ("where", "named", "failed_in"),
    [
        ("step", "step leave#0", "leave#0"),  # a step's exit fails the run in that step
        ("body", "the workflow body", None),
        ("branch", "branch()", None),  # a branch's own code is the body's, outside any step
    ],
)
def test_sys_exit_in_workflow_code_is_a_failed_run(
    store: Path, where: str, named: str, failed_in: str | None
) -> None:
    out = wfctl("run", EXITS, "--input", json.dumps(where), "--store", store, "--json")
    assert out.code == 1, (out.stdout, out.stderr)
    doc = out.json()
    assert doc["status"] == "failed"
    assert doc["error"].startswith(f"WorkflowExitError: SystemExit(0) raised in {named}")
    assert doc["failed_step_key"] == failed_in
    stderr = out.stderr.strip().splitlines()
    assert len(stderr) == 1 and stderr[0].startswith(f"wfctl: run {doc['run_id']} failed: ")
    run_id = run_id_of(out)
    log = invoke("log", run_id, "--store", store, "--json").json()
    kinds = [c["kind"] for c in log["checkpoints"]]
    assert kinds == ["root", "step", "failed"]  # the step before the exit stays recorded
    runs = invoke("runs", "--store", store, "--json").json()["runs"]
    assert [r["status"] for r in runs] == ["failed"]
    shown = invoke("show", doc["head_checkpoint_id"], "--store", store, "--json").json()["record"]
    assert shown["data"]["error"]["type"] == "WorkflowExitError"
    assert "SystemExit(0)" in shown["data"]["error"]["message"]
    assert shown["data"].get("step") == failed_in


def _exits_at_import(path: Path, status: str) -> Path:
    """Write a module that calls ``sys.exit(status)`` at its top level."""
    path.write_text(f"import sys\n\nsys.exit({status})\n", encoding="utf-8")
    return path


@pytest.mark.parametrize(
    ("command", "target", "status", "raised"),
    [
        ("run", "leaves.py", "3", "running leaves.py raised SystemExit(3)"),  # 3 reads as paused
        ("run", "leaves.py", "0", "running leaves.py raised SystemExit(0)"),
        ("run", "leaves.py", "", "running leaves.py raised SystemExit(None)"),
        ("run", "leaves:flow", "3", "importing leaves raised SystemExit(3)"),
        ("submit", "leaves.py", "0", "running leaves.py raised SystemExit(0)"),
        ("submit", "leaves:flow", "3", "importing leaves raised SystemExit(3)"),
    ],
)
def test_sys_exit_while_the_target_is_imported_is_a_load_error(
    tmp_path: Path, store: Path, command: str, target: str, status: str, raised: str
) -> None:
    _exits_at_import(tmp_path / "leaves.py", status)
    done = wfctl(command, target, "--store", store, "--json", cwd=tmp_path)
    assert done.code == 2, (done.stdout, done.stderr)
    assert done.stdout == ""
    assert done.error_line() == f"wfctl: error: cannot load {target!r}: {raised}"
    assert not (store / "runs").exists()  # nothing was written


def test_resume_and_replay_of_code_that_now_exits_at_import_leave_the_run_alone(
    tmp_path: Path, store: Path
) -> None:
    code = tmp_path / "review.py"
    code.write_text((WORKFLOWS / "review.py").read_text(encoding="utf-8"), encoding="utf-8")
    paused = wfctl("run", code, "--store", store, "--json")
    assert paused.code == 3, paused.stderr
    run_id = run_id_of(paused)
    with code.open("a", encoding="utf-8") as appended:
        appended.write("\nimport sys\n\nsys.exit(0)\n")
    raised = f"wfctl: error: cannot load '{code}:review': running {code} raised SystemExit(0)"
    answers = ("-r", "0/request#0=yes", "-r", "1/request#0=4")
    resumed = wfctl("resume", run_id, *answers, "--store", store, "--json")
    assert (resumed.code, resumed.stdout) == (2, ""), resumed.stderr
    assert resumed.error_line() == raised
    replayed = wfctl("replay", "--checkpoint", f"{run_id}.1", "--store", store, "--json")
    assert (replayed.code, replayed.stdout) == (2, ""), replayed.stderr
    assert replayed.error_line() == raised
    runs = invoke("runs", "--store", store, "--json").json()["runs"]
    assert [(r["run_id"], r["status"]) for r in runs] == [(run_id, "paused")]
    log = invoke("log", run_id, "--store", store, "--json").json()
    assert [c["kind"] for c in log["checkpoints"]] == ["root", "step", "pause"]
