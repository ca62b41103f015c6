"""A journal cut back to a record boundary is noticed, and a healthy one is never taken for one.

Whole records removed from the end of a journal leave a shorter chain in which every record
verifies. The end marker (``runs/<run>/end.json``: run id, last seq and that record's checksum,
written when a run completes, fails or pauses) is what contradicts it:

- a completed run cut back (its last record; to its pause; to the middle of its gather):
  ``wfctl verify-lineage`` exits 1 naming the cut, ``wfctl runs`` lists the run as ``corrupt``,
  and ``wfctl resume`` (with or without an answer) exits 2 in one line, executing no step and
  writing nothing;
- healthy journals longer than their marker pass: a paused run that went on and crashed, a crash
  between a record's commit and its marker (the marker write fails), a cut made on purpose
  through ``storage.delete(checkpoint_id)``;
- a marker that does not verify, or belongs to another run, is named, never trusted.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.conftest import wfctl_executable
from tests.harness import harness_workload as W
from tests.harness.faulty_fs import Fault, FaultyFS
from tests.harness.hostile_cases import _flip
from tests.storage.helpers import ckpt
from wfctl import CheckpointCorruptError, FileCheckpointStorage
from wfctl._inspect._lineage import verify_lineage

REPO = Path(__file__).resolve().parents[2]
RUN = "cut"


def _completed_run(store: Path) -> list[bytes]:
    """A run of the pipeline that paused, was answered and completed; its journal's lines."""
    storage = FileCheckpointStorage(store)
    wf = W.pipeline.build(checkpoint_storage=storage)
    assert asyncio.run(wf.run(W.spec_for(3), run_id=RUN)).status == "paused"
    assert asyncio.run(wf.run(responses={"approve": "yes"})).status == "completed"
    storage.close()
    return (store / "runs" / RUN / "journal.jsonl").read_bytes().splitlines(keepends=True)


def _kinds(lines: list[bytes]) -> list[str]:
    return [json.loads(line)["kind"] for line in lines]


def _wfctl(store: Path, *args: str, ledger: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [wfctl_executable(), *args, "--store", str(store)],
        capture_output=True,
        text=True,
        cwd=REPO,
        env={**os.environ, "PYTHONPATH": str(REPO), W.LEDGER_ENV: str(ledger)},
        timeout=120,
    )


@pytest.mark.parametrize("cut_to", ["completed-removed", "to-pause", "mid-gather"])
def test_a_cut_back_journal_is_reported_by_verify_runs_and_resume(
    tmp_path: Path, cut_to: str
) -> None:
    store = tmp_path / "store"
    lines = _completed_run(store)
    kinds = _kinds(lines)
    keep = {
        "completed-removed": len(lines) - 1,
        "to-pause": kinds.index("pause") + 1,
        "mid-gather": kinds.index("resume") + 2,
    }[cut_to]
    journal = store / "runs" / RUN / "journal.jsonl"
    journal.write_bytes(b"".join(lines[:keep]))
    before = journal.read_bytes()
    ledger = tmp_path / "ledger.txt"

    verify = _wfctl(store, "verify-lineage", RUN, "--json", ledger=ledger)
    assert verify.returncode == 1, verify.stderr
    (verdict,) = json.loads(verify.stdout)["runs"]
    assert any("cut off" in p and "end marker" in p for p in verdict["problems"]), verdict

    runs = _wfctl(store, "runs", "--json", ledger=ledger)
    assert runs.returncode == 0, runs.stderr
    (summary,) = json.loads(runs.stdout)["runs"]
    assert summary["status"] == "corrupt" and "cut off" in summary["problem"], summary

    answer = ["--response", "approve=yes"] if cut_to == "to-pause" else []
    for args in (["resume", RUN, *answer], ["resume", RUN]):
        done = _wfctl(store, *args, ledger=ledger)
        assert done.returncode == 2, (args, done.stdout, done.stderr)
        err = done.stderr.strip().splitlines()
        assert len(err) == 1 and err[0].startswith("wfctl: error:"), done.stderr
        assert "cut off" in err[0] and str(journal) in err[0], err
    assert not ledger.exists(), ledger.read_text()  # no step ran again
    assert journal.read_bytes() == before


def _save_run(storage: FileCheckpointStorage, run_id: str, kinds: list[str]) -> None:
    for seq, kind in enumerate(kinds):
        data = {"signature": "sig"} if kind == "root" else {"steps": []} if kind == "step" else {}
        asyncio.run(storage.save(ckpt(run_id, seq, kind, data=data)))


def _healthy(storage: FileCheckpointStorage, run_id: str) -> None:
    journal = asyncio.run(storage.read_run(run_id))
    assert journal.problems == (), journal.problems
    assert asyncio.run(storage.get_latest(run_id=run_id)) is not None
    assert asyncio.run(verify_lineage(storage, [run_id])).ok


def test_a_journal_longer_than_its_marker_is_healthy_and_shorter_is_not(tmp_path: Path) -> None:
    storage = FileCheckpointStorage(tmp_path)
    _save_run(storage, "r1", ["root", "step", "pause", "resume", "step"])
    # The marker names seq 2 (the pause); the run went on to seq 4, then stopped (a crash).
    _healthy(storage, "r1")
    storage.close()
    journal = tmp_path / "runs" / "r1" / "journal.jsonl"
    lines = journal.read_bytes().splitlines(keepends=True)
    journal.write_bytes(b"".join(lines[:2]))  # back to seq 1, before the pause
    with pytest.raises(CheckpointCorruptError, match=r"ends at seq 1 .* reached seq 2"):
        asyncio.run(storage.get_latest(run_id="r1"))
    problems = asyncio.run(storage.read_run("r1")).problems
    assert any("cut off" in p.reason for p in problems), problems
    with pytest.raises(CheckpointCorruptError, match="cut off"):  # no append after a cut end
        asyncio.run(storage.save(ckpt("r1", 2, "step")))
    assert journal.read_bytes() == b"".join(lines[:2])


def test_a_crash_between_the_commit_and_its_marker_leaves_a_healthy_run(tmp_path: Path) -> None:
    """The marker's rename fails (as a crash before it would leave it): the commit stands."""
    fs = FaultyFS(0, [Fault("replace", "eio", 0)])
    storage = FileCheckpointStorage(tmp_path, fs=fs)
    _save_run(storage, "r1", ["root", "step", "completed"])  # no error: the record committed
    assert fs.injected and not (tmp_path / "runs" / "r1" / "end.json").exists()
    assert [p.name for p in (tmp_path / "runs" / "r1").iterdir()] == ["journal.jsonl"]
    _healthy(FileCheckpointStorage(tmp_path), "r1")
    storage.close()


def test_a_cut_made_on_purpose_is_not_reported(tmp_path: Path) -> None:
    storage = FileCheckpointStorage(tmp_path)
    _save_run(storage, "r1", ["root", "step", "pause", "resume", "step", "completed"])
    assert asyncio.run(storage.delete("r1.4"))  # cuts seq 4 and 5; the marker named seq 5
    _healthy(storage, "r1")
    assert asyncio.run(storage.delete("r1.3"))  # the pause marker is gone with it: still fine
    _healthy(storage, "r1")
    storage.close()


@pytest.mark.parametrize("damage", ["bitflip", "other-run", "symlink"])
def test_a_marker_that_cannot_be_trusted_is_named(tmp_path: Path, damage: str) -> None:
    storage = FileCheckpointStorage(tmp_path)
    for run_id in ("r1", "r2"):
        _save_run(storage, run_id, ["root", "step", "completed"])
    storage.close()
    marker = tmp_path / "runs" / "r1" / "end.json"
    if damage == "bitflip":
        marker.write_bytes(_flip(marker.read_bytes()))
    elif damage == "other-run":
        shutil.copyfile(tmp_path / "runs" / "r2" / "end.json", marker)
    else:
        elsewhere = tmp_path / "elsewhere.json"
        shutil.copyfile(marker, elsewhere)
        marker.unlink()
        marker.symlink_to(elsewhere)
    fresh = FileCheckpointStorage(tmp_path)
    problems = asyncio.run(fresh.read_run("r1")).problems
    assert any(p.where == str(marker) for p in problems), problems
    (summary,) = [s for s in asyncio.run(fresh.list_runs()) if s.run_id == "r1"]
    assert summary.status == "corrupt" and str(marker) in (summary.problem or "")
    assert not asyncio.run(verify_lineage(fresh, ["r1"])).ok
    _healthy(fresh, "r2")
