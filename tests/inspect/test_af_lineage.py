"""verify_agent_framework_dir over directories in the agent framework's checkpoint format."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import arun
from tests.inspect.helpers import FIXTURES, copy_fixture
from wfctl import WfctlError
from wfctl._inspect._af_lineage import UNREADABLE, verify_agent_framework_dir
from wfctl._inspect._lineage import LineageReport


def write(directory: Path, cid: str, parent: str | None, ms: int, **extra: Any) -> Path:
    """Write one checkpoint file the way the framework does (``<checkpoint_id>.json``)."""
    directory.mkdir(exist_ok=True)
    file = extra.pop("file", cid)
    body = {
        "workflow_name": "wf",
        "graph_signature_hash": "h",
        "checkpoint_id": cid,
        "previous_checkpoint_id": parent,
        "timestamp": f"2026-01-01T00:00:00.{ms:03d}000+00:00",
        "state": {"_step_cache": {}},
        "version": "1.0",
        **extra,
    }
    path = directory / f"{file}.json"
    path.write_text(json.dumps(body, indent=2))
    return path


def check(directory: Path, **kwargs: Any) -> LineageReport:
    return arun(verify_agent_framework_dir(directory, **kwargs))


def test_linear_chain_is_ok(tmp_path: Path) -> None:
    write(tmp_path, "a", None, 1)
    write(tmp_path, "b", "a", 2)
    write(tmp_path, "c", "b", 3)
    (verdict,) = check(tmp_path).runs
    assert (verdict.ok, verdict.head, verdict.checkpoints) == (True, "c", 3)


def test_unparseable_files_are_named(tmp_path: Path) -> None:
    write(tmp_path, "a", None, 1)
    (tmp_path / "broken.json").write_text('{"workflow_name": "wf", "checkpoint_')
    (tmp_path / "list.json").write_text("[1, 2]")
    (tmp_path / "anon.json").write_text('{"checkpoint_id": "anon"}')
    (tmp_path / ".maf-ckpt-0123.tmp").write_text("{")  # an interrupted save's temp file
    report = check(tmp_path)
    assert [v.run_id for v in report.runs] == ["a", UNREADABLE]  # a run: its first checkpoint
    assert report.runs[0].ok and not report.ok
    problems = report.runs[1].problems
    assert problems[0] == "anon.json: no workflow_name"
    assert problems[1].startswith("broken.json: unreadable (JSONDecodeError: ")
    assert problems[2] == "list.json: not a JSON object"


def test_bad_fields_are_charged_to_their_workflow(tmp_path: Path) -> None:
    write(tmp_path, "a", None, 1)
    write(tmp_path, "b", "a", 2, checkpoint_id=7)
    write(tmp_path, "c", "a", 3, timestamp="yesterday")
    (verdict,) = check(tmp_path).runs
    assert verdict.problems[0] == (
        "b.json: missing or invalid checkpoint_id/previous_checkpoint_id"
    )
    assert "c.json: invalid timestamp 'yesterday' (get_latest cannot order it)" in verdict.problems
    assert verdict.head == "a"  # the unordered record is taken as the oldest


def test_missing_parent_and_parent_in_another_workflow(tmp_path: Path) -> None:
    write(tmp_path, "a", None, 1)
    write(tmp_path, "b", "gone", 2)
    write(tmp_path, "x", None, 1, workflow_name="other")
    write(tmp_path, "c", "x", 3)
    verdicts = check(tmp_path, workflow_name="wf").runs
    problems = [p for verdict in verdicts for p in verdict.problems]
    assert "b.json: parent gone not found" in problems
    assert "c.json: parent x belongs to workflow 'other'" in problems
    assert "roots" not in " ".join(problems)


def test_cycles_are_named_once(tmp_path: Path) -> None:
    write(tmp_path, "root", None, 1)
    write(tmp_path, "a", "b", 2)
    write(tmp_path, "b", "a", 3)
    (verdict,) = check(tmp_path).runs
    cycles = [p for p in verdict.problems if p.startswith("cycle")]
    assert cycles in (
        ["cycle of parent links: a -> b -> a"],
        ["cycle of parent links: b -> a -> b"],
    )
    assert (
        "1 record(s) unreachable from the head b.json (the newest): root.json" in verdict.problems
    )


def test_duplicate_ids_and_misnamed_files(tmp_path: Path) -> None:
    write(tmp_path, "a", None, 1)
    write(tmp_path, "a", None, 2, file="copy-of-a")
    (verdict,) = check(tmp_path).runs
    assert "duplicate checkpoint id a: in a.json and copy-of-a.json" in verdict.problems
    assert (
        "a (in copy-of-a.json): the file is not named a.json, so load() misses it"
        in verdict.problems
    )


def test_two_children_is_a_fork(tmp_path: Path) -> None:
    write(tmp_path, "a", None, 1)
    write(tmp_path, "b", "a", 2)
    write(tmp_path, "c", "a", 3)
    (verdict,) = check(tmp_path).runs
    assert "a has 2 children: b.json, c.json" in verdict.problems
    assert "1 record(s) unreachable from the head c.json (the newest): b.json" in verdict.problems


def test_separate_runs_are_separate_verdicts(tmp_path: Path) -> None:
    """Two runs of one workflow, one after the other: the first ended (its last save repeats
    its parent's step cache), so the second root starts a run of its own."""
    write(tmp_path, "a1", None, 1)
    write(tmp_path, "a2", "a1", 2)
    write(tmp_path, "b1", None, 5)
    report = check(tmp_path)
    assert [(v.run_id, v.workflow_name, v.checkpoints, v.ok) for v in report.runs] == [
        ("a1", "wf", 2, True),
        ("b1", "wf", 1, True),
    ]


def test_equal_timestamps_prefer_the_leaf_and_are_noted(tmp_path: Path) -> None:
    write(tmp_path, "a", None, 1)
    write(tmp_path, "b", "a", 1)
    (verdict,) = check(tmp_path).runs
    assert (verdict.ok, verdict.head) == (True, "b")
    assert verdict.notes == (
        "2 checkpoints share the timestamp 2026-01-01T00:00:00.001000+00:00: a.json, b.json "
        "(get_latest that breaks the tie by id alone may restore the older one)",
    )


def test_workflow_filter(tmp_path: Path) -> None:
    report = check(FIXTURES / "af_healthy", workflow_name="review")
    assert [(v.workflow_name, v.ok) for v in report.runs] == [("review", True)]
    (absent,) = check(FIXTURES / "af_healthy", workflow_name="nope").runs
    assert absent.problems == ("workflow 'nope' not found",)


def test_not_a_directory(tmp_path: Path) -> None:
    with pytest.raises(WfctlError, match="not a directory"):
        check(tmp_path / "missing")


def test_payloads_are_never_decoded(tmp_path: Path) -> None:
    """A pickled envelope that could not be decoded anyway does not matter to lineage."""
    directory = copy_fixture("af_healthy", tmp_path)
    first = next(directory.glob("*.json"))
    body = json.loads(first.read_text())
    body["state"]["_step_cache"]["poison"] = {
        "__pickled__": "!!not base64",
        "__type__": "os:system",
    }
    first.write_text(json.dumps(body))
    assert check(directory).ok


def test_neither_pickle_nor_the_framework_is_imported() -> None:
    code = (
        "import asyncio, sys\n"
        "from wfctl._inspect._af_lineage import verify_agent_framework_dir\n"
        f"report = asyncio.run(verify_agent_framework_dir({str(FIXTURES / 'af_forked')!r}))\n"
        "assert not report.ok\n"
        "print(sorted(m for m in sys.modules if m == 'pickle' or m.startswith('agent_framework')))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_an_iteration_gap_names_the_checkpoints_not_saved(tmp_path: Path) -> None:
    """A graph workflow (no step cache): a pause and its answer share an iteration; a gap is
    what agent-framework leaves when it refuses to save a checkpoint."""
    graph = {"state": {}, "messages": {"x": [1]}}
    write(tmp_path, "a", None, 1, iteration_count=0, **graph)
    write(tmp_path, "b", "a", 2, iteration_count=1, **graph)
    write(tmp_path, "c", "b", 3, iteration_count=1, **graph)  # the answer to a pause
    write(tmp_path, "d", "c", 4, iteration_count=2, **graph)
    write(tmp_path, "e", "d", 5, iteration_count=5, **graph)
    (verdict,) = check(tmp_path).runs
    assert verdict.problems == (
        "e.json: iteration 5 follows its parent's 2: the checkpoints of iterations 3 to 4 "
        "were not saved (agent-framework skips a checkpoint it cannot encode and parents the "
        "next one to the last it saved)",
    )
