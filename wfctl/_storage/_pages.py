"""Reading a run a page of records at a time: ``log``, ``log --follow``, ``export`` and ``show``
of a database store (on an event loop of their own, :class:`PagedRun`), and ``verify-lineage``,
``copy`` and a long run's summary (on the caller's loop: :func:`paged_records`,
:func:`check_pages`).

A database store hands out a run's ends (:class:`ChainEnds`: the root and head records as
stored, the head's seq, whether the run is leased, the highest seq it holds) in one statement,
and its records a page at
a time (``page(after_seq, last_seq, limit)``: the records of seqs ``after_seq + 1`` to
``last_seq``, at most ``limit``, in order). What is read is verified as the file store verifies
its journal (:func:`~._journal.decode_chain`: every checksum and link, each record decoded only
if it is asked for), so a long run is read in memory that does not grow with its length, and
its first entry shows once the first page is read.
"""

from __future__ import annotations

import contextlib
import weakref
from collections import deque
from collections.abc import AsyncGenerator, Callable, Coroutine, Iterable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final, Protocol, TypeVar, runtime_checkable

from wfctl._errors import CheckpointCorruptError, RunNotFoundError
from wfctl._records._checkpoint import Checkpoint, Kind
from wfctl._records._refs import READ_BACK, Resolver, holds_refs

from ._journal import (
    LinesBefore,
    check_journal,
    check_version,
    decode_chain,
    decode_checked,
    decode_record,
)

if TYPE_CHECKING:
    import asyncio

__all__ = [
    "PAGE_RECORDS",
    "ChainEnds",
    "LineAt",
    "PagedRun",
    "PagedStore",
    "check_pages",
    "checked_records",
    "decode_ends",
    "head_mismatch",
    "paged_lines",
    "paged_records",
    "record_pages",
]

T = TypeVar("T")

#: Records read by one statement (about 2 MB of records of 100-character values).
PAGE_RECORDS: Final = 4096

#: ``page(after_seq, last_seq, limit)``: see the module docstring.
Page = Callable[[int, int, int], list[bytes]]


@dataclass(frozen=True, slots=True)
class ChainEnds:
    """A run's root and head records as stored, read in one statement (not yet verified)."""

    #: The run as errors name it (``<store> run <id>``).
    source: str
    #: The seq of the run's head, as the store says.
    head_seq: int
    #: Whether a process holds the run's lease.
    leased: bool
    #: The record of seq 0, None if it is missing.
    root: bytes | None
    #: The record of ``head_seq``, None if it is missing.
    head: bytes | None
    #: The highest seq the run holds, read with the rest (-1: none; a head pointer that
    #: disagrees with the records shows as another seq than ``head_seq``).
    top_seq: int


def decode_ends(ends: ChainEnds, run_id: str) -> tuple[Checkpoint, Checkpoint] | None:
    """The run's root and head, each verified; None if anything about them is amiss: a record
    missing or failing, or a head that is not the run's last record (its pointer moved by
    hand below the records, or past them).

    None sends the caller to read the run whole, which names the first problem as every
    reading command names it. Every read of a run by its ends goes through here (``log``,
    ``export``, ``show``, ``log --follow``, a restore's and ``copy``'s reads, ``verify-lineage``,
    a long run's summary), so none of them shows a run cut short by its head.
    """
    if ends.root is None or ends.head is None or ends.top_seq != ends.head_seq:
        return None
    source = ends.source
    try:
        root = decode_record(ends.root, f"{source}:1")
        head = (
            root
            if ends.head_seq == 0
            else decode_record(ends.head, f"{source}:{ends.head_seq + 1}")
        )
        check_version(head, root, f"{source}:{ends.head_seq + 1}")
    except CheckpointCorruptError:
        return None
    if root.run_id != run_id or root.seq != 0 or root.kind != Kind.ROOT:
        return None
    if head.run_id != run_id or head.seq != ends.head_seq:
        return None
    return root, head


def head_mismatch(head_seq: int, records: int) -> str:
    """Say that a run's head pointer disagrees with its records: every read that finds it so
    (a whole read, a follower's look) refuses the run with this reason."""
    held = f"{records} records (seq 0..{records - 1})" if records else "no records"
    return f"the run's head is seq {head_seq} but it holds {held}"


def record_pages(page: Page, last_seq: int, size: int) -> Iterator[bytes]:
    """Yield a run's records of seqs 0 to ``last_seq``, reading ``size`` records a page, the
    next page when the last is used.

    Each page starts after as many records as were yielded: a reader that verifies each record
    as the next link (:func:`~._journal.decode_chain`) stops at a missing one before the next
    page is asked for.
    """
    after = -1
    while after < last_seq:
        records = page(after, last_seq, size)
        yield from records
        if len(records) < size:
            return
        after += len(records)


def checked_records(
    lines: Iterable[bytes],
    source: str,
    run_id: str,
    wanted: range,
    head_seq: int,
    known: dict[bytes, Checkpoint],
    what: str,
) -> Iterator[Checkpoint]:
    """The records of ``wanted`` among ``lines`` (a run's records from seq 0), each yielded
    once it and every record before it verified (those before ``wanted`` are checked only).

    ``known`` holds lines already decoded (the root's and head's, as the run's summary read
    them), which are not decoded again: the record of ``head_seq`` must be the head's line.

    Raises:
        CheckpointCorruptError: a record fails, or the head is not the line read for the
            summary or ``lines`` end before ``wanted`` does ("the ``what`` changed while it
            was read": ``what`` names the journal or the run).
    """
    wanted = wanted[: head_seq + 1]
    if not wanted:
        return
    last_seq = wanted[-1]
    for line, checkpoint in decode_chain(lines, source, run_id, known, wanted[0]):
        if checkpoint.seq == last_seq:
            if last_seq == head_seq and line not in known:
                # not the head the summary read
                raise CheckpointCorruptError(
                    f"{source}:{last_seq + 1}", f"the {what} changed while it was read"
                )
            yield checkpoint
            return
        yield checkpoint
    raise CheckpointCorruptError(source, f"the {what} changed while it was read (it ends early)")


class LineAt:
    """Keeps the line of one seq from a run's lines (from seq 0) as they pass through
    :meth:`watch`: what ``wfctl show`` decodes once the whole run verified, with the
    :data:`~wfctl._records._refs.READ_BACK` lines before it, which hold what its step arguments
    and result may refer to.
    """

    def __init__(self, seq: int) -> None:
        self.seq = seq
        #: The line of ``seq``, once read (None: not read, or the run is shorter).
        self.line: bytes | None = None
        #: How many lines passed.
        self.count = 0
        self._before: deque[bytes] = deque(maxlen=READ_BACK)

    def watch(self, lines: Iterable[bytes]) -> Iterator[bytes]:
        """Yield ``lines``, keeping the one of :attr:`seq` and those before it."""
        for line in lines:
            if self.count == self.seq:
                self.line = line
            elif self.count < self.seq and self.count >= self.seq - READ_BACK:
                self._before.append(line)
            self.count += 1
            yield line

    def checkpoint(self, source: str) -> Checkpoint | None:
        """The record of :attr:`seq` (None if not read), decoded once its run verified, the
        references in its step arguments resolved from the lines kept before it.

        Raises:
            CheckpointCorruptError: a reference names no result before it.
        """
        if self.line is None:
            return None
        where = f"{source}:{self.seq + 1}"
        checkpoint = decode_checked(self.line, where)
        if not holds_refs(checkpoint):
            return checkpoint  # the lines before it are not decoded
        behind = LinesBefore(Resolver(source), self.seq)
        first = self.seq - len(self._before)
        behind.lines = [
            (at, line, f"{source}:{at + 1}")
            for at, line in enumerate(self._before, first)
            if b'"kind":"step"' in line[:300]
        ]
        return behind.resolve(checkpoint, where)


@runtime_checkable
class PagedStore(Protocol):
    """What :class:`PagedRun` needs of a store (the PostgreSQL store has it)."""

    async def chain_ends(self, run_id: str) -> ChainEnds | None: ...

    async def chain_page(
        self, run_id: str, after_seq: int, last_seq: int, limit: int
    ) -> list[bytes]: ...

    async def aclose(self) -> None: ...


async def paged_records(
    storage: PagedStore, run_id: str, resolver: Resolver | None = None
) -> tuple[str, int, AsyncGenerator[Checkpoint, None]]:
    """A run's source, its head's seq and its records, read a page at a time on the caller's
    event loop and each verified as :func:`checked_records` verifies it (``verify-lineage``,
    in memory that does not grow with the run). ``resolver`` resolves their references and
    changes (one is made if None).

    Raises:
        InvalidIdError: the run id is malformed.
        RunNotFoundError: the run has no committed checkpoint.
        CheckpointCorruptError: its ends do not verify, or it holds records past its head
            (read it whole to say why); while iterating, see :func:`checked_records`.
    """
    source, head_seq, lines = await paged_lines(storage, run_id, resolver)
    return source, head_seq, _records_of(lines)


async def _records_of(
    lines: AsyncGenerator[tuple[bytes, Checkpoint], None],
) -> AsyncGenerator[Checkpoint, None]:
    async with contextlib.aclosing(lines):
        async for _, checkpoint in lines:
            yield checkpoint


async def paged_lines(
    storage: PagedStore, run_id: str, resolver: Resolver | None = None
) -> tuple[str, int, AsyncGenerator[tuple[bytes, Checkpoint], None]]:
    """:func:`paged_records`, each record yielded with its bytes as stored (``copy`` keeps
    them).

    Raises:
        As :func:`paged_records`.
    """
    ends = await storage.chain_ends(run_id)
    if ends is None:
        raise RunNotFoundError(run_id)
    decoded = decode_ends(ends, run_id)
    if decoded is None:
        raise CheckpointCorruptError(ends.source, "its root or head does not verify")
    if resolver is None:  # one for the run: a reference may reach a page before
        resolver = Resolver(ends.source)
    pages = _pages_checked(storage, run_id, ends, *decoded, resolver)
    return ends.source, ends.head_seq, pages


async def _pages_checked(
    storage: PagedStore,
    run_id: str,
    ends: ChainEnds,
    root: Checkpoint,
    head: Checkpoint,
    resolver: Resolver,
) -> AsyncGenerator[tuple[bytes, Checkpoint], None]:
    known = {line: cp for line, cp in ((ends.root, root), (ends.head, head)) if line is not None}
    async for start, page in _run_pages(storage, run_id, ends):
        for pair in decode_chain(
            page, ends.source, run_id, known, start=start, root=ends.root or b"", resolver=resolver
        ):
            yield pair


async def check_pages(storage: PagedStore, run_id: str, ends: ChainEnds) -> None:
    """Verify every record of a run up to the head read with ``ends`` as
    :func:`~._journal.check_journal` does (every checksum and link, nothing decoded), a page of
    records at a time, each page checked as it comes (its records name their seqs and parents).

    Raises:
        CheckpointCorruptError: a record fails, or the records no longer end at that head.
    """
    async for start, page in _run_pages(storage, run_id, ends):
        check_journal(page, ends.source, run_id, start=start, root=ends.root or b"")


async def _run_pages(
    storage: PagedStore, run_id: str, ends: ChainEnds
) -> AsyncGenerator[tuple[int, list[bytes]], None]:
    """A run's records up to the head read with ``ends``, a page at a time, each with the seq
    it starts at: the first page must start with the root read with the ends, and the last
    end with the head (checked before it is yielded), or the run changed since they were read.

    Raises:
        CheckpointCorruptError: the run changed since its ends were read.
    """
    after = -1
    while after < ends.head_seq:
        page = await storage.chain_page(run_id, after, ends.head_seq, PAGE_RECORDS)
        last = after + len(page)
        if (
            not page
            or (after < 0 and page[0] != ends.root)
            or (last == ends.head_seq and page[-1] != ends.head)
            or (last < ends.head_seq and len(page) < PAGE_RECORDS)
        ):
            break
        yield after + 1, page
        after = last
    if after != ends.head_seq:
        raise CheckpointCorruptError(
            ends.source, "the run changed while it was read (it ends early)"
        )


def _check_to_head(lines: Iterable[bytes], ends: ChainEnds, run_id: str) -> None:
    """Check a run's ``lines`` (from seq 0) as one chain ending at the head read with ``ends``.

    Raises:
        CheckpointCorruptError: a record fails, or the lines do not end at that head.
    """
    checked = check_journal(lines, ends.source, run_id)
    if checked is None or checked[1] != ends.head:
        raise CheckpointCorruptError(
            ends.source, "the run changed while it was read (it ends early)"
        )


class PagedRun:
    """One run of a database store, read a page at a time on an event loop of its own.

    The store's connections belong to the loop that opened them, so the loop is kept from the
    first statement to the last page; :meth:`close` closes the store and the loop (so does
    dropping the object, for a reader left unfinished).
    """

    #: Records read by one statement.
    page_records: int = PAGE_RECORDS

    def __init__(self, storage: PagedStore, run_id: str) -> None:
        import asyncio  # here, not at import: a file store's commands need no event loop

        self.storage, self.run_id = storage, run_id
        self._runner = asyncio.Runner()
        self.close = weakref.finalize(self, _close, self._runner, storage)

    @classmethod
    def opened(
        cls, storage: PagedStore, run_id: str
    ) -> tuple[PagedRun, tuple[ChainEnds, Checkpoint, Checkpoint]] | None:
        """A reader of the run and its verified :meth:`ends`; None (the reader closed) if the
        run has no committed checkpoint or its ends do not verify: read it whole to say which.

        Raises:
            InvalidIdError: the run id is malformed (the reader closed).
        """
        reader = cls(storage, run_id)
        try:
            found = reader.ends()
        except BaseException:
            reader.close()
            raise
        if found is None:
            reader.close()
            return None
        return reader, found

    def run(self, coro: Coroutine[Any, Any, T]) -> T:
        """Run ``coro`` to its end on this reader's loop."""
        return self._runner.run(coro)

    def ends(self) -> tuple[ChainEnds, Checkpoint, Checkpoint] | None:
        """The run's ends as stored and its root and head, verified; None if the run has no
        committed checkpoint or its ends do not verify (read it whole to say which).

        Raises:
            InvalidIdError: the run id is malformed.
        """
        ends = self.run(self.storage.chain_ends(self.run_id))
        decoded = None if ends is None else decode_ends(ends, self.run_id)
        return None if ends is None or decoded is None else (ends, *decoded)

    def page(self, after_seq: int, last_seq: int, limit: int) -> list[bytes]:
        """The records of seqs ``after_seq + 1`` to ``last_seq``, at most ``limit``."""
        return self.run(self.storage.chain_page(self.run_id, after_seq, last_seq, limit))

    def records(
        self, wanted: range, ends: ChainEnds, root: Checkpoint, head: Checkpoint
    ) -> Iterator[Checkpoint]:
        """The run's records of ``wanted``, verified as :func:`checked_records` verifies them,
        read a page at a time; the reader is closed when they end (or fail).

        Raises:
            CheckpointCorruptError: see :func:`checked_records`.
        """
        try:
            wanted = wanted[: head.seq + 1]
            if wanted:
                ends_read = ((ends.root, root), (ends.head, head))
                known = {line: cp for line, cp in ends_read if line is not None}
                yield from checked_records(
                    record_pages(self.page, wanted[-1], self.page_records),
                    ends.source,
                    self.run_id,
                    wanted,
                    head.seq,
                    known,
                    "run",
                )
        finally:
            self.close()

    def record_at(self, seq: int, ends: ChainEnds, head: Checkpoint) -> Checkpoint | None:
        """The run's record of ``seq`` once every record up to the head verified (checksum and
        link, read a page at a time, only this one decoded); None past the head. The reader is
        closed.

        Raises:
            CheckpointCorruptError: a record fails verification, the chain is broken, or its
                records no longer end at the head read with the ends.
        """
        try:
            if seq > head.seq:
                return None
            picked = LineAt(seq)
            lines = picked.watch(record_pages(self.page, head.seq, self.page_records))
            _check_to_head(lines, ends, self.run_id)
            if picked.line is None:
                raise CheckpointCorruptError(
                    ends.source, "the run changed while it was read (it ends early)"
                )
            return picked.checkpoint(ends.source)
        finally:
            self.close()


def _close(runner: asyncio.Runner, storage: PagedStore) -> None:
    try:
        runner.run(storage.aclose())
    finally:
        runner.close()
