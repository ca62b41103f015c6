"""A run copied into a file store: written where no listing looks, verified, renamed into place.

Layout under the store's ``runs``::

    .copying-<run_id>/runs/<run_id>/journal.jsonl   the copy being written (a store of its own)
    .copying-<run_id>/runs/<run_id>/end.json        its end marker

The copy holds the staged journal's OS lock (a run's lock, see ._lock) from start to end: two
copies of one run exclude each other, and a copy killed part way leaves a directory whose lock
is free, which the next copy of that run starts again and the next removal (``gc``, ``rm``)
deletes. No run id starts with a dot, so no listing, claim, resume or replay reads it.

The source's records are written as they are stored (each journal line byte for byte), synced
once, given the end marker saving them would have left, and read back verified (every checksum
and link, the end marker). Only then is the staged run directory renamed into ``runs`` as the
run's: one rename, so the run appears whole or not at all. A run the destination held already
(an earlier copy of a shorter chain, under the lock the copy held all along) is renamed out of
the store first, as a removal does; a crash between the two renames leaves the run absent, never
half there.
"""

from __future__ import annotations

import contextlib
import errno
import os
import secrets
import stat
from collections.abc import AsyncGenerator
from typing import TYPE_CHECKING, Final, Protocol

from wfctl._errors import CheckpointCorruptError, RunNotFoundError
from wfctl._records._checkpoint import ENDING_STATUS, Checkpoint

from ._appender import WRITE_FLAGS
from ._fs import write_all, write_private_bytes
from ._layout import COPYING, REMOVING, StoreLayout
from ._lock import LOCK_GRACE, FileRunLock, try_flock
from ._marker import encode_end

if TYPE_CHECKING:
    from collections.abc import Iterator
    from pathlib import Path

    from ._fs import FileSystem
    from ._queue import RunQueue

__all__ = ["StagedCopy", "StagingStore", "remove_abandoned_copies", "staging_root"]

#: Bytes gathered before a write to the staged journal.
_WRITE_CHUNK: Final = 1 << 20


class StagingStore(Protocol):
    """A file store, as a staged copy reaches the store it copies into and its staging store
    (:class:`~wfctl._storage._file.FileCheckpointStorage` is one)."""

    _fs: FileSystem
    _layout: StoreLayout
    _queue: RunQueue

    @property
    def root(self) -> Path:
        """The store's directory."""
        ...

    def lock_run(self, run_id: str) -> FileRunLock:
        """Take the run's lock."""
        ...

    def _lock(self, run_id: str, grace: float, *, named: bool = True) -> FileRunLock:
        """Take the lock of a run whose directory was made and checked."""
        ...

    def _head_claimable(self, run_id: str) -> bool | None:
        """Whether the run's head may be claimed by a worker."""
        ...

    def stored_chain(self, run_id: str) -> Iterator[tuple[bytes, Checkpoint]]:
        """Verify a run whole, then return its records with their journal lines."""
        ...


def staging_root(layout: StoreLayout, run_id: str) -> str:
    """Where a copy of ``run_id`` into the store is written (a store of its own)."""
    return f"{layout.runs}{os.sep}{COPYING}{run_id}"


class StagedCopy:
    """One run being copied into a file store (see the module's docstring)."""

    atomic = True

    def __init__(
        self,
        storage: StagingStore,
        stage: StagingStore,
        run_id: str,
        lock: FileRunLock,
        held: FileRunLock | None,
        fd: int,
    ) -> None:
        self._storage, self._stage, self._run_id = storage, stage, run_id
        self._lock, self._held, self._fd = lock, held, fd
        self._buffer = bytearray()
        self._end: tuple[Checkpoint, bytes] | None = None
        self._published = False

    @classmethod
    def open(cls, storage: StagingStore, stage: StagingStore, run_id: str) -> StagedCopy:
        """Take the staged journal's lock (emptying what a killed copy left there), and the
        destination's run's lock if it has a run directory.

        Raises:
            RunLockedError: another copy of the run, or a driver of it, holds it.
            CheckpointCorruptError: a file or a link is where the run, or its copy, goes.
            StoreLocationError: the store's ``runs`` cannot be one.
        """
        layout, fs = storage._layout, storage._fs
        layout.make_runs_dir(durable=True)
        layout.check_run_dir(run_id)
        root = str(stage.root)
        with contextlib.suppress(FileExistsError):
            fs.mkdir(root, 0o700)
        if not stat.S_ISDIR(fs.lstat(root).st_mode):
            raise CheckpointCorruptError(root, "a copy's directory is a link or a file")
        lock = stage.lock_run(run_id)
        held: FileRunLock | None = None
        fd = -1
        try:
            if fs.lexists(layout.run_dir(run_id)):
                held = storage._lock(run_id, LOCK_GRACE)
            stage_layout = stage._layout
            fd = fs.open(stage_layout.journal(run_id), WRITE_FLAGS)
            st = fs.fstat(fd)
            if lock.identity is not None and (st.st_dev, st.st_ino) != lock.identity:
                raise CheckpointCorruptError(root, "a copy's journal was replaced as it was opened")
            fs.ftruncate(fd, 0)  # a copy killed part way left it: start again
            with contextlib.suppress(FileNotFoundError):
                fs.unlink(stage_layout.end(run_id))
        except BaseException:
            if fd >= 0:
                fs.close(fd)
            if held is not None:
                held.release()
            with contextlib.suppress(OSError):  # ours while its lock is held: nothing to keep
                fs.rmtree(root)
            lock.release()
            raise
        return cls(storage, stage, run_id, lock, held, fd)

    async def held(self) -> AsyncGenerator[bytes, None]:
        if self._held is None:
            return
        try:
            for line, _ in self._storage.stored_chain(self._run_id):
                yield line
        except RunNotFoundError:
            return  # a directory without records (a lease never written to): no run

    async def keep(self, line: bytes, checkpoint: Checkpoint) -> None:
        self._write(line, checkpoint)  # the whole run is staged, the records kept included

    async def add(self, line: bytes, checkpoint: Checkpoint) -> None:
        self._write(line, checkpoint)

    def _write(self, line: bytes, checkpoint: Checkpoint) -> None:
        self._buffer += line
        self._buffer += b"\n"
        if checkpoint.kind in ENDING_STATUS:  # the end marker a save of it would leave
            self._end = (checkpoint, line)
        if len(self._buffer) >= _WRITE_CHUNK:
            self._flush()

    def _flush(self) -> None:
        if self._buffer:
            journal = self._stage._layout.journal(self._run_id)
            write_all(self._storage._fs, self._fd, bytes(self._buffer), journal)
            self._buffer.clear()

    async def staged(self) -> AsyncGenerator[bytes, None]:
        fs, layout = self._storage._fs, self._stage._layout
        self._flush()
        fs.fdatasync(self._fd)
        if self._end is not None:
            checkpoint, line = self._end
            marker = encode_end(checkpoint, line + b"\n")
            write_private_bytes(fs, layout.end(self._run_id), marker, durable=True)
        for line, _ in self._stage.stored_chain(self._run_id):
            yield line

    async def publish(self) -> None:
        """Rename the staged run into the store (the destination's earlier run out first).

        Raises:
            CheckpointCorruptError: a run with this id was made in the destination meanwhile
                (not by a copy: it held the run's lock), which the copy does not replace.
        """
        storage, run_id = self._storage, self._run_id
        layout, fs = storage._layout, storage._fs
        staged = self._stage._layout.run_dir(run_id)
        fs.fsync_dir(staged)
        with contextlib.suppress(FileNotFoundError):  # the copy's holder record stays here
            fs.unlink(self._stage._layout.owner(run_id))
        run_dir = layout.run_dir(run_id)
        away = None
        if self._held is not None:
            away = f"{layout.runs}{os.sep}{REMOVING}{run_id}.{secrets.token_hex(4)}"
            fs.replace(run_dir, away)
            self._held.release()
            self._held = None
        try:
            fs.replace(staged, run_dir)
        except OSError as exc:
            if exc.errno not in (errno.ENOTEMPTY, errno.EEXIST, errno.ENOTDIR):
                raise
            raise CheckpointCorruptError(
                run_dir, "a run with this id was made in the destination while it was copied"
            ) from None
        self._published = True
        fs.fsync_dir(layout.runs)
        if away is not None:
            with contextlib.suppress(OSError):  # a removal directory: the next removal's
                fs.rmtree(away)
        with contextlib.suppress(OSError):  # the copy's own directory, empty now
            fs.rmtree(str(self._stage.root))
        with contextlib.suppress(CheckpointCorruptError, OSError):  # a hint: see ._queue
            if storage._head_claimable(run_id):
                storage._queue.mark(run_id)

    async def close(self) -> None:
        fs = self._storage._fs
        if self._fd >= 0:
            fs.close(self._fd)
            self._fd = -1
        if self._held is not None:
            self._held.release()
            self._held = None
        if not self._published and self._lock.held:
            with contextlib.suppress(OSError):  # what is left, the next copy or removal takes
                fs.rmtree(str(self._stage.root))
        self._lock.release()


def remove_abandoned_copies(layout: StoreLayout) -> None:
    """Delete the copies into the store that their copy left unfinished (killed part way):
    each one whose journal's lock is free, taken while it is deleted."""
    fs = layout.fs
    for entry in fs.scandir(layout.runs):
        if not entry.name.startswith(COPYING) or not entry.is_dir(follow_symlinks=False):
            continue
        run_id = entry.name.removeprefix(COPYING)
        journal = os.path.join(entry.path, "runs", run_id, "journal.jsonl")
        with try_flock(journal) as free:
            if free:
                with contextlib.suppress(FileNotFoundError):
                    fs.rmtree(entry.path)
