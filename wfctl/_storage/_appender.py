"""Appending to one run's journal: the storage's hot path, and the recovery before it.

A :class:`JournalAppender` is an ``O_APPEND`` descriptor kept open on a run's journal plus the
head this process last committed to it. Opening one scans only the journal's end: it truncates a
torn tail (so no later record follows garbage) and reads the head. After that a commit is one
``lstat`` of the journal's path, one ``writev`` of a whole record's buffers (continued if the
kernel stored only part of it) and one ``fdatasync``: no reads, no parsing, no copy of the
record into one buffer. The storage's durability mode
(see ._durability) may defer the ``fdatasync``: the appender counts the records written since
the last one, and :meth:`JournalAppender.sync` makes them durable later.

The ``lstat`` is the check that the head cached in memory is still the journal's head: the path
must still name the file this appender opened (same device and inode) and that file must be
exactly as long as this appender left it. Otherwise another writer appended (its lock was
bypassed), or the journal was cut, deleted, moved or replaced; the append is refused with
:class:`~wfctl.JournalChangedError`, and so is every later one on this appender. A path is
checked, not just the open descriptor, because a journal moved away (with its run directory)
and replaced by a copy keeps its size and inode: only the path shows that readers, and the next
process, no longer see what this one appends.

A commit that fails is rolled back: whatever of the record reached the file (all of it, when
the write reported an error late or the ``fdatasync`` failed) is cut off again, so the journal
never holds a record its writer was told did not commit.
"""

from __future__ import annotations

import errno
import os
import stat
import threading
from collections.abc import Sequence
from typing import Final

from wfctl._errors import CheckpointCorruptError, JournalChangedError
from wfctl._records._checkpoint import Checkpoint

from ._base import check_append
from ._fs import FileSystem, writev_all
from ._journal import decode_record, read_tail, record_crc

__all__ = [
    "READ_FLAGS",
    "WRITE_FLAGS",
    "JournalAppender",
    "symlink_error",
]

_O: Final = getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_BINARY", 0)
#: Flags for reading a journal: never through a symbolic link, never blocking on a planted FIFO.
READ_FLAGS: Final = os.O_RDONLY | os.O_NONBLOCK | _O
#: Flags for rewriting a journal in place (cutting it), with the same protections.
WRITE_FLAGS: Final = os.O_RDWR | os.O_NONBLOCK | _O
_APPEND_FLAGS: Final = WRITE_FLAGS | os.O_APPEND
_SYMLINK_ERRNOS: Final = frozenset({errno.ELOOP, errno.EMLINK})


class JournalAppender:
    """An open journal and the head this process last committed to it.

    ``lock`` serialises appends from threads; ``fd`` is -1 once closed (a writer that finds
    it so reopens, through the storage, and rereads the head). ``fs`` makes the OS calls.
    ``end`` is the byte offset where the committed records end (where the next one lands);
    ``identity`` the journal's ``(st_dev, st_ino)``; ``last_crc`` the checksum field of the
    head record as read at open (None if there is none); ``changed`` the refusal every append
    raises once the journal was found changed under this appender. ``unsynced`` counts the
    records written since the last ``fdatasync``, ``syncs`` the ``fdatasync`` calls that made
    records durable so far (a window's timer asks whether one came since it was armed);
    ``sync_failed`` is the error of a deferred
    sync that failed, which the next append raises (those records may not be durable) before
    the storage drops this appender.
    """

    __slots__ = (
        "changed",
        "end",
        "fd",
        "fs",
        "identity",
        "last_crc",
        "last_id",
        "last_seq",
        "lock",
        "path",
        "sync_failed",
        "syncs",
        "unsynced",
    )

    def __init__(
        self,
        fs: FileSystem,
        fd: int,
        path: str,
        last_seq: int,
        last_id: str | None,
        end: int,
        identity: tuple[int, int] = (0, 0),
        last_crc: str | None = None,
    ) -> None:
        self.fs = fs
        self.fd = fd
        self.path = path
        self.last_seq = last_seq
        self.last_id = last_id
        self.end = end
        self.identity = identity
        self.last_crc = last_crc
        self.changed: JournalChangedError | None = None
        self.sync_failed: OSError | None = None
        self.unsynced = 0
        self.syncs = 0
        self.lock = threading.Lock()

    @classmethod
    def open(
        cls, fs: FileSystem, path: str, run_id: str, *, create: bool, durable: bool
    ) -> JournalAppender:
        """Open ``path`` for appending, truncate its torn tail and read its head.

        Raises:
            CheckpointCorruptError: the journal is missing (and ``create`` is False), is a
                symbolic link or not a regular file, or its last record does not verify
                (nothing is appended after a head that cannot be trusted).
        """
        try:
            fd = fs.open(path, _APPEND_FLAGS | (os.O_CREAT if create else 0), 0o600)
        except FileNotFoundError:
            raise CheckpointCorruptError(
                path, f"run {run_id!r} has no journal: its first checkpoint must be seq 0, the root"
            ) from None
        except OSError as exc:
            raise symlink_error(path, exc) from None
        try:
            st = fs.fstat(fd)
            last_seq, last_id, end, last_crc = _recover(fs, fd, st, path, run_id, durable)
            if last_seq < 0 and durable:
                fs.fsync_dir(os.path.dirname(path))  # the journal's directory entry may be new
        except BaseException:
            fs.close(fd)
            raise
        return cls(fs, fd, path, last_seq, last_id, end, (st.st_dev, st.st_ino), last_crc)

    def append(
        self, checkpoint: Checkpoint, line: Sequence[bytes | memoryview], durable: bool
    ) -> bool:
        """Commit ``line`` (the encoded ``checkpoint``) if it extends the head by one link.

        ``line`` is the record as buffers written in order, as if joined (one ``writev``).

        ``durable`` syncs it (and every record written before it) before returning; otherwise
        it is written only, and counted in ``unsynced``.

        Returns False, writing nothing, if this appender was closed meanwhile. On an I/O error
        (or an exception such as KeyboardInterrupt) the appender cuts off whatever part of
        ``line`` reached the file (see :meth:`_roll_back`) and closes itself, so the next
        writer rescans the file's end.

        Raises:
            JournalChangedError: the journal is not where this appender left it (see the
                module docstring); raised again by every later append.
            CheckpointCorruptError: the checkpoint does not extend the head (see check_append).
            OSError: the write or the sync failed, or a deferred sync had failed before.
        """
        with self.lock:
            if self.changed is not None:
                raise self.changed
            if self.sync_failed is not None:
                raise self.sync_failed
            fd = self.fd
            if fd < 0:
                return False
            check_append(checkpoint, self.last_seq, self.last_id, self.path)
            self._check_unchanged()
            try:
                writev_all(self.fs, fd, line, self.path)
                if durable:
                    self.fs.fdatasync(fd)
            except BaseException:
                self.fd = -1
                try:
                    self._roll_back(fd, line, durable)
                finally:
                    self.fs.close(fd)
                raise
            self.last_seq = checkpoint.seq
            self.last_id = checkpoint.checkpoint_id
            self.end += sum(map(len, line))
            if durable:
                self.unsynced = 0
                self.syncs += 1
            else:
                self.unsynced += 1
            return True

    def sync(self, unless_since: int | None = None) -> None:
        """Make the records written since the last sync durable (no-op if there are none).

        ``unless_since``: a value ``syncs`` had; if a sync has come since, do nothing. A batch
        window's timer passes the value it was armed with: its records are durable already,
        and the ones written since belong to a later window, which has a timer of its own.

        A failure is kept in ``sync_failed``: records already acknowledged may be lost in an OS
        crash, so the next append raises it instead of acknowledging more on top of them.
        """
        with self.lock:
            if self.unsynced == 0 or self.fd < 0 or self.sync_failed is not None:
                return
            if unless_since is not None and self.syncs != unless_since:
                return
            try:
                self.fs.fdatasync(self.fd)
            except OSError as exc:
                self.sync_failed = exc
                return
            self.unsynced = 0
            self.syncs += 1

    def _check_unchanged(self) -> None:
        """Refuse (now and for good) unless the path still names this file, this long."""
        try:
            st = self.fs.lstat(self.path)
        except FileNotFoundError:
            what = "was deleted or moved away"
        else:
            if (st.st_dev, st.st_ino) != self.identity:
                what = "was replaced by another file"
            elif st.st_size > self.end:
                what = f"grew by {st.st_size - self.end} bytes that another writer appended"
            elif st.st_size < self.end:
                what = f"was cut back by {self.end - st.st_size} bytes"
            else:
                return
        self.changed = JournalChangedError(
            self.path,
            f"the journal {what} since this process last appended seq {self.last_seq}; "
            "refusing to append (another process may be driving this run): the run stops here",
        )
        raise self.changed

    def _roll_back(self, fd: int, line: Sequence[bytes | memoryview], durable: bool) -> None:
        """Cut off the part of ``line`` that reached the file after a failed append.

        A write can report an error after its bytes landed, and a failed ``fdatasync`` leaves
        the record readable in the page cache; either way the caller is told the commit failed,
        so the record must not stay to be read back as committed (the engine would then find
        its next checkpoint refused as a fork). Only this append's own bytes are cut, checked
        byte for byte; if anything else is there, or the cut fails, the file is left for the
        next writer's recovery (a partial line is a torn tail; a whole one stays committed).
        """
        fs = self.fs
        try:
            landed = fs.fstat(fd).st_size - self.end
            if landed <= 0 or not _starts(line, fs.pread(fd, landed, self.end)):
                return
            fs.ftruncate(fd, self.end)
            if durable:
                fs.fdatasync(fd)
        except OSError:
            pass  # best effort: the error being raised is the one the caller must see

    def close(self, *, sync: bool = False) -> None:
        """Close the descriptor (idempotent); with ``sync``, sync unsynced records first."""
        if sync:
            self.sync()
        with self.lock:
            fd, self.fd = self.fd, -1
            if fd >= 0:
                self.fs.close(fd)


def _starts(line: Sequence[bytes | memoryview], data: bytes) -> bool:
    """Whether ``data`` is a prefix of the buffers of ``line`` joined (compared in place)."""
    done = 0
    for part in line:
        piece = memoryview(part)[: len(data) - done]
        if piece != data[done : done + len(piece)]:
            return False
        done += len(piece)
    return done == len(data)


def _recover(
    fs: FileSystem, fd: int, st: os.stat_result, path: str, run_id: str, durable: bool
) -> tuple[int, str | None, int, str | None]:
    """Truncate a torn tail; return the journal's head seq, id and checksum, and where records end.

    The head is ``-1, None`` (checksum None) if the journal holds no record.
    """
    if not stat.S_ISREG(st.st_mode):
        raise CheckpointCorruptError(path, "journal is not a regular file")
    tail = read_tail(fs, fd, st.st_size)
    if tail.committed_end < st.st_size:
        fs.ftruncate(fd, tail.committed_end)
        if durable:
            fs.fdatasync(fd)
    if tail.line is None:
        return -1, None, tail.committed_end, None
    head = decode_record(tail.line, f"{path} (last record, byte {tail.offset})")
    if head.run_id != run_id:
        raise CheckpointCorruptError(path, f"last record belongs to run {head.run_id!r}")
    return head.seq, head.checkpoint_id, tail.committed_end, record_crc(tail.line)


def symlink_error(path: str, exc: OSError) -> Exception:
    """Turn the error of an ``O_NOFOLLOW`` open of a symbolic link into a corruption report."""
    if exc.errno in _SYMLINK_ERRNOS:
        return CheckpointCorruptError(path, "journal is a symbolic link, not followed")
    return exc
