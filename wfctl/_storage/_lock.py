"""Run locks: who may execute (and so append to) a run.

The file storage holds an OS lock (``flock`` through :mod:`filelock`) on ``<run>/lock`` for as
long as a run executes. The kernel drops it when the holder dies, even by SIGKILL, so a crash
never leaves a run locked. ``owner.json`` beside it only *describes* the holder for error
messages; it grants nothing. Storages without files use :class:`LocalRunLock`, an in-process hold.
"""

from __future__ import annotations

import contextlib
import json
import os
import socket
import sys
import threading
from collections.abc import Callable, Hashable
from datetime import UTC, datetime
from types import TracebackType
from typing import Final

from filelock import FileLock, Timeout

from wfctl._errors import RunLockedError, WfctlError

from ._fs import OS_FS, write_private

__all__ = ["FileRunLock", "LocalRunLock", "describe_holder", "probe_locked"]

#: How long lock_run waits before reporting a run as locked. A few ms covers the moment another
#: process's ``wfctl runs`` takes the lock to see whether it is free; a real holder keeps it.
LOCK_GRACE: Final = 0.05
_NOFOLLOW: Final = getattr(os, "O_NOFOLLOW", 0)
_CLOEXEC: Final = getattr(os, "O_CLOEXEC", 0)


def _file_lock(path: str, timeout: float) -> FileLock:
    # thread_local=False: the engine may release from another thread than it acquired on.
    # fallback_to_soft=False: a marker-file lock would outlive a SIGKILLed holder.
    return FileLock(
        path,
        timeout=timeout,
        mode=0o600,
        thread_local=False,
        fallback_to_soft=False,
        poll_interval=0.005,
    )


class FileRunLock:
    """An exclusive OS lock on one run of a file storage; see :meth:`acquire`."""

    def __init__(
        self, run_id: str, lock: FileLock, owner_path: str, on_release: Callable[[], None]
    ) -> None:
        self.run_id = run_id
        self._lock: FileLock | None = lock
        self._owner_path = owner_path
        self._on_release = on_release

    @classmethod
    def acquire(
        cls, run_id: str, lock_path: str, owner_path: str, on_release: Callable[[], None]
    ) -> FileRunLock:
        """Take the run's lock now and record this process as its holder.

        Two locks on the same run conflict even inside one process (each holds its own open
        file description, and ``flock`` locks those, not processes).

        Raises:
            RunLockedError: someone holds it; the message names them from ``owner.json``.
            WfctlError: the file system does not support OS file locks.
        """
        lock = _file_lock(lock_path, LOCK_GRACE)
        try:
            lock.acquire()
        except Timeout:
            raise RunLockedError(run_id, describe_holder(owner_path)) from None
        except OSError as exc:
            raise WfctlError(f"cannot lock run {run_id!r} at {lock_path}: {exc}") from exc
        try:
            write_private(OS_FS, owner_path, _owner_record())
        except BaseException:
            lock.release()
            raise
        return cls(run_id, lock, owner_path, on_release)

    @property
    def held(self) -> bool:
        """Whether this object still holds the lock."""
        return self._lock is not None

    def release(self) -> None:
        """Give the run back (idempotent)."""
        lock, self._lock = self._lock, None
        if lock is None:
            return
        try:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(self._owner_path)
        finally:
            try:
                lock.release()
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


def probe_locked(lock_path: str) -> bool:
    """Return whether someone holds the lock at ``lock_path`` (taken and dropped at once)."""
    if not os.path.exists(lock_path):
        return False  # never locked; and a read must not create files
    lock = _file_lock(lock_path, 0)
    try:
        lock.acquire()
    except Timeout:
        return True
    except OSError:
        return False
    lock.release()
    return False


def describe_holder(owner_path: str) -> str:
    """Say who holds a run's lock, from its ``owner.json`` ("another process" if unknown)."""
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
    text = f"pid {pid}"
    if isinstance(host, str):
        text += f" on host {host}"
    if isinstance(since, str):
        text += f" since {since}"
    if pid == os.getpid() and host == socket.gethostname():
        text += " (this process)"
    return text


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
