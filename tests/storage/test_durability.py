"""Durability modes: when the file storage syncs a commit (counted at the I/O seam, not timed)."""

from __future__ import annotations

import asyncio
import errno
import os
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.storage.helpers import arun, ckpt
from wfctl import Durability, FileCheckpointStorage
from wfctl._storage._fs import OS_FS, OsFileSystem


class CountingFS(OsFileSystem):
    """The real file system, counting ``fdatasync`` calls (the seam, not a mock of os)."""

    def __init__(self) -> None:
        self.syncs = 0

    def fdatasync(self, fd: int) -> None:
        self.syncs += 1
        super().fdatasync(fd)


def _storage(tmp_path: Path, durability: Durability) -> tuple[FileCheckpointStorage, CountingFS]:
    fs = CountingFS()
    return FileCheckpointStorage(tmp_path, durability=durability, fs=fs), fs


def test_batch_syncs_at_the_window_boundary_and_every_run_level_record(tmp_path: Path) -> None:
    storage, fs = _storage(tmp_path, Durability("batch", batch_steps=4, batch_ms=3_600_000))

    async def scenario() -> list[int]:
        await storage.save(ckpt("r", 0))  # the root: synced at once
        counts = [fs.syncs]
        for seq in range(1, 10):
            await storage.save(ckpt("r", seq, "step"))
            counts.append(fs.syncs)
        await storage.save(ckpt("r", 10, "completed", data={"result": None, "outputs": []}))
        counts.append(fs.syncs)
        return counts

    counts = arun(scenario())
    root = counts[0]
    # steps 1-3 wait, the 4th fills the window; 5-7 wait, the 8th syncs; the 9th waits
    assert [c - root for c in counts[1:10]] == [0, 0, 0, 1, 1, 1, 1, 2, 2]
    # the ending record is synced at once, with the 9th step before it (then its end marker)
    assert counts[10] - counts[9] >= 1
    assert storage.durable and str(storage.durability) == "batch (4 steps or 3.6e+06 ms)"


def test_batch_syncs_an_unsynced_step_within_its_time_window(tmp_path: Path) -> None:
    storage, fs = _storage(tmp_path, Durability("batch", batch_steps=1000, batch_ms=1))

    async def scenario() -> tuple[int, int]:
        await storage.save(ckpt("r", 0))
        await storage.save(ckpt("r", 1, "step"))
        written = fs.syncs
        # No further commit comes: the window's timer alone must sync the step.
        for _ in range(10_000):
            if fs.syncs > written:
                break
            await asyncio.sleep(0.001)
        return written, fs.syncs

    written, later = arun(scenario())
    assert later == written + 1


def test_a_window_timer_syncs_only_its_own_window(tmp_path: Path) -> None:
    # A window's timer fires batch_ms after the window's first step. If the window was synced
    # meanwhile (it filled), the records now unsynced are a later window's, not yet due, and
    # that window has its own timer: syncing them too would add an fdatasync per window.
    storage, fs = _storage(tmp_path, Durability("batch", batch_steps=4, batch_ms=3_600_000))
    timers: list[tuple[Callable[..., object], tuple[object, ...]]] = []

    def keep(delay: float, callback: Callable[..., object], *args: object) -> None:
        timers.append((callback, args))  # kept, to be fired by hand

    async def scenario() -> list[int]:
        asyncio.get_running_loop().call_later = keep  # type: ignore[method-assign,assignment]
        await storage.save(ckpt("r", 0))
        for seq in range(1, 6):  # steps 1-4: the first window (synced by count); 5: the next
            await storage.save(ckpt("r", seq, "step"))
        counts = [fs.syncs]
        for callback, args in timers:  # each window's timer, fired late
            callback(*args)
            counts.append(fs.syncs)
        return counts

    counts = arun(scenario())
    assert len(timers) == 2
    assert counts[1] == counts[0]  # the first window's timer: synced already, nothing to do
    assert counts[2] == counts[0] + 1  # the second window's: step 5 made durable


def test_full_syncs_every_commit_and_none_syncs_nothing(tmp_path: Path) -> None:
    full, full_fs = _storage(tmp_path / "full", Durability("full"))
    none, none_fs = _storage(tmp_path / "none", Durability("none"))

    async def scenario(storage: FileCheckpointStorage) -> None:
        await storage.save(ckpt("r", 0))
        for seq in range(1, 6):
            await storage.save(ckpt("r", seq, "step"))

    arun(scenario(full))
    arun(scenario(none))
    assert full_fs.syncs >= 6  # every record (and the new run directory's entries)
    assert none_fs.syncs == 0


def test_batch_writes_every_record_before_the_save_returns(tmp_path: Path) -> None:
    storage, _ = _storage(tmp_path, Durability("batch", batch_steps=1000, batch_ms=3_600_000))

    async def scenario() -> None:
        await storage.save(ckpt("r", 0))
        for seq in range(1, 4):
            await storage.save(ckpt("r", seq, "step"))
            # What another process (or this one after a crash) reads: the record is there.
            head = await FileCheckpointStorage(tmp_path).get_latest(run_id="r")
            assert head is not None and head.seq == seq

    arun(scenario())


def test_closing_a_batch_storage_syncs_what_it_deferred(tmp_path: Path) -> None:
    storage, fs = _storage(tmp_path, Durability("batch", batch_steps=1000, batch_ms=3_600_000))

    async def scenario() -> None:
        await storage.save(ckpt("r", 0))
        await storage.save(ckpt("r", 1, "step"))

    arun(scenario())
    before = fs.syncs
    storage.close()
    assert fs.syncs == before + 1


def test_a_failed_deferred_sync_fails_the_next_append(tmp_path: Path) -> None:
    class FailingSync(CountingFS):
        fail = False
        attempts = 0

        def fdatasync(self, fd: int) -> None:
            if self.fail:
                self.attempts += 1
                raise OSError(errno.EIO, os.strerror(errno.EIO))
            super().fdatasync(fd)

    fs = FailingSync()
    storage = FileCheckpointStorage(
        tmp_path, durability=Durability("batch", batch_steps=1000, batch_ms=1), fs=fs
    )

    async def scenario() -> None:
        await storage.save(ckpt("r", 0))
        fs.fail = True
        await storage.save(ckpt("r", 1, "step"))  # written; its sync is deferred
        for _ in range(10_000):  # the window's timer syncs it, and that sync fails
            if fs.attempts:
                break
            await asyncio.sleep(0.001)
        fs.fail = False
        # Step 1 may not be durable: nothing more is acknowledged on top of it.
        with pytest.raises(OSError, match="Input/output error"):
            await storage.save(ckpt("r", 2, "step"))

    arun(scenario())


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"durability": "fast"}, "unknown durability 'fast'"),
        ({"durability": "batch", "durable": False}, "durable=False is durability='none'"),
    ],
)
def test_bad_durability_arguments_are_refused(
    tmp_path: Path, kwargs: dict[str, object], message: str
) -> None:
    with pytest.raises(ValueError, match=message):
        FileCheckpointStorage(tmp_path, **kwargs)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("steps", "ms"), [(0, 100.0), (True, 100.0), (16, 0.0), (16, float("nan"))]
)
def test_bad_batch_windows_are_refused(steps: int, ms: float) -> None:
    with pytest.raises(ValueError, match="batch_"):
        Durability("batch", batch_steps=steps, batch_ms=ms)


def test_durable_false_is_none(tmp_path: Path) -> None:
    storage = FileCheckpointStorage(tmp_path, durable=False)
    assert storage.durability == Durability("none") and not storage.durable


def test_lexists_answers_as_os_path_lexists(tmp_path: Path) -> None:
    """The pause probe's existence check (``os.access`` without following a final link, where
    the platform has it) says what ``os.path.lexists`` says, for every kind of path."""
    (tmp_path / "file").write_text("x")
    (tmp_path / "dir").mkdir()
    (tmp_path / "dangling").symlink_to(tmp_path / "nowhere")
    (tmp_path / "link").symlink_to(tmp_path / "file")
    names = ["file", "dir", "dangling", "link", "missing", "file/under", "missing/under"]
    paths = [str(tmp_path / name) for name in names] + [str(tmp_path / "nul\0name")]
    assert [OS_FS.lexists(p) for p in paths] == [os.path.lexists(p) for p in paths]
    assert [OS_FS.lexists(p) for p in paths] == [True, True, True, True, False, False, False, False]
