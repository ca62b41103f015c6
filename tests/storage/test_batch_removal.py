"""Removing many runs at once: two syncs of the store's directory in all, not two per run.

Crash safety of the batch (killed at every I/O call) is in tests/harness/test_gc_kills.py.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import threading
from collections import Counter
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from wfctl import FileCheckpointStorage, step, workflow
from wfctl._errors import InvalidIdError, RunLockedError
from wfctl._inspect._gc import collect_garbage
from wfctl._storage import _removal
from wfctl._storage._fs import OsFileSystem

RUNS = [f"done-{i}" for i in range(6)]


@step
async def add_one(n: int) -> int:
    return n + 1


@workflow
async def counted(n: int) -> int:
    return await add_one(n)


@pytest.fixture
def store(tmp_path: Path) -> Path:
    """A store of six completed runs."""
    path = tmp_path / "store"

    async def fill() -> None:
        bound = counted.build(checkpoint_storage=FileCheckpointStorage(path))
        for i, run_id in enumerate(RUNS):
            assert (await bound.run(i, run_id=run_id)).status == "completed"

    asyncio.run(fill())
    return path


@pytest.fixture
def synced(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Every directory the real file system syncs, in order (the seam's own method, wrapped)."""
    calls: list[str] = []
    real = OsFileSystem.fsync_dir

    def fsync_dir(self: OsFileSystem, path: str) -> None:
        calls.append(path)
        real(self, path)

    monkeypatch.setattr(OsFileSystem, "fsync_dir", fsync_dir)
    return calls


def test_gc_syncs_the_runs_directory_twice_whatever_it_removes(
    store: Path, synced: list[str]
) -> None:
    later = datetime.now(UTC) + timedelta(days=30)
    report = collect_garbage(store, older_than="1d", now=later)
    assert sorted(item.run_id for item in report.removed) == RUNS
    assert synced == [str(store / "runs")] * 2
    assert sorted(p.name for p in (store / "runs").iterdir()) == []


def test_gc_reports_only_the_runs_it_removed(store: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Two gcs at once (cron jobs that overlap) each report what they removed, not both all."""
    real = FileCheckpointStorage.delete_runs

    async def another_gc_first(
        self: FileCheckpointStorage, run_ids: list[str]
    ) -> tuple[list[str], list[RunLockedError]]:
        # Another process removes two of the runs between this gc's listing and its removal.
        await real(FileCheckpointStorage(store), ["done-1", "done-4"])
        return await real(self, run_ids)

    monkeypatch.setattr(FileCheckpointStorage, "delete_runs", another_gc_first)
    report = collect_garbage(store, keep=0)

    assert sorted(item.run_id for item in report.removed) == [
        "done-0",
        "done-2",
        "done-3",
        "done-5",
    ]
    assert report.kept == ()
    assert (report.matching_count, report.total_count) == (6, 6)  # as listed
    assert sorted(p.name for p in (store / "runs").iterdir()) == []


def test_delete_runs_reports_removed_and_missing_runs(store: Path, synced: list[str]) -> None:
    storage = FileCheckpointStorage(store)
    removed, locked = asyncio.run(storage.delete_runs([RUNS[0], "never-was", RUNS[1]]))
    assert (removed, locked) == ([RUNS[0], RUNS[1]], [])
    assert len(synced) == 2
    assert sorted(s.run_id for s in asyncio.run(storage.list_runs())) == RUNS[2:]


def test_delete_runs_keeps_a_locked_run_and_removes_the_rest(store: Path) -> None:
    storage = FileCheckpointStorage(store)
    holder = FileCheckpointStorage(store).lock_run(RUNS[2])
    try:
        removed, locked = asyncio.run(storage.delete_runs(RUNS[1:4]))
    finally:
        holder.release()
    assert removed == [RUNS[1], RUNS[3]]
    assert [error.run_id for error in locked] == [RUNS[2]]
    assert sorted(s.run_id for s in asyncio.run(storage.list_runs())) == [
        RUNS[0],
        *RUNS[2:3],
        *RUNS[4:],
    ]


def test_delete_runs_refuses_a_bad_id_before_removing_anything(store: Path) -> None:
    storage = FileCheckpointStorage(store)
    with pytest.raises(InvalidIdError):
        asyncio.run(storage.delete_runs([RUNS[0], "../escape"]))
    assert len(asyncio.run(storage.list_runs())) == len(RUNS)


class MeetingRmtree(OsFileSystem):
    """The real file system, whose ``rmtree`` calls wait for each other in pairs.

    A removal that deleted one tree after the other would never get two calls to meet: the
    barrier breaks at its timeout (a failure guard, not an ordering) and the removal fails.
    """

    def __init__(self) -> None:
        self.meet = threading.Barrier(2, timeout=30)
        self.threads: set[int] = set()

    def rmtree(self, path: str) -> None:
        self.threads.add(threading.get_ident())
        self.meet.wait()
        super().rmtree(path)


def test_many_removed_runs_are_deleted_several_at_once(
    store: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Six runs: lower the threshold so that they count as many (a store of 16 is slow to fill).
    monkeypatch.setattr(_removal, "_DELETE_IN_PARALLEL_FROM", 2)
    fs = MeetingRmtree()
    storage = FileCheckpointStorage(store, fs=fs)
    assert asyncio.run(storage.delete_runs(RUNS)) == (RUNS, [])
    assert len(fs.threads) >= 2
    assert sorted(p.name for p in (store / "runs").iterdir()) == []


@pytest.mark.parametrize("threads", [False, True], ids=["one-after-the-other", "in-threads"])
def test_a_tree_another_removal_deleted_first_is_not_a_failure(
    store: Path, monkeypatch: pytest.MonkeyPatch, threads: bool
) -> None:
    # A second removal, starting while this one renames, deletes every removal directory it
    # finds (this one's too) before this one gets to them: the runs are gone all the same.
    if threads:
        monkeypatch.setattr(_removal, "_DELETE_IN_PARALLEL_FROM", 2)

    class Overtaken(OsFileSystem):
        def rmtree(self, path: str) -> None:
            shutil.rmtree(path)  # as the other removal's ``_finish_removals`` does
            super().rmtree(path)

    storage = FileCheckpointStorage(store, fs=Overtaken())
    assert asyncio.run(storage.delete_runs(RUNS)) == (RUNS, [])
    assert list((store / "runs").iterdir()) == []


def test_a_failed_deletion_fails_the_removal_and_the_next_one_finishes_it(
    store: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(_removal, "_DELETE_IN_PARALLEL_FROM", 2)

    class FailsOnce(OsFileSystem):
        failed = False

        def rmtree(self, path: str) -> None:
            if not FailsOnce.failed:
                FailsOnce.failed = True
                raise PermissionError(13, "Permission denied", path)
            super().rmtree(path)

    with pytest.raises(PermissionError):
        asyncio.run(FileCheckpointStorage(store, fs=FailsOnce()).delete_runs(RUNS))
    # Every run is out of the store; one removal directory is left, which no listing reads.
    left = [p.name for p in (store / "runs").iterdir()]
    assert len(left) == 1 and left[0].startswith(".removing-"), left
    storage = FileCheckpointStorage(store)
    assert asyncio.run(storage.list_runs()) == []
    assert asyncio.run(storage.delete_runs(["never-was"])) == ([], [])
    assert list((store / "runs").iterdir()) == []


def test_a_removal_names_no_holder_and_leaves_no_stale_one_to_read(store: Path) -> None:
    # A holder killed earlier left its record; the removal's lock (held for one rename) must
    # neither write a record of its own nor let the stale one name the holder.
    owner = store / "runs" / RUNS[0] / "owner.json"
    owner.write_text(json.dumps({"pid": 4_000_000, "host": "elsewhere", "since": "then"}))
    seen: list[str] = []

    class Renames(OsFileSystem):
        def replace(self, src: str, dst: str) -> None:
            seen.append(str(owner.exists()))
            with pytest.raises(RunLockedError) as refused:
                FileCheckpointStorage(store).lock_run(RUNS[0])
            seen.append(refused.value.holder)
            super().replace(src, dst)

    storage = FileCheckpointStorage(store, fs=Renames())
    assert asyncio.run(storage.delete_runs([RUNS[0]])) == ([RUNS[0]], [])
    assert seen == ["False", "another process"]


#: The :mod:`os` functions a removal's counts cover (looked up at call time by every caller).
_COUNTED = ("open", "close", "fstat", "lstat", "stat", "mkdir", "unlink", "replace", "rename")
_COUNTED += ("rmdir", "listdir", "scandir", "fsync")


def _os_calls(monkeypatch: pytest.MonkeyPatch) -> Counter[str]:
    """Count every call of the :mod:`os` functions in ``_COUNTED`` from now on."""
    calls: Counter[str] = Counter()
    for name in _COUNTED:
        real = getattr(os, name)

        def counted(*args: object, __real: Any = real, __name: str = name, **kwargs: Any) -> Any:
            calls[__name] += 1
            return __real(*args, **kwargs)

        monkeypatch.setattr(os, name, counted)
    return calls


def test_a_removed_run_costs_a_fixed_handful_of_calls(
    store: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # After a first removal (what is done once per storage), 2 runs, then 3: the calls the
    # third adds are one run's.
    storage = FileCheckpointStorage(store)
    assert asyncio.run(storage.delete_runs(RUNS[:1])) == (RUNS[:1], [])
    calls = _os_calls(monkeypatch)
    assert asyncio.run(storage.delete_runs(RUNS[1:3])) == (RUNS[1:3], [])
    two = Counter(calls)
    calls.clear()
    assert asyncio.run(storage.delete_runs(RUNS[3:])) == (RUNS[3:], [])
    assert not two - calls  # no call the larger batch makes fewer of
    per_run = dict(calls - two)
    # The run's directory looked at once; its journal opened, described and locked (checked
    # to be the file the path names); a stale holder's record removed; the rename; then the
    # directory opened, listed, its two files unlinked in it, and the directory removed.
    # Nothing created or checked again, no holder's record removed after the rename, and no
    # queue marker unlinked that the queue's one listing does not hold.
    assert per_run == {
        "lstat": 2,
        "open": 2,
        "fstat": 1,
        "close": 2,
        "unlink": 3,
        "replace": 1,
        "listdir": 1,
        "rmdir": 1,
    }
    assert list((store / "runs").iterdir()) == []


def test_a_run_whose_directory_goes_before_it_is_locked_is_not_made_again(store: Path) -> None:
    # Another removal takes the run between this one seeing its directory and locking it:
    # it is not removed by this one, and its directory is not made again to be locked.
    elsewhere = store / "elsewhere"

    class TakenAway(OsFileSystem):
        def lstat(self, path: str) -> os.stat_result:
            found = super().lstat(path)
            if path.endswith(RUNS[0]):
                super().replace(path, str(elsewhere))
            return found

    storage = FileCheckpointStorage(store, fs=TakenAway())
    assert asyncio.run(storage.delete_runs(RUNS[:2])) == ([RUNS[1]], [])
    assert sorted(p.name for p in (store / "runs").iterdir()) == RUNS[2:]
    assert (elsewhere / "journal.jsonl").is_file()
