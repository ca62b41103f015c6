"""Run locks: who may execute (and so append to) a run.

The file storage holds an OS lock (:func:`fcntl.flock`) on the run's journal itself, on an open
file description of ``<run>/journal.jsonl``, for as long as a run executes. The kernel drops it
when the holder dies, even by SIGKILL, so a crash never leaves a run locked. Because the lock is
on the very file the records are appended to, no other file can release it: deleting a side file
changes nothing, and a journal that is deleted, replaced or moved away is a different file that
the holder's next append notices (see :mod:`._appender`). ``owner.json`` beside it only
*describes* the holder for error messages; it grants nothing. Storages without files use
:class:`LocalRunLock`, an in-process hold.

Where :mod:`fcntl` does not exist (Windows), the lock is :mod:`filelock`'s on a ``<run>/lock``
file, which that platform does not let anyone delete while it is held open.
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import socket
import stat
import sys
import threading
import time
from collections.abc import Callable, Hashable, Iterator
from datetime import UTC, datetime
from types import TracebackType
from typing import TYPE_CHECKING, Final

from wfctl._errors import CheckpointCorruptError, RunLockedError, WfctlError

from ._fs import OS_FS, write_private

if TYPE_CHECKING:
    from filelock import FileLock

try:
    import fcntl
except ImportError:  # pragma: no cover - Windows
    fcntl = None  # type: ignore[assignment]

__all__ = [
    "FileRunLock",
    "HeldLease",
    "LocalRunLock",
    "describe_holder",
    "probe_locked",
    "try_flock",
]

#: How long lock_run waits before reporting a run as locked. A few ms covers the moment another
#: process's ``wfctl runs`` takes the lock to see whether it is free; a real holder keeps it.
LOCK_GRACE: Final = 0.05
_POLL: Final = 0.005
_NOFOLLOW: Final = getattr(os, "O_NOFOLLOW", 0)
_CLOEXEC: Final = getattr(os, "O_CLOEXEC", 0)
#: Opening a journal to lock it: read-only (flock needs no more), never through a link, never
#: blocking on a planted FIFO; created (empty, private) for a run that has no records yet.
_LOCK_FLAGS: Final = os.O_RDONLY | os.O_NONBLOCK | _NOFOLLOW | _CLOEXEC
_SYMLINK_ERRNOS: Final = frozenset({errno.ELOOP, errno.EMLINK})


def _file_lock(path: str, timeout: float) -> FileLock:  # pragma: no cover - Windows
    from filelock import FileLock  # only where fcntl is missing: not at import (start-up time)

    # thread_local=False: the engine may release from another thread than it acquired on.
    # fallback_to_soft=False: a marker-file lock would outlive a SIGKILLed holder.
    return FileLock(
        path,
        timeout=timeout,
        mode=0o600,
        thread_local=False,
        fallback_to_soft=False,
        poll_interval=_POLL,
    )


def _open_journal(path: str, create: bool) -> tuple[int, os.stat_result]:
    """Open a journal to lock it (its descriptor and ``fstat``); refuse a link or a non-file.

    Raises:
        FileNotFoundError: there is no journal (and ``create`` is False).
        CheckpointCorruptError: it is a symbolic link or not a regular file.
    """
    try:
        fd = os.open(path, _LOCK_FLAGS | (os.O_CREAT if create else 0), 0o600)
    except OSError as exc:
        if exc.errno in _SYMLINK_ERRNOS:
            raise CheckpointCorruptError(path, "journal is a symbolic link, not followed") from None
        raise
    st = os.fstat(fd)
    if not stat.S_ISREG(st.st_mode):
        os.close(fd)
        raise CheckpointCorruptError(path, "journal is not a regular file")
    return fd, st


def _names(held: tuple[int, int], path: str) -> bool:
    """Whether ``path`` still names the file ``held`` (its device and inode): not deleted,
    moved or replaced."""
    try:
        now = os.lstat(path)
    except FileNotFoundError:
        return False
    return held == (now.st_dev, now.st_ino)


def _flock_journal(
    run_id: str, path: str, owner_path: str, grace: float = LOCK_GRACE
) -> tuple[int, tuple[int, int]]:
    """Open ``path`` (creating it) and take an exclusive ``flock`` on it.

    Returns the descriptor and the ``(st_dev, st_ino)`` of the file locked.

    ``flock`` (not ``fcntl``/``lockf`` record locks) because it belongs to the open file
    description: closing some other descriptor of the journal in this process (every read
    opens one) does not drop it, and two locks in one process conflict like two processes do.
    :mod:`filelock` cannot do this: it locks a path it opens itself for writing, with
    ``O_TRUNC``, which is exactly the deletable side file this replaces.
    """
    deadline = time.monotonic() + grace
    while True:
        fd, st = _open_journal(path, create=True)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            if time.monotonic() >= deadline:
                raise RunLockedError(run_id, describe_holder(owner_path)) from None
            time.sleep(_POLL)
            continue
        except OSError as exc:
            os.close(fd)
            raise WfctlError(f"cannot lock run {run_id!r} at {path}: {exc}") from exc
        # Between the open and the lock the journal may have been replaced: a lock on a file
        # the path no longer names excludes nobody. Lock what the path names now.
        identity = (st.st_dev, st.st_ino)
        if _names(identity, path):
            return fd, identity
        os.close(fd)
        if time.monotonic() >= deadline:
            raise CheckpointCorruptError(path, "journal keeps being replaced; cannot lock it")


class FileRunLock:
    """An exclusive OS lock on one run of a file storage; see :meth:`acquire`.

    ``identity`` is the ``(st_dev, st_ino)`` of the locked journal: the storage appends only
    to that file while it holds this lock.
    """

    def __init__(
        self,
        run_id: str,
        hold: int | FileLock,
        owner_path: str | None,
        on_release: Callable[[], None],
        identity: tuple[int, int] | None = None,
    ) -> None:
        self.run_id = run_id
        self._hold: int | FileLock | None = hold
        self._owner_path = owner_path
        self._on_release = on_release
        self.identity = identity

    @classmethod
    def acquire(
        cls,
        run_id: str,
        journal_path: str,
        owner_path: str,
        on_release: Callable[[], None],
        grace: float = LOCK_GRACE,
        *,
        named: bool = True,
    ) -> FileRunLock:
        """Take the run's lock now (creating an empty journal if needed); record the holder.

        Two locks on the same run conflict even inside one process (each holds its own open
        file description, and ``flock`` locks those, not processes). ``grace`` is how long a
        held lock is waited for (a worker's claim waits for none: it takes another run).
        Without ``named`` the holder is not recorded, only a record left by an earlier holder
        removed (someone refused meanwhile reads "another process"): for a lock held for one
        rename, where writing the record would cost more than the rename (a removal).

        Raises:
            RunLockedError: someone holds it; the message names them from ``owner.json``.
            CheckpointCorruptError: the journal is a symbolic link or not a regular file.
            WfctlError: the file system does not support OS file locks.
        """
        hold: int | FileLock
        identity = None
        if fcntl is not None:
            hold, identity = _flock_journal(run_id, journal_path, owner_path, grace)
        else:  # pragma: no cover - Windows
            lock_path = os.path.join(os.path.dirname(journal_path), "lock")
            hold = _file_lock(lock_path, grace)
            from filelock import Timeout

            try:
                hold.acquire()
            except Timeout:
                raise RunLockedError(run_id, describe_holder(owner_path)) from None
            except OSError as exc:
                raise WfctlError(f"cannot lock run {run_id!r} at {lock_path}: {exc}") from exc
        # An unnamed lock wrote no record: its release has none to remove.
        lock = cls(run_id, hold, owner_path if named else None, lambda: None, identity)
        try:
            if named:
                write_private(OS_FS, owner_path, _owner_record())
            else:
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(owner_path)
        except BaseException:
            lock.release()
            raise
        lock._on_release = on_release
        return lock

    @property
    def held(self) -> bool:
        """Whether this object still holds the lock."""
        return self._hold is not None

    def release(self) -> None:
        """Give the run back (idempotent)."""
        hold, self._hold = self._hold, None
        if hold is None:
            return
        try:
            if self._owner_path is not None:  # None: it recorded no holder (see ``named``)
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(self._owner_path)
        finally:
            try:
                if isinstance(hold, int):
                    os.close(hold)  # the last descriptor of the description: the lock goes
                else:  # pragma: no cover - Windows
                    hold.release()
            finally:
                self._on_release()

    def __enter__(self) -> FileRunLock:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.release()


def probe_locked(journal_path: str) -> bool:
    """Return whether someone holds the run whose journal is at ``journal_path``.

    Takes a shared lock and drops it at once, so probes do not exclude each other; a read never
    creates files.
    """
    if fcntl is None:  # pragma: no cover - Windows
        return _probe_file_lock(os.path.join(os.path.dirname(journal_path), "lock"))
    try:
        fd, _ = _open_journal(journal_path, create=False)
    except (OSError, CheckpointCorruptError):
        return False  # no journal (never locked), or one nobody can lock or append to
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    except OSError:
        return False
    finally:
        os.close(fd)
    return False


@contextlib.contextmanager
def try_flock(journal_path: str) -> Iterator[bool]:
    """Hold the exclusive lock on the journal at ``journal_path`` for the block, if it is free.

    Yields True if nobody holds it (taken for the block, or there is no journal to lock),
    False if someone does. Nothing is created.
    """
    if fcntl is None:  # pragma: no cover - Windows
        yield not _probe_file_lock(os.path.join(os.path.dirname(journal_path), "lock"))
        return
    try:
        fd, _ = _open_journal(journal_path, create=False)
    except (OSError, CheckpointCorruptError):
        yield True  # no journal (never locked), or one nobody can lock
        return
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            yield False
            return
        yield True
    finally:
        os.close(fd)


def _probe_file_lock(lock_path: str) -> bool:  # pragma: no cover - Windows
    if not os.path.exists(lock_path):
        return False
    lock = _file_lock(lock_path, 0)
    from filelock import Timeout

    try:
        lock.acquire()
    except Timeout:
        return True
    except OSError:
        return False
    lock.release()
    return False


def describe_holder(owner_path: str) -> str:
    """Say who holds a run's lock, from its ``owner.json`` ("another process" if unknown).

    A holder recorded on this host whose process has exited is not named as the holder: its
    ``owner.json`` outlived it (it was killed), and whatever holds the lock now (any process
    that can open the journal may ``flock`` it) is another process.
    """
    try:
        fd = os.open(owner_path, os.O_RDONLY | _NOFOLLOW | _CLOEXEC)
        try:
            raw = json.loads(os.read(fd, 64 * 1024))
        finally:
            os.close(fd)
    except (OSError, ValueError, RecursionError):
        return "another process"
    if not isinstance(raw, dict) or type(raw.get("pid")) is not int:
        return "another process"
    pid, host, since = raw["pid"], raw.get("host"), raw.get("since")
    if host == socket.gethostname() and _exited(pid):
        return f"another process (the holder recorded, pid {pid}, has exited)"
    text = f"pid {pid}"
    if isinstance(host, str):
        text += f" on host {host}"
    if isinstance(since, str):
        text += f" since {since}"
    if pid == os.getpid() and host == socket.gethostname():
        text += " (this process)"
    return text


def _exited(pid: int) -> bool:
    """Whether no process of this host has the id ``pid`` (False where that cannot be told)."""
    if os.name != "posix" or pid <= 0:  # Windows' os.kill(pid, 0) would end the process
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except OSError:
        return False  # it exists (another user's), or the question was refused
    return False


def _owner_record() -> dict[str, object]:
    return {
        "pid": os.getpid(),
        "host": socket.gethostname(),
        "argv": list(sys.argv),
        "since": datetime.now(UTC).isoformat(timespec="seconds"),
    }


class LocalRunLock:
    """An in-process exclusive hold on a run, for storages without OS locks.

    ``registry`` is the set of held keys it shares with every other lock of the same storage;
    ``anchor`` is kept alive while the lock is held (so an ``id()`` in the key stays unique).
    """

    _guard: Final = threading.Lock()

    def __init__(self, registry: set[Hashable], key: Hashable, run_id: str, anchor: object) -> None:
        with self._guard:
            if key in registry:
                raise RunLockedError(run_id, "this process")
            registry.add(key)
        self.run_id = run_id
        self._registry: set[Hashable] | None = registry
        self._key = key
        self._anchor = anchor

    @property
    def held(self) -> bool:
        """Whether this object still holds the lock."""
        return self._registry is not None

    def release(self) -> None:
        """Give the run back (idempotent)."""
        with self._guard:
            registry, self._registry = self._registry, None
            if registry is not None:
                registry.discard(self._key)
        self._anchor = None

    def __enter__(self) -> LocalRunLock:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.release()


class HeldLease:
    """A run lease over a synchronous lock and a pause probe (the file and memory storages).

    ``probe`` answers :meth:`pause_requested`; it is asked at every step boundary.
    """

    def __init__(self, lock: FileRunLock | LocalRunLock, probe: Callable[[], bool]) -> None:
        self._lock = lock
        self._probe = probe

    @property
    def run_id(self) -> str:
        """The run held."""
        return self._lock.run_id

    @property
    def held(self) -> bool:
        """Whether the lease is still held."""
        return self._lock.held

    def pause_requested(self) -> bool:
        """Return whether someone asked the run to pause."""
        return self._probe()

    async def release(self) -> None:
        """Give the run back (idempotent)."""
        self._lock.release()
