"""A run the file store reads as one verified chain is judged as it is read, one record at a time
(``verified_records``), and gets the verdict the whole read gives it."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import arun, traced_peak
from tests.inspect.helpers import FIXTURES, chain, rec
from wfctl import FileCheckpointStorage
from wfctl._inspect._lineage import LineageReport, verify_lineage
from wfctl._records._checkpoint import Checkpoint
from wfctl._storage._journal import encode_record
from wfctl._storage._protocol import RunJournal


class WholeReads:
    """A file store that reads every run whole (no ``verified_records``): the old path."""

    def __init__(self, inner: FileCheckpointStorage) -> None:
        self.inner = inner

    async def read_run(self, run_id: str) -> RunJournal:
        journal: RunJournal = await self.inner.read_run(run_id)
        return journal

    def __getattr__(self, name: str) -> Any:
        if name == "verified_records":
            raise AttributeError(name)
        return getattr(self.inner, name)


def write_run(root: Path, records: Sequence[Checkpoint]) -> None:
    run_dir = root / "runs" / records[0].run_id
    run_dir.mkdir(parents=True)
    (run_dir / "journal.jsonl").write_bytes(b"".join(encode_record(c) for c in records))


def crafted(root: Path) -> Path:
    """Runs whose records all verify as one chain, with every finding the rules make on one."""
    sig = {"signature": "s2"}
    origin = ("base", "base.1")
    write_run(root, chain("base", ["root", "step", "completed"]))
    write_run(root, chain("other-wf", ["root", "step"], workflow="elsewhere"))
    write_run(root, [*chain("names", ["root", "step"]), rec("names", 2, workflow="odd")])
    write_run(root, chain("after-end", ["root", "step", "completed", "step", "pause", "step"]))
    write_run(root, [*chain("sig-step", ["root"]), rec("sig-step", 1, data=sig)])
    resumed = chain("sig-resume", ["root", "step", "pause"])
    write_run(root, [*resumed, rec("sig-resume", 3, "resume", data=sig)])
    write_run(root, [rec("no-sig", 0, data={"workflow": "m:wf"}), rec("no-sig", 1)])
    restored = [
        rec("restored", 0, data={"signature": "s1", "restored_from": "base.1"}, origin=origin),
        rec("restored", 1, origin=origin),
        rec("restored", 2, origin=("base", "base.0")),
        rec("restored", 3),
    ]
    write_run(root, restored)
    bad_from = {"signature": "s1", "restored_from": "base.2"}
    write_run(root, [rec("from-wrong", 0, data=bad_from, origin=origin)])
    for run_id, target in {
        "gone-origin": ("gone", "gone.3"),
        "short-origin": ("base", "base.9"),
        "wf-origin": ("other-wf", "other-wf.1"),
        "self-origin": ("self-origin", "self-origin.0"),
        "odd-origin": ("base", "nonsense"),
    }.items():
        write_run(root, chain(run_id, ["root", "step"], origin=target))
    return root


STORES = ["healthy", "forked", "tampered", "torn", "version_1", "before_args"]


def verdicts(storage: Any, run_ids: Sequence[str] = ()) -> LineageReport:
    report: LineageReport = arun(verify_lineage(storage, run_ids))
    return report


@pytest.mark.parametrize("name", [*STORES, "crafted"])
def test_every_run_gets_the_whole_reads_verdict(name: str, tmp_path: Path) -> None:
    root = crafted(tmp_path) if name == "crafted" else FIXTURES / name
    storage = FileCheckpointStorage(root)
    report = verdicts(storage)
    assert report.runs
    assert report == verdicts(WholeReads(storage))
    for verdict in report.runs:  # each alone: an origin is then read for its names only
        alone = verdicts(storage, [verdict.run_id])
        assert alone == verdicts(WholeReads(storage), [verdict.run_id])
        assert alone.runs == (verdict,)


def test_crafted_runs_are_judged_as_read(tmp_path: Path) -> None:
    """The crafted runs are chains: none is read whole (the missing origin run is tried)."""
    storage = FileCheckpointStorage(crafted(tmp_path))
    whole: list[str] = []
    original = storage.read_run

    async def read_run(run_id: str) -> RunJournal:
        whole.append(run_id)
        return await original(run_id)

    storage.read_run = read_run  # type: ignore[method-assign]
    report = verdicts(storage)
    assert whole == ["gone"]
    problems = {v.run_id: v.problems for v in report.runs}
    assert [run for run, found in problems.items() if not found] == [
        "base",
        "other-wf",
        "sig-resume",
    ]
    assert problems["after-end"][0].startswith("after-end.3 (")
    assert "origin base.0 differs from the root's base.1" in problems["restored"][0]
    assert problems["gone-origin"] == ("origin gone.3 not found (run 'gone' is gone)",)
    notes = {v.run_id: v.notes for v in report.runs}
    assert notes["sig-resume"] == (
        "code signature changed at sig-resume.3: s1 -> s2 (resumed with changed code allowed)",
    )


def test_a_long_runs_verdict_holds_one_record_at_a_time(tmp_path: Path) -> None:
    # Measured: about 1.2 KB per record when the run was read whole (the journal's bytes and
    # every record decoded); none now (a peak of 4.5 MB from 10,000 records on: a 1 MiB read
    # chunk of the journal, its copy and its lines). Bound:
    # 100 B per record.
    peaks = []
    for steps in (10_000, 30_000):
        root = tmp_path / str(steps)
        kinds = ["root"] + ["step"] * (steps - 2) + ["completed"]
        data = {"steps": [], "result": "x" * 100}
        write_run(
            root,
            [rec("long", i, k, data=data if k == "step" else None) for i, k in enumerate(kinds)],
        )
        storage = FileCheckpointStorage(root)
        report = None

        def verify(storage: FileCheckpointStorage = storage) -> None:
            nonlocal report
            report = verdicts(storage, ["long"])

        peaks.append(traced_peak(verify))
        assert report is not None and report.ok and report.runs[0].checkpoints == steps
    assert (peaks[1] - peaks[0]) / 20_000 < 100, peaks
