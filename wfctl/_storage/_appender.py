"""Appending to one run's journal: the storage's hot path, and the recovery before it.

A :class:`JournalAppender` is an ``O_APPEND`` descriptor kept open on a run's journal plus the
head this process last committed to it. Opening one scans only the journal's end: it truncates a
torn tail (so no later record follows garbage) and reads the head. After that a commit is one
``write`` of a whole record and one ``fdatasync``: no reads, no parsing, no other system calls.
"""

from __future__ import annotations

import errno
import os
import stat
import threading
from typing import Final

from wfctl._checkpoint import Checkpoint
from wfctl._errors import CheckpointCorruptError

from ._base import check_append
from ._journal import decode_record, read_tail

__all__ = [
    "READ_FLAGS",
    "WRITE_FLAGS",
    "JournalAppender",
    "fsync_dir",
    "symlink_error",
    "sync_data",
]

_O: Final = getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_BINARY", 0)
#: Flags for reading a journal: never through a symbolic link, never blocking on a planted FIFO.
READ_FLAGS: Final = os.O_RDONLY | os.O_NONBLOCK | _O
#: Flags for rewriting a journal in place (cutting it), with the same protections.
WRITE_FLAGS: Final = os.O_RDWR | os.O_NONBLOCK | _O
_APPEND_FLAGS: Final = WRITE_FLAGS | os.O_APPEND
_SYMLINK_ERRNOS: Final = frozenset({errno.ELOOP, errno.EMLINK})
#: ``fdatasync`` where the platform has it (it skips the metadata a journal does not need).
sync_data = getattr(os, "fdatasync", os.fsync)


class JournalAppender:
    """An open journal and the head this process last committed to it.

    ``lock`` serialises appends from threads; ``fd`` is -1 once closed (a writer that finds
    it so reopens, through the storage, and rereads the head).
    """

    __slots__ = ("fd", "last_id", "last_seq", "lock", "path")

    def __init__(self, fd: int, path: str, last_seq: int, last_id: str | None) -> None:
        self.fd = fd
        self.path = path
        self.last_seq = last_seq
        self.last_id = last_id
        self.lock = threading.Lock()

    @classmethod
    def open(cls, path: str, run_id: str, *, create: bool, durable: bool) -> JournalAppender:
        """Open ``path`` for appending, truncate its torn tail and read its head.

        Raises:
            CheckpointCorruptError: the journal is missing (and ``create`` is False), is a
                symbolic link or not a regular file, or its last record does not verify
                (nothing is appended after a head that cannot be trusted).
        """
        try:
            fd = os.open(path, _APPEND_FLAGS | (os.O_CREAT if create else 0), 0o600)
        except FileNotFoundError:
            raise CheckpointCorruptError(
                path, f"run {run_id!r} has no journal: its first checkpoint must be seq 0, the root"
            ) from None
        except OSError as exc:
            raise symlink_error(path, exc) from None
        try:
            last_seq, last_id = _recover(fd, path, run_id, durable)
            if last_seq < 0 and durable:
                fsync_dir(os.path.dirname(path))  # the journal's directory entry may be new
        except BaseException:
            os.close(fd)
            raise
        return cls(fd, path, last_seq, last_id)

    def append(self, checkpoint: Checkpoint, line: bytes, durable: bool) -> bool:
        """Commit ``line`` (the encoded ``checkpoint``) if it extends the head by one link.

        Returns False, writing nothing, if this appender was closed meanwhile. On an I/O error
        the appender closes itself: the file's end is unknown, so the next writer rescans it.

        Raises:
            CheckpointCorruptError: the checkpoint does not extend the head (see check_append).
            OSError: the write or the sync failed.
        """
        with self.lock:
            fd = self.fd
            if fd < 0:
                return False
            check_append(checkpoint, self.last_seq, self.last_id, self.path)
            try:
                written = os.write(fd, line)
                if written != len(line):
                    raise OSError(errno.EIO, f"short write to {self.path}", written)
                if durable:
                    sync_data(fd)
            except BaseException:
                self.fd = -1
                os.close(fd)
                raise
            self.last_seq = checkpoint.seq
            self.last_id = checkpoint.checkpoint_id
            return True

    def close(self) -> None:
        """Close the descriptor (idempotent)."""
        with self.lock:
            fd, self.fd = self.fd, -1
            if fd >= 0:
                os.close(fd)


def _recover(fd: int, path: str, run_id: str, durable: bool) -> tuple[int, str | None]:
    """Truncate a torn tail and return the journal's head (``-1, None`` if it is empty)."""
    st = os.fstat(fd)
    if not stat.S_ISREG(st.st_mode):
        raise CheckpointCorruptError(path, "journal is not a regular file")
    tail = read_tail(fd, st.st_size)
    if tail.committed_end < st.st_size:
        os.ftruncate(fd, tail.committed_end)
        if durable:
            sync_data(fd)
    if tail.line is None:
        return -1, None
    head = decode_record(tail.line, f"{path} (last record, byte {tail.offset})")
    if head.run_id != run_id:
        raise CheckpointCorruptError(path, f"last record belongs to run {head.run_id!r}")
    return head.seq, head.checkpoint_id


def symlink_error(path: str, exc: OSError) -> Exception:
    """Turn the error of an ``O_NOFOLLOW`` open of a symbolic link into a corruption report."""
    if exc.errno in _SYMLINK_ERRNOS:
        return CheckpointCorruptError(path, "journal is a symbolic link, not followed")
    return exc


def fsync_dir(path: str) -> None:
    """Make a directory's entries durable (a no-op where directories cannot be opened)."""
    if os.name != "posix":  # pragma: no cover - Windows
        return
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | getattr(os, "O_CLOEXEC", 0))
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
