"""``wfctl log`` as data: a run's chain as a timeline (``RunLog``), read as it is iterated from any store."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from wfctl._config import StoreRef
from wfctl._records._checkpoint import Checkpoint, validate_run_id
from wfctl._storage import FileCheckpointStorage, RunSummary
from wfctl._storage._base import RunStoreBase, summarize
from wfctl._storage._capabilities import load_chain
from wfctl._storage._open import on_store, open_storage
from wfctl._storage._pages import PagedRun, PagedStore
from wfctl._storage._protocol import RunStore

from ._documents import document, summary_json
from ._entries import WHOLE_CHAIN, LogEntry, LogPage, log_entry
from ._json_pages import _entry_json, _json_text, _UtcTimes

__all__ = ["RunLog", "read_chain", "run_log", "summary_and_chain"]


@dataclass(frozen=True, slots=True)
class RunLog:
    """A run's chain as a timeline, from its root to its head (or the page of it asked for).

    ``entries`` are read from the journal as they are iterated (memory stays flat however long
    the run is), so they can be iterated once; :meth:`to_json` iterates them.
    """

    summary: RunSummary
    entries: Iterable[LogEntry]
    #: The seqs ``entries`` holds, in order (every one, ``range(checkpoint_count)``, unless a
    #: :class:`LogPage` narrowed it).
    listed: range | None = None

    @property
    def checkpoint_count(self) -> int:
        """How many checkpoints the chain holds (its seqs are contiguous from 0: verified)."""
        return self.summary.head_seq + 1

    @property
    def seqs(self) -> range:
        """The seqs of the checkpoints listed."""
        return range(self.checkpoint_count) if self.listed is None else self.listed

    def _fields(self, checkpoints: list[Any]) -> dict[str, Any]:
        listed = self.seqs
        return {
            "run": summary_json(self.summary),
            "checkpoint_count": self.checkpoint_count,
            "first_listed_seq": listed.start,
            "listed_checkpoint_count": len(listed),
            "checkpoints": checkpoints,
        }

    def to_json(self) -> dict[str, Any]:
        """Return the ``wfctl/log@1`` document (see docs/json.md)."""
        return document("log", self._fields([e.to_json() for e in self.entries]))

    def json_text(self) -> Iterator[str]:
        """Yield :meth:`to_json`'s document as indented JSON text, a page of entries at a time.

        Each entry is written as it is read: a page holds text, not entries (whose steps hold
        their arguments and results). If reading an entry fails, the entries read before it are
        given before the error goes on (the document is then left unfinished).
        """
        utc = _UtcTimes()
        placed = document("log", self._fields([None]))
        return _json_text(placed, self.entries, lambda entry: _entry_json(entry, utc))


def run_log(
    store: StoreRef, run_id: str, *, must_exist: bool = True, page: LogPage = WHOLE_CHAIN
) -> RunLog:
    """Return the run's chain as a timeline, its entries read as they are iterated.

    From a file store, the summary is read from the run's root and head (both verified), and
    each entry is yielded only once its record and every one before it are verified (checksum
    and link) and decoded: the journal is read once, and the first entry shows at once. A
    record that fails raises while iterating, after the entries before it. A PostgreSQL store
    is read the same way, its records a page at a time (one statement for the
    ends, then one per :data:`~wfctl._storage._pages.PAGE_RECORDS` records), on an event loop kept
    until the entries end. Other stores give the whole chain verified first.

    ``page`` narrows the entries to part of the chain: from a file or PostgreSQL store the
    records before it are verified (checksum and link) without being decoded, and none after
    it is read.

    Raises:
        StoreLocationError: the store is missing (with ``must_exist``) or is not one.
        InvalidIdError, RunNotFoundError: no such run.
        CheckpointCorruptError: a record fails verification or the chain is broken (from a
            file store, any record but the root and head: while iterating).
    """
    summary, records, listed = read_chain(store, run_id, page, must_exist=must_exist)
    return RunLog(summary, map(log_entry, records), listed)


def read_chain(
    store: StoreRef, run_id: str, page: LogPage = WHOLE_CHAIN, *, must_exist: bool = True
) -> tuple[RunSummary, Iterator[Checkpoint], range]:
    """Return a run's summary, the records of ``page`` read as they are iterated, and their
    seqs: what :func:`run_log` lists, as checkpoints (see it for how each store is read).

    Raises:
        StoreLocationError: the store is missing (with ``must_exist``) or is not one.
        InvalidIdError, RunNotFoundError: no such run.
        CheckpointCorruptError: a record fails verification or the chain is broken (from a
            file or PostgreSQL store, any record but the root and head: while iterating).
    """
    storage = open_storage(store, must_exist=must_exist)
    if isinstance(storage, FileCheckpointStorage):
        # verified as they are read
        summary, records = storage.stream_checked_chain(run_id, page.seqs)
        return summary, records, page.seqs(summary.head_seq)
    if isinstance(storage, PagedStore) and (paged := PagedRun.opened(storage, run_id)):
        # a database: its records a page at a time
        reader, (ends, root, head) = paged
        listed = page.seqs(head.seq)
        summary = summarize(root, head, lambda: ends.leased)
        return summary, reader.records(listed, ends, root, head), listed

    summary, chain = on_store(
        store, lambda storage: summary_and_chain(storage, run_id), must_exist=must_exist
    )
    listed = page.seqs(summary.head_seq)
    return summary, iter(chain[listed.start : listed.stop]), listed


async def summary_and_chain(storage: RunStore, run_id: str) -> tuple[RunSummary, list[Checkpoint]]:
    """Return a run's summary and its strict chain, from any store.

    Raises:
        InvalidIdError, RunNotFoundError: no such run.
        CheckpointCorruptError: a record fails verification or the chain is broken.
    """
    chain = await load_chain(storage, validate_run_id(run_id))
    if isinstance(storage, RunStoreBase):
        return await storage.summary_of_chain(chain), chain
    return await storage.run_summary(run_id), chain
