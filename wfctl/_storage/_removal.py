"""Removing a whole run by rename-then-delete, and cutting a run's chain at a seq.

Both take the run's lock first, so a run being executed is never removed or cut under it.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import stat
from collections.abc import Callable
from typing import Final

from wfctl._errors import CheckpointCorruptError

from ._appender import WRITE_FLAGS
from ._journal import decode_record, read_all
from ._layout import StoreLayout
from ._lock import FileRunLock
from ._marker import drop_end_marker

__all__ = ["cut_run", "remove_run"]

#: Prefix of a run directory being removed: no run id starts with a dot, so no listing reads it.
_REMOVING: Final = ".removing-"

#: Takes a run's lock (``FileCheckpointStorage.lock_run``).
LockRun = Callable[[str], FileRunLock]


def remove_run(layout: StoreLayout, run_id: str, lock_run: LockRun, durable: bool) -> bool:
    """Remove a run's directory (a link to one: the link only); False if it did not exist.

    Raises:
        RunLockedError: the run is being executed.
    """
    run_dir = layout.run_dir(run_id)
    fs = layout.fs
    if not layout.check_runs_dir():
        return False
    _finish_removals(layout)
    try:
        is_link = stat.S_ISLNK(fs.lstat(run_dir).st_mode)
    except (FileNotFoundError, NotADirectoryError):
        return False
    if is_link:
        fs.unlink(run_dir)  # the link itself, never what it points to
    else:
        try:
            lock: FileRunLock | None = lock_run(run_id)
        except CheckpointCorruptError:
            lock = None  # a journal that is a link or no file: no writer can hold it
        # One rename takes the whole run out of the store; only then are its files deleted.
        # A process killed part way leaves the run whole, or a removal directory that no
        # listing reads (its name is no run id) and the next removal finishes: never a run
        # directory that lost its journal but kept the rest.
        doomed = os.path.join(layout.runs, f"{_REMOVING}{run_id}.{secrets.token_hex(4)}")
        try:
            fs.replace(run_dir, doomed)
        finally:
            if lock is not None:
                lock.release()
        if durable:
            fs.fsync_dir(layout.runs)
        fs.rmtree(doomed)
    if durable:
        fs.fsync_dir(layout.runs)
    return True


def _finish_removals(layout: StoreLayout) -> None:
    """Delete what removals interrupted by a crash left behind (see :func:`remove_run`)."""
    for entry in layout.fs.scandir(layout.runs):
        if entry.name.startswith(_REMOVING) and entry.is_dir(follow_symlinks=False):
            with contextlib.suppress(FileNotFoundError):  # another remover got there first
                layout.fs.rmtree(entry.path)


def cut_run(layout: StoreLayout, run_id: str, seq: int, lock_run: LockRun, durable: bool) -> bool:
    """Cut the run's journal before record ``seq``, under its lock; False if there is none.

    Raises:
        RunLockedError: the run is being executed.
        CheckpointCorruptError: the record at that position is not that checkpoint.
    """
    if not layout.is_file(layout.journal(run_id)):
        return False
    with lock_run(run_id):
        return _truncate_at(layout, run_id, seq, durable)


def _truncate_at(layout: StoreLayout, run_id: str, seq: int, durable: bool) -> bool:
    path = layout.journal(run_id)
    fs = layout.fs
    fd = fs.open(path, WRITE_FLAGS)
    try:
        data = read_all(fs, fd)
        start = 0
        for _ in range(seq):
            newline = data.find(b"\n", start)
            if newline < 0:
                return False
            start = newline + 1
        end = data.find(b"\n", start)
        if end < 0:
            return False
        where = f"{path}:{seq + 1}"
        found = decode_record(data[start:end], where)
        if found.seq != seq or found.run_id != run_id:
            raise CheckpointCorruptError(where, f"holds {found.checkpoint_id}; refusing to cut")
        drop_end_marker(layout, run_id, seq, durable)  # first: a crash in between must not look cut
        fs.ftruncate(fd, start)
        if durable:
            fs.fdatasync(fd)
        return True
    finally:
        fs.close(fd)
