"""Removing a whole run by rename-then-delete, and cutting a run's chain at a seq.

Both take the run's lock first, so a run being executed is never removed or cut under it.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import stat
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Final

from wfctl._errors import CheckpointCorruptError, RunLockedError

from ._appender import WRITE_FLAGS
from ._fs import FileSystem
from ._journal import decode_record, read_all
from ._layout import REMOVING, StoreLayout
from ._lock import FileRunLock
from ._marker import drop_end_marker
from ._staging import remove_abandoned_copies

__all__ = ["cut_run", "remove_run", "remove_runs"]

#: Threads deleting removed runs at once. Where the file system discards freed blocks on the
#: device (mounted with ``discard``), deleting a run's files waits on the device, 1 to 2 ms a run
#: on the disks measured; the waits of several deletions overlap (see
#: docs/decisions/0066-removing-many-runs-their-trees-deleted-by.md).
_DELETERS: Final = 8
#: Fewer removed runs than this are deleted one after the other: starting threads costs more.
_DELETE_IN_PARALLEL_FROM: Final = 16

#: Takes a run's lock (``FileCheckpointStorage.lock_run``). ``remove_runs`` calls it only for
#: a run whose directory it has just seen as a directory, in a ``runs`` it checked: it need
#: create or check neither again (``FileCheckpointStorage._lock_to_remove``).
LockRun = Callable[[str], FileRunLock]


def remove_run(layout: StoreLayout, run_id: str, lock_run: LockRun, durable: bool) -> bool:
    """Remove a run's directory (a link or a file in its place: that entry only); False if none.

    Raises:
        RunLockedError: the run is being executed.
    """
    removed, locked = remove_runs(layout, [run_id], lock_run, durable)
    if locked:
        raise locked[0]
    return bool(removed)


def remove_runs(
    layout: StoreLayout, run_ids: Iterable[str], lock_run: LockRun, durable: bool
) -> tuple[list[str], list[RunLockedError]]:
    """Remove several runs' directories with two directory syncs in all, not two per run.

    Each run is taken out of the store by one rename (under its lock), then, once every rename
    is durable (one sync of ``runs``), the renamed directories are deleted and ``runs`` synced
    once more. A process killed part way leaves each run whole, or a removal directory that no
    listing reads (its name is no run id) and the next removal finishes: never a run directory
    that lost its journal but kept the rest.

    Returns:
        The ids of the runs removed (those that did not exist are left out), and the
        :class:`RunLockedError` of each run that is being executed (kept, the others removed).
    """
    fs = layout.fs
    removed: list[str] = []
    locked: list[RunLockedError] = []
    layout.vet_root()
    if not layout.check_runs_dir():
        return removed, locked
    _finish_removals(layout)
    doomed: list[str] = []
    # One suffix for the batch: each run's removal directory is named for it, and a directory
    # left by an earlier removal of the same id was deleted just above (or has another suffix).
    suffix = secrets.token_hex(4)
    try:
        for run_id in run_ids:
            run_dir = layout.run_dir(run_id)
            try:
                is_dir = stat.S_ISDIR(fs.lstat(run_dir).st_mode)
            except (FileNotFoundError, NotADirectoryError):
                continue
            if not is_dir:  # a link (never what it points to), or a file named like a run
                fs.unlink(run_dir)
                removed.append(run_id)
                continue
            try:
                lock: FileRunLock | None = lock_run(run_id)
            except RunLockedError as exc:
                locked.append(exc)
                continue
            except CheckpointCorruptError:
                lock = None  # a journal that is a link or no file: no writer can hold it
            except (FileNotFoundError, NotADirectoryError):
                continue  # its directory went since it was seen: another removal took it
            target = f"{layout.runs}{os.sep}{REMOVING}{run_id}.{suffix}"
            try:
                fs.replace(run_dir, target)
            finally:
                if lock is not None:
                    lock.release()
            doomed.append(target)
            removed.append(run_id)
    finally:
        # Also after a failure part way: the runs already renamed are out of the store.
        if durable and (doomed or removed):
            fs.fsync_dir(layout.runs)  # every rename durable before any file is deleted
        _delete(fs, doomed)
        if durable and doomed:
            fs.fsync_dir(layout.runs)
    return removed, locked


def _delete(fs: FileSystem, targets: Sequence[str]) -> None:
    """Delete the trees ``targets`` (renamed out of the store), several at once if many.

    Raises:
        OSError: the first deletion that failed, once every other has ended (what is left of a
            tree is a removal directory, which the next removal deletes).
    """
    if len(targets) < _DELETE_IN_PARALLEL_FROM:
        for target in targets:
            _delete_tree(fs, target)
        return
    failed: dict[int, OSError] = {}

    def delete_every(first: int) -> None:
        """Delete tree ``first`` and every ``_DELETERS``-th after it, going on past failures."""
        for index in range(first, len(targets), _DELETERS):
            try:
                _delete_tree(fs, targets[index])
            except OSError as exc:
                failed[index] = exc

    # One task per thread, not one per tree (that cost more CPU than a tree's deletion).
    with ThreadPoolExecutor(_DELETERS, thread_name_prefix="wfctl-delete") as pool:
        tasks = [pool.submit(delete_every, first) for first in range(_DELETERS)]
    for task in tasks:  # all have ended
        task.result()
    if failed:  # the first failure, in the order of the runs
        raise failed[min(failed)]


def _delete_tree(fs: FileSystem, target: str) -> None:
    """Delete a tree renamed out of the store; one that is gone already is deleted.

    Another removal starting meanwhile deletes every removal directory it finds, this one's
    too (:func:`_finish_removals`): that is not a failure of this one.
    """
    try:
        fs.rmtree(target)
    except FileNotFoundError:
        if fs.lexists(target):
            raise  # a file inside went while the tree was read: what is left stays a removal's


def _finish_removals(layout: StoreLayout) -> None:
    """Delete what removals interrupted by a crash left behind (see :func:`remove_run`), and
    the copies into the store that a killed copy left unfinished (see ._staging)."""
    remove_abandoned_copies(layout)
    for entry in layout.fs.scandir(layout.runs):
        if entry.name.startswith(REMOVING) and entry.is_dir(follow_symlinks=False):
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
