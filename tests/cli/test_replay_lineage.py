"""``wfctl replay`` and ``wfctl verify-lineage``."""

from __future__ import annotations

import json
import os
import shlex
import shutil
from pathlib import Path
from typing import Any

from tests.cli.conftest import WORKFLOWS, invoke, run_id_of, wfctl

GREET = WORKFLOWS / "greet.py"


def _copy_greet(tmp_path: Path) -> Path:
    folder = tmp_path / "code"
    folder.mkdir()
    target = folder / "greet_copy.py"
    shutil.copy(GREET, target)
    return target


def test_replay_identical_exits_0(store: Path) -> None:
    run_id = run_id_of(invoke("run", GREET, "--input", '"ada"', "--store", store, "--json"))
    done = wfctl("replay", "--checkpoint", f"{run_id}.0", "--store", store, "--json")
    assert done.code == 0, done.stderr
    doc = done.json()
    assert doc["identical"] is True
    assert doc["source_run_id"] == run_id and doc["replay_run_id"] != run_id
    assert (
        doc["source_outputs"]
        == doc["replay_outputs"]
        == ["hello ADA", {"greeted": "ADA", "length": 3}]
    )
    assert doc["outputs_diff"] == ""
    assert [(s["key"], s["status"]) for s in doc["steps"]] == [("shout#0", "same")]
    # The replay is a new run whose root names its origin.
    runs = {r["run_id"]: r for r in invoke("runs", "--store", store, "--json").json()["runs"]}
    assert runs[doc["replay_run_id"]]["origin_checkpoint_id"] == f"{run_id}.0"


def test_replay_for_people_shows_outputs_and_steps(store: Path) -> None:
    run_id = run_id_of(invoke("run", GREET, "--store", store, "--json"))
    done = wfctl("replay", "-c", f"{run_id}.1", "--store", store)
    assert done.code == 0
    out = done.stdout
    assert f"of {run_id}.1" in out and "identical" in out
    assert "source outputs" in out and "replay outputs" in out and "hello WORLD" in out
    assert "outputs equal" in out
    assert "shout#0" in out and "cached" in out
    assert "1 cached, 0 same, 0 changed, 0 new, 0 not reached" in out


def test_replay_of_changed_code(store: Path, tmp_path: Path) -> None:
    code = _copy_greet(tmp_path)
    run_id = run_id_of(invoke("run", code, "--store", store, "--json"))
    code.write_text(
        code.read_text(encoding="utf-8").replace(
            "return name.upper()", 'return name.upper() + "!"'
        ),
        encoding="utf-8",
    )
    refused = wfctl("replay", "-c", f"{run_id}.0", "--store", store)
    assert refused.code == 2
    line = refused.error_line()
    assert "changed since the checkpoint was written" in line
    # The refusal names the exact command that goes ahead; it works as printed.
    command = line.split("to go ahead with the new code: ", 1)[1]
    assert command == f"wfctl replay --checkpoint {run_id}.0 --store {store} --allow-changed"
    allowed = wfctl(*shlex.split(command)[1:], "--json")
    assert allowed.code == 1, allowed.stderr
    doc = allowed.json()
    assert doc["identical"] is False
    assert '-  "hello WORLD"' in doc["outputs_diff"] and '+  "hello WORLD!"' in doc["outputs_diff"]
    assert [(s["key"], s["status"]) for s in doc["steps"]] == [("shout#0", "changed")]
    people = wfctl("replay", "-c", f"{run_id}.0", "--allow-changed", "--store", store)
    assert people.code == 1
    assert "DIFFERS" in people.stdout and "outputs diff" in people.stdout
    assert '+  "hello WORLD!"' in people.stdout and "changed" in people.stdout


def test_replay_without_execution_is_a_determinism_check(store: Path) -> None:
    run_id = run_id_of(invoke("run", GREET, "--store", store, "--json"))
    served = wfctl("replay", "-c", f"{run_id}.1", "--no-execute", "--store", store, "--json")
    assert served.code == 0 and served.json()["identical"] is True
    # From the root nothing is recorded yet: the step would have to run, a divergence.
    diverged = wfctl("replay", "-c", f"{run_id}.0", "--no-execute", "--store", store, "--json")
    assert diverged.code == 1
    doc = diverged.json()
    assert doc["replay_status"] == "failed" and doc["error_type"] == "ReplayDivergenceError"


def test_replay_with_a_target_override(store: Path, tmp_path: Path) -> None:
    # Same file name, same code: the same module name and code signature in a new process.
    moved = tmp_path / "moved"
    moved.mkdir()
    code = moved / "greet.py"
    shutil.copy(GREET, code)
    run_id = run_id_of(wfctl("run", code, "--store", store, "--json"))
    code.unlink()
    lost = wfctl("replay", "-c", f"{run_id}.1", "--store", store)
    assert lost.code == 2 and "no such file" in lost.error_line()
    found = wfctl("replay", "-c", f"{run_id}.1", "--target", f"{GREET}:greet", "--store", store)
    assert found.code == 0, found.stderr


def test_verify_lineage_of_healthy_runs(store: Path) -> None:
    first = run_id_of(invoke("run", GREET, "--store", store, "--json"))
    second = run_id_of(invoke("run", GREET, "--store", store, "--json"))
    done = wfctl("verify-lineage", "--store", store, "--json")
    assert done.code == 0
    doc = done.json()
    assert doc["ok"] is True
    assert [(v["run_id"], v["ok"], v["checkpoint_count"]) for v in doc["runs"]] == [
        (first, True, 3),
        (second, True, 3),
    ]
    one = wfctl("verify-lineage", second, "--workflow", "greet", "--store", store)
    assert one.code == 0
    assert second in one.stdout and first not in one.stdout
    assert "1 run(s) checked, 0 broken" in one.stdout


def test_verify_lineage_finds_a_fork(store: Path) -> None:
    run_id = run_id_of(invoke("run", GREET, "--store", store, "--json"))
    journal = store / "runs" / run_id / "journal.jsonl"
    lines = journal.read_bytes().splitlines(keepends=True)
    journal.write_bytes(b"".join([*lines, lines[1]]))  # a second record at seq 1
    done = wfctl("verify-lineage", run_id, "--store", store, "--json")
    assert done.code == 1
    [verdict] = done.json()["runs"]
    assert verdict["ok"] is False and verdict["problems"]


def _af_checkpoint(
    folder: Path, cid: str, parent: str | None, minute: int, *, steps: int | None = None
) -> None:
    """Write a checkpoint file: a graph workflow's whose state is a pickle, or with ``steps``
    a functional workflow's whose step cache holds that many steps."""
    state: dict[str, Any] = {
        "__pickled__": "gASVAAAAAAAAAACMCGJ1aWx0aW5zlIwEZXZhbJSTlC4=",
        "__type__": "x",
    }
    if steps is not None:
        state = {"_step_cache": {f"step::{i}": i for i in range(steps)}}
    record = {
        "workflow_name": "wf",
        "checkpoint_id": cid,
        "previous_checkpoint_id": parent,
        "timestamp": f"2025-01-01T00:{minute:02d}:00+00:00",
        "state": state,
    }
    folder.mkdir(exist_ok=True)
    (folder / f"{cid}.json").write_text(json.dumps(record), encoding="utf-8")


def test_verify_lineage_of_an_agent_framework_directory(tmp_path: Path) -> None:
    healthy = tmp_path / "healthy"
    healthy.mkdir()
    _af_checkpoint(healthy, "a", None, 0)
    _af_checkpoint(healthy, "b", "a", 1)
    done = wfctl("verify-lineage", "--agent-framework", healthy, "--json")
    assert done.code == 0, done.stderr
    assert done.json()["runs"][0]["checkpoint_count"] == 2

    forked = tmp_path / "forked"  # report 004: a functional run's second root
    for cid, parent, minute, steps in (("a", None, 0, 1), ("b", "a", 1, 2), ("c", None, 2, 3)):
        _af_checkpoint(forked, cid, parent, minute, steps=steps)
    broken = wfctl("verify-lineage", "--agent-framework", forked)
    assert broken.code == 1
    assert "BROKEN" in broken.stdout and "2 roots" in broken.stdout

    missing = wfctl("verify-lineage", "--agent-framework", tmp_path / "none")
    assert missing.code == 2 and "not a directory" in missing.error_line()
    with_ids = invoke("verify-lineage", "r1", "--agent-framework", healthy)
    assert with_ids.code == 2 and "give no run ids" in with_ids.error_line()


def test_verify_lineage_names_a_fifo_and_a_link_out_of_an_agent_framework_directory(
    tmp_path: Path,
) -> None:
    folder = tmp_path / "af"
    folder.mkdir()
    _af_checkpoint(folder, "a", None, 0)
    _af_checkpoint(folder, "b", "a", 1)
    outside = tmp_path / "outside"
    outside.mkdir()
    _af_checkpoint(outside, "c", "b", 2)  # would pass as b's child if it were followed
    (folder / "c.json").symlink_to(outside / "c.json")
    os.mkfifo(folder / "x.json")
    done = wfctl("verify-lineage", "--agent-framework", folder, "--json", timeout=30)
    assert done.code == 1, done.stderr
    verdicts = {v["workflow"] or v["run_id"]: v for v in done.json()["runs"]}
    assert verdicts["wf"]["checkpoint_count"] == 2 and verdicts["wf"]["ok"] is True
    problems = verdicts["(unreadable files)"]["problems"]
    assert sorted(problems) == [
        "c.json: not read: a link, not followed",
        "x.json: not read: not a regular file (a FIFO, a device, ...)",
    ]
    shown = wfctl("verify-lineage", "--agent-framework", folder, timeout=30)
    assert shown.code == 1 and shown.stderr == ""
    assert "c.json: not read" in shown.stdout and "x.json: not read" in shown.stdout
