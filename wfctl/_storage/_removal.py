"""Removing a whole run by rename-then-delete, and cutting a run's chain at a seq.

Both take the run's lock first, so a run being executed is never removed or cut under it.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import stat
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Final

from wfctl._errors import CheckpointCorruptError, RunLockedError

from ._appender import WRITE_FLAGS
from ._fs import FileSystem
from ._journal import decode_record, read_all
from ._layout import StoreLayout
from ._lock import FileRunLock
from ._marker import drop_end_marker

__all__ = ["cut_run", "remove_run", "remove_runs"]

#: Prefix of a run directory being removed: no run id starts with a dot, so no listing reads it.
_REMOVING: Final = ".removing-"

#: Threads deleting removed runs at once. Where the file system discards freed blocks on the
#: device (mounted with ``discard``), deleting a run's files waits on the device, 1 to 2 ms a run
#: on the disks measured; the waits of several deletions overlap (see docs/decisions.md).
_DELETERS: Final = 8
#: Fewer removed runs than this are deleted one after the other: starting threads costs more.
_DELETE_IN_PARALLEL_FROM: Final = 16
#: With threads, the renames made durable (one sync of ``runs``) and their trees handed to the
#: threads every this many runs, so that deleting goes on while later runs are renamed.
_HAND_OVER_EVERY: Final = 500

#: Takes a run's lock (``FileCheckpointStorage.lock_run``). ``remove_runs`` calls it only for
#: a run whose directory it has just seen as a directory, in a ``runs`` it checked: it need
#: create or check neither again (``FileCheckpointStorage._lock_to_remove``).
LockRun = Callable[[str], FileRunLock]


def remove_run(layout: StoreLayout, run_id: str, lock_run: LockRun, durable: bool) -> bool:
    """Remove a run's directory (a link to one: the link only); False if it did not exist.

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
    """Remove several runs' directories with two directory syncs (and one per 500), not two per run.

    Each run is taken out of the store by one rename (under its lock), then, once every rename
    is durable (one sync of ``runs``), the renamed directories are deleted and ``runs`` synced
    once more. A process killed part way leaves each run whole, or a removal directory that no
    listing reads (its name is no run id) and the next removal finishes: never a run directory
    that lost its journal but kept the rest.

    When many runs are removed (their trees deleted by threads), the renames are made durable
    every ``_HAND_OVER_EVERY`` runs and those trees handed to the threads at once, so that
    their deletion (which waits on the device) goes on while the next runs are renamed: one
    more sync of ``runs`` per ``_HAND_OVER_EVERY`` runs, and still no tree deleted before its
    rename is durable.

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
    ids = list(run_ids)
    deletions = _Deletions(fs, in_threads=len(ids) >= _DELETE_IN_PARALLEL_FROM)
    renamed: list[str] = []  # since the last sync of ``runs``
    changed = False  # ``runs`` changed since its last sync
    # One suffix for the batch: each run's removal directory is named for it, and a directory
    # left by an earlier removal of the same id was deleted just above (or has another suffix).
    suffix = secrets.token_hex(4)
    try:
        for run_id in ids:
            run_dir = layout.run_dir(run_id)
            try:
                is_link = stat.S_ISLNK(fs.lstat(run_dir).st_mode)
            except (FileNotFoundError, NotADirectoryError):
                continue
            if is_link:
                fs.unlink(run_dir)  # the link itself, never what it points to
                removed.append(run_id)
                changed = True
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
            target = f"{layout.runs}{os.sep}{_REMOVING}{run_id}.{suffix}"
            try:
                fs.replace(run_dir, target)
            finally:
                if lock is not None:
                    lock.release()
            renamed.append(target)
            removed.append(run_id)
            changed = True
            if deletions.in_threads and len(renamed) >= _HAND_OVER_EVERY:
                if durable:
                    fs.fsync_dir(layout.runs)  # these renames durable before their deletion
                changed = False
                deletions.start(renamed)
                renamed = []
    finally:
        # Also after a failure part way: the runs already renamed are out of the store.
        try:
            if durable and changed:
                fs.fsync_dir(layout.runs)  # every rename durable before any file is deleted
            deletions.start(renamed)
        finally:
            deletions.finish()  # the deletions already started end, even after a failure
        if durable and deletions.started:
            fs.fsync_dir(layout.runs)
    return removed, locked


class _Deletions:
    """Deleting trees renamed out of the store: one after the other, or in ``_DELETERS`` threads.

    Raises (from :meth:`start` one after the other, from :meth:`finish` in threads):
        OSError: the first deletion that failed; in threads, once every other has ended, the
            first in the order the trees were started (what is left of a tree is a removal
            directory, which the next removal deletes).
    """

    def __init__(self, fs: FileSystem, *, in_threads: bool) -> None:
        self._fs = fs
        self.in_threads = in_threads
        self._pool: ThreadPoolExecutor | None = None
        self._tasks: list[Future[None]] = []
        self._failed: dict[int, OSError] = {}
        #: How many trees were handed over.
        self.started = 0

    def start(self, targets: Sequence[str]) -> None:
        """Delete ``targets`` (in threads: start to, and return)."""
        first = self.started
        self.started += len(targets)
        if not self.in_threads:
            for target in targets:
                _delete_tree(self._fs, target)
            return
        if self._pool is None:
            self._pool = ThreadPoolExecutor(_DELETERS, thread_name_prefix="wfctl-delete")
        # One task per thread, not per tree (a task per tree costs more CPU than a deletion).
        for offset in range(min(_DELETERS, len(targets))):
            every = targets[offset::_DELETERS]
            self._tasks.append(self._pool.submit(self._delete_every, every, first + offset))

    def _delete_every(self, targets: Sequence[str], first: int) -> None:
        """Delete ``targets`` (number ``first``, then every ``_DELETERS``-th), past failures."""
        for number, target in enumerate(targets):
            try:
                _delete_tree(self._fs, target)
            except OSError as exc:
                self._failed[first + number * _DELETERS] = exc

    def finish(self) -> None:
        """Wait for every deletion started; raise the first that failed."""
        if self._pool is None:
            return
        self._pool.shutdown(wait=True)
        for task in self._tasks:
            task.result()
        if self._failed:
            raise self._failed[min(self._failed)]


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
