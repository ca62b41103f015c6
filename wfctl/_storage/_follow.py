"""Following a run as it grows: the records committed since the last look.

A :class:`JournalFollower` (the file store) remembers how far it read (a byte offset) and the
last record it returned. :meth:`~JournalFollower.changed` costs one ``stat`` of the journal's
path and reads nothing; :meth:`~JournalFollower.read_new` reads only the bytes past the offset
and returns the complete records there, each verified (checksum, format) and checked to extend
the chain by one link (its run, seq and parent). A partial last line is a record still being
written, or a torn tail: it is left for the next read. A journal that was replaced, cut or
removed while followed is an error, never a silent restart.

A :class:`RecordsFollower` follows a run in a database (the PostgreSQL store) the same way, one
statement a look (:class:`FollowedRecords`): the records past the last one returned, the run's
head and whether its lease is held, all from one snapshot.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Coroutine, Iterator
from dataclasses import dataclass
from itertools import islice
from typing import Any, Final

from wfctl._errors import CheckpointCorruptError, WfctlError
from wfctl._records._checkpoint import Checkpoint
from wfctl._records._refs import Resolver

from ._appender import READ_FLAGS
from ._fs import FileSystem
from ._journal import check_journal, decode_checked, decode_record, read_lines
from ._lock import probe_locked
from ._pages import PAGE_RECORDS, Page, head_mismatch, record_pages

__all__ = ["FollowedRecords", "JournalFollower", "RecordsFollower", "check_next_link"]

_CHUNK: Final = 1 << 20


class JournalFollower:
    """Reads the records a run's journal gains, one link at a time."""

    def __init__(self, fs: FileSystem, path: str, run_id: str) -> None:
        self._fs = fs
        self.path = path
        self.run_id = run_id
        self._offset = 0
        self._line = 0
        self._identity: tuple[int, int] | None = None
        self._seen: tuple[int, int, int] | None = None
        #: The newest record returned so far (None before the first).
        self.head: Checkpoint | None = None
        #: Resolves the references in step arguments to the records read before (one to a
        #: record skipped stays as stored: it is shown as what it names).
        self._resolver = Resolver(path, partial=True)
        #: Whether the last read stopped short of what the journal held (a long backlog is
        #: read about :data:`_CHUNK` bytes at a time): read again at once.
        self.more = False

    def changed(self) -> bool:
        """Whether the journal's size or modification time moved since the last read (one stat),
        or the last read left committed bytes unread.

        Raises:
            WfctlError: the journal is gone (the run was removed while followed).
        """
        return self.more or self._stat() != self._seen

    def skip_to(self, seq: int) -> None:
        """Start past the records before ``seq``: verified (checksum, link) but not decoded, but
        for the last of them, which the next record must name as its parent.

        Only before the first read. A journal of fewer records is skipped whole.

        Raises:
            WfctlError: the journal is gone.
            CheckpointCorruptError: a record before ``seq`` fails verification.
        """
        if seq <= 0 or self._identity is not None:
            return
        fd = self._open()
        try:
            info = self._fs.fstat(fd)
            lines = _Measured(islice(read_lines(self._fs, fd, size=info.st_size), seq))
            ends = check_journal(lines, self.path, self.run_id)
        finally:
            self._fs.close(fd)
        if ends is None:
            return
        self._identity = (info.st_dev, info.st_ino)
        self._line = lines.count
        self._offset = lines.bytes
        self.head = decode_checked(ends[1], f"{self.path}:{lines.count}")

    def running(self) -> bool:
        """Whether a process holds the run's lock (a shared probe, dropped at once)."""
        return probe_locked(self.path)

    def read_new(self) -> list[Checkpoint]:
        """Return the complete records committed past the last read, in order.

        Raises:
            WfctlError: the journal is gone.
            CheckpointCorruptError: a record fails verification or does not extend the chain,
                or the journal was replaced or cut since the last read.
        """
        self._seen = self._stat()
        fd = self._open()
        try:
            info = self._fs.fstat(fd)
            identity = (info.st_dev, info.st_ino)
            if self._identity is not None and identity != self._identity:
                raise CheckpointCorruptError(self.path, "the journal was replaced while followed")
            self._identity = identity
            if info.st_size < self._offset:
                raise CheckpointCorruptError(self.path, "the journal was cut while followed")
            data = b""
            # A chunk at a time, to the first whole line past a chunk: memory stays flat when
            # a long run's backlog is read (``more`` says there is more to read).
            while len(data) < info.st_size - self._offset:
                chunk = self._fs.pread(fd, _CHUNK, self._offset + len(data))
                if not chunk:
                    break
                data += chunk
                if len(data) >= _CHUNK and b"\n" in chunk:
                    break
            self.more = len(data) < info.st_size - self._offset
        finally:
            self._fs.close(fd)
        return self._records(data)

    def _records(self, data: bytes) -> list[Checkpoint]:
        found: list[Checkpoint] = []
        start = 0
        while (end := data.find(b"\n", start)) >= 0:
            self._line += 1
            where = f"{self.path}:{self._line}"
            record = decode_record(data[start:end], where)
            check_next_link(self.head, record, self.run_id, where)
            found.append(self._resolver.resolve(record, where))
            self.head = record
            start = end + 1
        self._offset += start
        return found

    def _open(self) -> int:
        """Open the journal for reading (a gone journal: the run was removed while followed)."""
        try:
            return self._fs.open(self.path, READ_FLAGS)
        except FileNotFoundError:
            raise self._gone() from None

    def _stat(self) -> tuple[int, int, int]:
        try:
            info = self._fs.stat(self.path)
        except FileNotFoundError:
            raise self._gone() from None
        return info.st_ino, info.st_size, info.st_mtime_ns

    def _gone(self) -> WfctlError:
        run_dir = os.path.dirname(self.path)
        return WfctlError(f"run {self.run_id!r} was removed while followed ({run_dir} is gone)")


class _Measured:
    """Lines passed through, counted, with their bytes (each with its line feed)."""

    def __init__(self, lines: Iterator[bytes]) -> None:
        self._lines = lines
        self.count = 0
        self.bytes = 0

    def __iter__(self) -> Iterator[bytes]:
        for line in self._lines:
            self.count += 1
            self.bytes += len(line) + 1
            yield line


def check_next_link(head: Checkpoint | None, record: Checkpoint, run_id: str, where: str) -> None:
    """Refuse ``record`` unless it is ``run_id``'s next link after ``head`` (None: the root).

    Raises:
        CheckpointCorruptError: another run's record, or not the next seq naming ``head``.
    """
    seq = head.seq + 1 if head is not None else 0
    parent = head.checkpoint_id if head is not None else None
    if record.run_id != run_id:
        raise CheckpointCorruptError(where, f"record belongs to run {record.run_id!r}")
    if record.seq != seq or record.previous_checkpoint_id != parent:
        raise CheckpointCorruptError(
            where,
            f"{record.checkpoint_id} (parent {record.previous_checkpoint_id}) does not "
            f"extend the chain at seq {seq}",
        )


@dataclass(frozen=True, slots=True)
class FollowedRecords:
    """One look at a followed run in a database, from one snapshot."""

    #: The seq of the run's head.
    head_seq: int
    #: Whether a process holds the run's lease.
    leased: bool
    #: The records past the seq asked for, in order, as stored (not yet verified).
    records: list[bytes]


class RecordsFollower:
    """Reads the records a run in a database gains, one link at a time, one statement a look.

    ``look(run_id, after_seq, limit)`` is the store's :class:`FollowedRecords` of the run (at
    most ``limit`` records; None: the run is gone); ``run`` runs it to its end (the caller's
    event loop). Each look reads, so :meth:`changed` is always True; :meth:`running` answers
    from the last look, taken in the same snapshot as its records. A backlog is read a page of
    :data:`~._pages.PAGE_RECORDS` records a look (``more`` says another is due at once).
    """

    def __init__(
        self,
        look: Callable[[str, int, int], Coroutine[Any, Any, FollowedRecords | None]],
        run: Callable[[Coroutine[Any, Any, FollowedRecords | None]], FollowedRecords | None],
        run_id: str,
        source: str,
    ) -> None:
        self._look, self._run = look, run
        self.run_id, self.source = run_id, source
        self._leased = True
        #: The newest record returned so far (None before the first).
        self.head: Checkpoint | None = None
        #: As :class:`JournalFollower`'s.
        self._resolver = Resolver(source, partial=True)
        #: Whether the last look read a whole page: the next one is due at once.
        self.more = False

    def skip_to(self, seq: int, page: Page) -> None:
        """Start past the records before ``seq``, read by ``page`` (see :mod:`._pages`):
        verified (checksum, link) but not decoded, but for the last of them, which the next
        record must name as its parent.

        Only before the first look. A run of fewer records is skipped whole.

        Raises:
            CheckpointCorruptError: a record before ``seq`` fails verification.
        """
        if seq <= 0 or self.head is not None:
            return
        lines = _Measured(record_pages(page, seq - 1, PAGE_RECORDS))
        ends = check_journal(lines, self.source, self.run_id)
        if ends is not None:
            self.head = decode_checked(ends[1], f"{self.source}:{lines.count}")

    def changed(self) -> bool:
        """Always True: a look is one statement, which reads what is new."""
        return True

    def running(self) -> bool:
        """Whether a process held the run's lease at the last look."""
        return self._leased

    def read_new(self) -> list[Checkpoint]:
        """Return the records committed past the last one returned, in order.

        Raises:
            WfctlError: the run is gone (removed while followed).
            CheckpointCorruptError: a record fails verification or does not extend the chain,
                the run was cut back while followed, or its head disagrees with its records
                (records past it, or it past the last record: read in one snapshot, so never
                a race with a writer).
        """
        after = self.head.seq if self.head is not None else -1
        seen = self._run(self._look(self.run_id, after, PAGE_RECORDS))
        if seen is None:
            raise WfctlError(f"run {self.run_id!r} was removed while followed")
        if seen.head_seq < after:
            raise CheckpointCorruptError(
                self.source, f"the run was cut back to seq {seen.head_seq} while followed"
            )
        self._leased = seen.leased
        self.more = len(seen.records) == PAGE_RECORDS
        found: list[Checkpoint] = []
        for record in seen.records:
            where = f"{self.source}:{after + len(found) + 2}"
            checkpoint = decode_record(record, where)
            check_next_link(self.head, checkpoint, self.run_id, where)
            found.append(self._resolver.resolve(checkpoint, where))
            self.head = checkpoint
        last = after + len(found)
        if last > seen.head_seq or (last < seen.head_seq and not self.more):
            raise CheckpointCorruptError(self.source, head_mismatch(seen.head_seq, last + 1))
        return found
