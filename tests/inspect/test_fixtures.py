"""The golden stores: each gives its verdict, with every problem named (tests/fixtures/)."""

from __future__ import annotations

import importlib
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import arun
from tests.inspect.helpers import FIXTURES
from wfctl import FileCheckpointStorage
from wfctl._inspect._af_lineage import verify_agent_framework_dir
from wfctl._inspect._lineage import LineageReport, RunVerdict, verify_lineage


def verify(name: str, root: Path = FIXTURES) -> LineageReport:
    return arun(verify_lineage(FileCheckpointStorage(root / name)))


def by_run(report: LineageReport) -> dict[str, RunVerdict]:
    return {verdict.run_id: verdict for verdict in report.runs}


def assert_fragments(verdict: RunVerdict, fragments: list[str]) -> None:
    """Every fragment appears in some problem, and every problem is expected."""
    for fragment in fragments:
        assert any(fragment in p for p in verdict.problems), (fragment, verdict.problems)
    assert len(verdict.problems) == len(fragments), verdict.problems


def test_healthy_store_verifies_ok() -> None:
    report = verify("healthy")
    assert report.ok
    runs = by_run(report)
    assert {r: (v.workflow_name, v.checkpoints, v.head) for r, v in runs.items()} == {
        "completed": ("pipeline", 5, "completed.4"),
        "paused": ("review", 3, "paused.2"),
        "answered": ("review", 5, "answered.4"),
        "retried": ("flaky", 6, "retried.5"),
        "restored": ("pipeline", 4, "restored.3"),
        "parallel": ("parallel", 3, "parallel.2"),
    }
    assert all(v.ok and not v.problems and not v.notes for v in runs.values())


def test_healthy_store_holds_the_shapes_it_claims() -> None:
    """The fixture really has a pause, a failure then a retry, and a restored run."""
    storage = FileCheckpointStorage(FIXTURES / "healthy")
    kinds = {
        run: [c.kind for c in arun(storage.list_checkpoints(run_id=run))]
        for run in ("paused", "retried", "restored")
    }
    assert kinds["paused"][-1] == "pause"
    assert kinds["retried"][2:4] == ["failed", "resume"]
    restored = arun(storage.list_checkpoints(run_id="restored"))
    assert {(c.origin_run_id, c.origin_checkpoint_id) for c in restored} == {
        ("completed", "completed.1")
    }


FORKED: dict[str, list[str]] = {
    # Report 004's race: both step saves read head .0; the final record continues from one.
    "fork-seq": [
        "fork at seq 1: 2 records are fork-seq.1: ",
        "fork-seq.0 has 2 children: fork-seq.1 (",
        "1 record(s) unreachable from the head fork-seq.2 (",
    ],
    "fork-root": [
        "2 roots (exactly one expected): fork-root.0 (",
        "2 record(s) unreachable from the head fork-root.2 (",
    ],
}


@pytest.mark.parametrize("run_id", sorted(FORKED))
def test_forked_store_names_the_fork(run_id: str) -> None:
    verdict = by_run(verify("forked"))[run_id]
    assert not verdict.ok
    assert_fragments(verdict, FORKED[run_id])


def test_fork_names_both_records_and_the_lost_one() -> None:
    verdict = by_run(verify("forked"))["fork-seq"]
    journal = FIXTURES / "forked" / "runs" / "fork-seq" / "journal.jsonl"
    fork = next(p for p in verdict.problems if p.startswith("fork at seq"))
    assert f"{journal}:2 (step, parent fork-seq.0" in fork
    assert f"{journal}:3 (step, parent fork-seq.0" in fork
    lost = next(p for p in verdict.problems if "unreachable" in p)
    assert lost.endswith(f": fork-seq.1 ({journal}:2)")
    root = by_run(verify("forked"))["fork-root"]
    assert f"fork-root.2 ({journal.parent.parent}/fork-root/journal.jsonl:3)" in root.problems[0]


def test_torn_tail_is_a_note_not_a_violation() -> None:
    report = verify("torn")
    assert report.ok
    runs = by_run(report)
    assert (runs["torn-partial"].head, runs["torn-zeros"].head) == (
        "torn-partial.2",
        "torn-zeros.3",
    )
    for verdict in runs.values():
        assert not verdict.problems
        (note,) = verdict.notes
        assert note.startswith("torn tail: ") and "never committed" in note
    assert "512 byte(s)" in runs["torn-zeros"].notes[0]


def test_tampered_records_are_named() -> None:
    report = verify("tampered")
    assert not report.ok
    runs = by_run(report)
    journal = FIXTURES / "tampered" / "runs" / "{}" / "journal.jsonl"
    edit = str(journal).format("tampered-edit")
    assert_fragments(
        runs["tampered-edit"],
        [
            f"{edit}:2: checksum mismatch",
            "seq not contiguous: no record for tampered-edit.1",
            f"unreachable from the head tampered-edit.4 ({edit}:5): tampered-edit.0 ({edit}:1)",
        ],
    )
    parent = str(journal).format("tampered-parent")
    assert_fragments(
        runs["tampered-parent"],
        [
            f"tampered-parent.3 ({parent}:4): parent is 'tampered-parent.1', "
            "not 'tampered-parent.2'",
            "tampered-parent.1 has 2 children",
            f"unreachable from the head tampered-parent.4 ({parent}:5): tampered-parent.2",
        ],
    )


def test_af_healthy_dir_verifies_ok() -> None:
    report = arun(verify_agent_framework_dir(FIXTURES / "af_healthy"))
    assert report.ok
    assert [(v.workflow_name, v.checkpoints) for v in report.runs] == [
        ("pipeline", 3),
        ("review", 2),
    ]


def test_af_forked_dir_shows_report_004() -> None:
    """3 checkpoints, 2 roots, 1 unreachable from the latest: the report's own numbers."""
    (verdict,) = arun(verify_agent_framework_dir(FIXTURES / "af_forked")).runs
    files = sorted(p.name for p in (FIXTURES / "af_forked").glob("*.json"))
    assert (verdict.workflow_name, verdict.checkpoints, verdict.ok) == ("parallel", 3, False)
    head = "0b642456-4c5b-5463-9d2e-4b8d943c7bdf"
    lost = "bce47e7a-c7b9-52f4-83e2-6219911886f0.json"
    assert verdict.head == head and f"{head}.json" in files and lost in files
    assert_fragments(
        verdict,
        [
            "2 roots (exactly one expected): 9d4acc12-f99c-59db-8d23-75d6f9a81265.json, " + lost,
            f"1 record(s) unreachable from the head {head}.json (the newest): {lost}",
        ],
    )
    assert verdict.notes == ()  # the second root carries the run on: a fork, not two runs


def test_reports_are_json_with_stable_keys() -> None:
    for report in (verify("forked"), arun(verify_agent_framework_dir(FIXTURES / "af_forked"))):
        document = report.to_json()
        assert list(document) == ["schema", "ok", "run_count", "broken_run_count", "runs"]
        assert document["schema"] == "wfctl/verify-lineage@1" and document["ok"] is False
        for run in document["runs"]:
            assert list(run) == [
                "run_id",
                "workflow",
                "ok",
                "checkpoint_count",
                "head_checkpoint_id",
                "problems",
                "notes",
            ]
            assert isinstance(run["problems"], list) and isinstance(run["notes"], list)


def _shape(report: LineageReport, root: Path) -> list[Any]:
    return [
        (
            v.run_id,
            v.ok,
            v.checkpoints,
            v.head,
            [p.replace(str(root), "<root>") for p in v.problems],
        )
        for v in report.runs
    ]


def test_fixture_script_reproduces_the_same_verdicts(tmp_path: Path) -> None:
    """Rerunning tests/fixtures/make_fixtures.py gives stores with the same verdicts."""
    script = importlib.import_module("tests.fixtures.make_fixtures")
    arun(script.make_all(tmp_path))
    for name in ("healthy", "forked", "torn", "tampered"):
        assert _shape(verify(name, tmp_path), tmp_path) == _shape(verify(name), FIXTURES)
    for name in ("af_healthy", "af_forked"):
        fresh = sorted(p.read_bytes() for p in (tmp_path / name).iterdir())
        assert fresh == sorted(p.read_bytes() for p in (FIXTURES / name).glob("*.json"))
