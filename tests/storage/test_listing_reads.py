"""What listing a file store reads: the system calls per run, and a run ending while it is read.

``wfctl runs`` and ``gc`` verify every record of every run, so a listing's cost is its reads.
These tests count the calls a listing makes through the storage's I/O seam (``fs=``): per run
that has ended, one open, ``fstat`` and ``pread`` of its journal and of its end marker, and no
``lstat``, ``stat`` or second ``pread`` (``runs`` is checked once, its listing says which
entries are directories). They import internals on purpose: ``run_summaries`` is the body of
``list_runs``.
"""

from __future__ import annotations

import os
from collections import Counter
from pathlib import Path

import pytest

from tests.storage.helpers import arun, ckpt
from wfctl import FileCheckpointStorage, InMemoryCheckpointStorage
from wfctl._inspect._gc import collect_garbage
from wfctl._storage import RunSummary
from wfctl._storage._fs import OsFileSystem


class CountingFS(OsFileSystem):
    """The real file system, counting each kind of call made on a run's files."""

    def __init__(self) -> None:
        self.calls: Counter[str] = Counter()
        self.on_journal_close: list[object] = []
        self._journals: set[int] = set()

    def open(self, path: str, flags: int, mode: int = 0o777) -> int:
        fd = super().open(path, flags, mode)
        self.calls["open"] += 1
        if path.endswith("journal.jsonl"):
            self._journals.add(fd)
        return fd

    def close(self, fd: int) -> None:
        self.calls["close"] += 1
        super().close(fd)
        if fd in self._journals:
            self._journals.discard(fd)
            while self.on_journal_close:
                action = self.on_journal_close.pop()
                assert callable(action)
                action()

    def fstat(self, fd: int) -> os.stat_result:
        self.calls["fstat"] += 1
        return super().fstat(fd)

    def pread(self, fd: int, length: int, offset: int) -> bytes:
        self.calls["pread"] += 1
        return super().pread(fd, length, offset)

    def stat(self, path: str) -> os.stat_result:
        self.calls["stat"] += 1
        return super().stat(path)

    def lstat(self, path: str) -> os.stat_result:
        self.calls["lstat"] += 1
        return super().lstat(path)


def _completed_run(storage: FileCheckpointStorage, run_id: str, steps: int) -> None:
    async def write() -> None:
        await storage.save(ckpt(run_id, 0))
        for seq in range(1, steps + 1):
            await storage.save(ckpt(run_id, seq, "step"))
        await storage.save(
            ckpt(run_id, steps + 1, "completed", data={"result": None, "outputs": []})
        )

    arun(write())
    storage.close()


def _listing(storage: FileCheckpointStorage, how: str) -> list[RunSummary]:
    if how == "list_runs":  # what gc, rm and copy call
        return arun(storage.list_runs())
    return storage.run_summaries()  # what ``wfctl runs`` calls


@pytest.mark.parametrize("how", ["run_summaries", "list_runs"])
def test_a_listing_reads_each_ended_run_with_one_open_fstat_and_pread_per_file(
    tmp_path: Path, how: str
) -> None:
    writer = FileCheckpointStorage(tmp_path, durable=False)
    for index in range(5):
        _completed_run(writer, f"run-{index}", steps=10)
    fs = CountingFS()
    reader = FileCheckpointStorage(tmp_path, durable=False, fs=fs)
    _listing(reader, how)  # the first listing also looks at the root's permissions, once
    fs.calls.clear()
    summaries = _listing(reader, how)
    assert [s.status for s in summaries] == ["completed"] * 5
    # Per run: its journal and its end marker, each opened, described, read once, closed;
    # for the listing: one look at ``runs``.
    per_run = {"open": 2, "fstat": 2, "pread": 2, "close": 2}
    assert fs.calls == Counter({"lstat": 1, **{k: v * 5 for k, v in per_run.items()}})


def test_a_run_ending_while_it_is_listed_is_not_taken_for_a_cut_back_journal(
    tmp_path: Path,
) -> None:
    # The run's last record and its end marker are written after the listing has read its
    # journal and before it reads the marker: a marker read after the journal would name a
    # record the read did not see, and the healthy run would be listed as corrupt.
    writer = FileCheckpointStorage(tmp_path, durable=False)
    _completed_run(writer, "ending", steps=3)
    run_dir = tmp_path / "runs" / "ending"
    journal, marker = run_dir / "journal.jsonl", run_dir / "end.json"
    lines = journal.read_bytes().splitlines(keepends=True)
    marker_bytes = marker.read_bytes()
    journal.write_bytes(b"".join(lines[:-1]))  # the run before its last commit
    marker.unlink()

    def end_the_run() -> None:
        with journal.open("ab") as handle:  # as the storage commits: the record, then the marker
            handle.write(lines[-1])
        marker.write_bytes(marker_bytes)

    fs = CountingFS()
    fs.on_journal_close.append(end_the_run)
    [summary] = FileCheckpointStorage(tmp_path, durable=False, fs=fs).run_summaries()
    assert summary.status == "interrupted", summary.problem  # what was read: no ending yet
    assert summary.problem is None
    assert summary.head_seq == 3
    [again] = FileCheckpointStorage(tmp_path, durable=False).run_summaries()
    assert (again.status, again.head_seq) == ("completed", 4)


def test_a_listing_finds_any_byte_of_any_record_changed(tmp_path: Path) -> None:
    """Every record is verified whole: no byte of a journal can change unnoticed."""
    writer = FileCheckpointStorage(tmp_path, durable=False)
    _completed_run(writer, "edited", steps=1)
    journal = tmp_path / "runs" / "edited" / "journal.jsonl"
    original = journal.read_bytes()
    starts = [0] + [i + 1 for i, byte in enumerate(original[:-1]) if byte == ord("\n")]
    for position in range(len(original) - 1):  # the last newline: a torn tail, not a record
        changed = bytearray(original)
        changed[position] = ord("x") if original[position] != ord("x") else ord("y")
        journal.write_bytes(bytes(changed))
        [summary] = FileCheckpointStorage(tmp_path, durable=False).run_summaries()
        line = sum(start <= position for start in starts)
        assert summary.status == "corrupt", (position, summary)
        assert summary.problem is not None
        # the record changed is named, or the one before a newline turned into text
        assert f"journal.jsonl:{line}" in summary.problem or (
            original[position] == ord("\n") or "last record" in summary.problem
        ), (position, summary.problem)


@pytest.mark.parametrize("size", [0, 1, 700, 5_000, 1_048_576, 2_500_000])
def test_a_journal_is_read_up_to_the_size_it_had_when_opened(tmp_path: Path, size: int) -> None:
    """Its committed lines up to ``size``; what was appended since is not read."""
    from wfctl._storage._fs import OS_FS
    from wfctl._storage._journal import journal_lines

    pattern = b"".join(b"%d:" % n + b"r" * (n * 37 % 5_000) + b"\n" for n in range(2_000))
    data = (pattern * (size // len(pattern) + 1))[:size]
    path = tmp_path / "journal.jsonl"
    path.write_bytes(data + b"appended\nsince\n")
    fd = os.open(path, os.O_RDONLY)
    try:
        lines = list(journal_lines(OS_FS, fd, size))
    finally:
        os.close(fd)
    committed = data.rfind(b"\n")
    assert lines == (data[:committed].split(b"\n") if committed >= 0 else [])


async def _hand_over(storage: FileCheckpointStorage | InMemoryCheckpointStorage) -> None:
    """Save a run whose head is the pause a stopping worker writes to hand it over."""
    await storage.save(ckpt("handed", 0))
    await storage.save(ckpt("handed", 1, "step"))
    await storage.save(ckpt("handed", 2, "pause", data={"requests": [], "reason": "handoff"}))


def test_a_handed_over_run_a_worker_holds_is_running_in_every_file_listing(
    tmp_path: Path,
) -> None:
    # A worker has claimed the run (holds its lock) and not yet appended its resume record:
    # ``runs``, ``gc``, ``rm`` and single-run commands all say ``running``, and gc keeps it.
    writer = FileCheckpointStorage(tmp_path, durable=False)
    arun(_hand_over(writer))
    writer.close()
    reader = FileCheckpointStorage(tmp_path, durable=False)
    worker = FileCheckpointStorage(tmp_path, durable=False).lock_run("handed")
    try:
        assert [s.status for s in reader.run_summaries()] == ["running"]
        assert [s.status for s in arun(reader.list_runs())] == ["running"]
        assert arun(reader.run_summary("handed")).status == "running"
        report = collect_garbage(tmp_path, keep=0)
        assert (report.removed, [(i.run_id, i.reason) for i in report.kept]) == (
            (),
            [("handed", "running")],
        )
    finally:
        worker.release()
    assert [s.status for s in arun(reader.list_runs())] == ["interrupted"]
    assert arun(reader.run_summary("handed")).status == "interrupted"


def test_a_handed_over_run_held_in_memory_lists_as_running() -> None:
    storage = InMemoryCheckpointStorage()

    async def check() -> list[str]:
        await _hand_over(storage)
        lease = await storage.lease_run("handed")
        try:
            statuses = [s.status for s in await storage.list_runs()]
            statuses.append((await storage.run_summary("handed")).status)
        finally:
            await lease.release()
        statuses.extend(s.status for s in await storage.list_runs())
        return statuses

    assert arun(check()) == ["running", "running", "interrupted"]
