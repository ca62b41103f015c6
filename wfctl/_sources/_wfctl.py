"""wfctl's own stores (file and PostgreSQL) as sources, read through their ``RunStore`` reads.

Nothing here parses a journal: runs are the store's summaries (``list_runs``), records are
what :func:`~wfctl._storage._capabilities.stored_records` yields (each verified, checksum and
link, before it is given, with its bytes as stored), a record by id is read with its run as
``wfctl show`` reads it, and ``verify`` is ``verify-lineage``'s
:func:`~wfctl._inspect._lineage.verify_lineage`. Every coroutine runs on one event loop the source keeps
from its first read to :meth:`WfctlSource.close` (a PostgreSQL store's connections belong to the
loop that opened them).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import stat
from collections.abc import AsyncGenerator, Coroutine, Generator, Iterator
from typing import TYPE_CHECKING, Any, TypeVar

from wfctl._errors import (
    CheckpointCorruptError,
    CheckpointNotFoundError,
    RunNotFoundError,
    StoreLocationError,
)
from wfctl._records._checkpoint import Checkpoint, split_checkpoint_id, validate_run_id
from wfctl._redact import redact
from wfctl._storage._capabilities import stored_records
from wfctl._storage._file import FileCheckpointStorage
from wfctl._storage._open import open_storage
from wfctl._storage._protocol import RunStore, RunSummary

from ._protocol import ClosingSource, Entry, RunInfo, SizeInfo, by_kind

if TYPE_CHECKING:
    from wfctl._inspect._lineage import LineageReport

__all__ = ["WfctlSource", "entry_of"]

T = TypeVar("T")


class WfctlSource(ClosingSource):
    """A wfctl store (a directory or a ``postgresql://`` URL) as a read-only :class:`Source`.

    Raises:
        StoreLocationError: (from the constructor) the directory does not exist or is not a
            store, or the URL is not one wfctl reads.
    """

    def __init__(self, location: str | os.PathLike[str]) -> None:
        self._store: RunStore = open_storage(location, must_exist=True)
        self._runner: asyncio.Runner | None = None
        self._file = isinstance(self._store, FileCheckpointStorage)

    @property
    def kind(self) -> str:
        """``wfctl-file`` or ``wfctl-postgresql``."""
        return "wfctl-file" if self._file else "wfctl-postgresql"

    @property
    def location(self) -> str:
        """The store's directory, or its URL with the password shown as ``***``."""
        return redact(self._store.location)

    def _run(self, coro: Coroutine[Any, Any, T]) -> T:
        """Run ``coro`` on the source's event loop (made on first use).

        Before a server's first read, its schema is looked at (see :func:`_check_schema`).
        """
        if self._runner is None:
            if not self._file:
                try:
                    _check_schema(self._store.location)
                except BaseException:
                    coro.close()
                    raise
            self._runner = asyncio.Runner()
        return self._runner.run(coro)

    def _iterate(self, generator: AsyncGenerator[T, None]) -> Iterator[T]:
        """Yield what ``generator`` yields, one step at a time on the source's loop."""

        async def step() -> tuple[bool, T | None]:
            try:
                return True, await anext(generator)
            except StopAsyncIteration:
                return False, None

        try:
            while True:
                more, item = self._run(step())
                if not more:
                    return
                yield item  # type: ignore[misc]  # more: the generator gave an item
        finally:
            if self._runner is not None:
                self._run(generator.aclose())

    def runs(self, *, workflow: str | None = None) -> Iterator[RunInfo]:
        """Yield each run, oldest first, as ``wfctl runs`` lists it (each verified whole).

        The file store's size is its run directory's files; a server's is None (see
        :meth:`sizes`). Both stores list their summaries whole: neither reads them a run at a
        time through its ``RunStore`` reads.
        """
        store = self._store
        if isinstance(store, FileCheckpointStorage):
            summaries = store.run_summaries(workflow_name=workflow)  # no event loop needed
        else:
            summaries = self._run(store.list_runs(workflow_name=workflow))
        for summary in summaries:
            yield self._info(summary)

    def run_names(self) -> list[str]:
        """Return every run's id, in any order, without reading any run: a file store's run
        directories (one directory listing), a server's ids (one query)."""
        store = self._store
        if isinstance(store, FileCheckpointStorage):
            return self._run(store.run_ids())
        # the other store wfctl opens from a location is PostgresCheckpointStorage, whose
        # all_run_ids is not part of RunStore (which promises no cheap listing of names)
        names: list[str] = self._run(store.all_run_ids())  # type: ignore[attr-defined]
        return names

    def run_info(self, run_id: str) -> RunInfo:
        """Return one run as :meth:`runs` lists it, reading that run only (verified whole).

        Raises:
            InvalidIdError: the id is malformed.
            RunNotFoundError: no such run.
        """
        return self._info(self._one(run_id))

    def _info(self, summary: RunSummary) -> RunInfo:
        broken = summary.head_seq < 0
        return RunInfo(
            run_id=summary.run_id,
            workflow=summary.workflow_name,
            status=summary.status.value,
            head_id=None if broken else summary.head_checkpoint_id,
            created_at=summary.created,
            updated_at=summary.updated,
            record_count=0 if broken else summary.head_seq + 1,
            size_bytes=self._run_size(summary.run_id),
            origin=summary.origin_checkpoint_id,
            problem=summary.problem,
        )

    def _run_size(self, run_id: str) -> int | None:
        """The bytes of a file store's run directory (its files, links not followed)."""
        if not self._file:
            return None
        total = 0
        with contextlib.suppress(OSError), os.scandir(self._run_directory(run_id)) as entries:
            for entry in entries:
                info = entry.stat(follow_symlinks=False)
                if stat.S_ISREG(info.st_mode):
                    total += info.st_size
        return total

    def _run_directory(self, run_id: str) -> str:
        return os.path.join(self._store.location, "runs", run_id)

    def records(self, run_id: str) -> Iterator[Entry]:
        """Yield the run's records, root first, each verified (checksum, link) before it is
        given: a file store's journal read once, a server's a page at a time.

        Raises:
            InvalidIdError: the run id is malformed (at once).
            RunNotFoundError: no such run (when the iteration starts).
            CheckpointCorruptError: a record fails (while iterating, after the ones before).
        """
        validate_run_id(run_id)
        return self._records(run_id)

    def _records(self, run_id: str) -> Generator[Entry, None, None]:
        for line, checkpoint in self._iterate(stored_records(self._store, run_id)):
            yield entry_of(checkpoint, len(line))

    def record(self, entry_id: str) -> Entry:
        """Return the record ``RUN.SEQ``, every record before it verified with it.

        Raises:
            InvalidIdError: the id is malformed.
            CheckpointNotFoundError: no such run, or no such seq in it.
            CheckpointCorruptError: a record up to it cannot be trusted.
        """
        run_id, seq = split_checkpoint_id(entry_id)
        entries = self._records(run_id)
        try:
            for entry in entries:
                if entry.order == seq:
                    return entry
        except RunNotFoundError:
            raise CheckpointNotFoundError(entry_id) from None
        finally:
            entries.close()
        raise CheckpointNotFoundError(entry_id)

    def sizes(self, run_id: str | None = None) -> Iterator[SizeInfo]:
        """Yield each run's bytes, counted from its records as stored (by kind).

        A run whose records cannot all be read is counted up to the first that fails, naming
        it; a file store's run counts its whole directory.

        Raises:
            InvalidIdError, RunNotFoundError: ``run_id`` names no run.
        """
        if run_id is not None:
            infos: Iterator[RunInfo] = iter([self._info(self._one(run_id))])
        else:
            infos = self.runs()
        for info in infos:
            yield self._size(info)

    def _one(self, run_id: str) -> RunSummary:
        return self._run(self._store.run_summary(validate_run_id(run_id)))

    def _size(self, info: RunInfo) -> SizeInfo:
        """Count the run's records as stored, each verified (checksum, link) as it comes.

        The count needs a record's kind and bytes only: no record is decoded into an entry,
        and the whole count is one coroutine on the source's loop, not one loop trip a record.
        """
        kinds: dict[str, list[int]] = {}
        problem: list[str] = []

        async def count() -> None:
            records = stored_records(self._store, info.run_id)
            try:
                async for line, checkpoint in records:
                    counted = kinds.setdefault(checkpoint.kind.value, [0, 0])
                    counted[0] += 1
                    counted[1] += len(line)
            except (CheckpointCorruptError, RunNotFoundError) as exc:
                problem.append(str(exc))
            finally:
                await records.aclose()

        self._run(count())
        stored = sum(size for _, size in kinds.values())
        total = max(stored, info.size_bytes or 0)
        records = sum(number for number, _ in kinds.values())
        reason = problem[0] if problem else info.problem
        return SizeInfo(info.run_id, total, records, by_kind(kinds), reason)

    def store_size_bytes(self) -> int | None:
        """A server's bytes: the relations (tables, their indexes and TOAST) of its wfctl
        schema, as the server counts them; None for a directory (its files are walked)."""
        return None if self._file else _relation_bytes(self._store.location)

    def verify(self, run_id: str | None = None) -> LineageReport:
        """Verify every run (or ``run_id``) as ``wfctl verify-lineage`` does.

        Raises:
            InvalidIdError: ``run_id`` is malformed.
            RunNotFoundError: ``run_id`` names no run.
        """
        from wfctl._inspect._lineage import verify_lineage

        wanted = () if run_id is None else (validate_run_id(run_id),)
        report = self._run(verify_lineage(self._store, wanted))
        for verdict in report.runs:
            if verdict.checkpoints == 0 and verdict.problems == ("run not found",):
                raise RunNotFoundError(verdict.run_id)
        return report

    def close(self) -> None:
        """Close the store's connections and the source's event loop (idempotent)."""
        runner, self._runner = self._runner, None
        if runner is None:
            return
        try:
            runner.run(self._store.aclose())
        finally:
            runner.close()


def _check_schema(url: str) -> None:
    """Refuse a database whose wfctl schema the store would write on its first use.

    The PostgreSQL store creates its tables in a database that has none, and upgrades an
    older schema, when it first connects: a source never writes, so it reads neither (one
    connection of its own, two ``SELECT`` statements).

    Raises:
        StoreLocationError: the database holds no wfctl schema, or an older one, or cannot
            be reached.
    """
    import psycopg

    from wfctl._storage._postgres._connection import failure_text
    from wfctl._storage._postgres._schema import SCHEMA_VERSION

    try:
        with psycopg.connect(url, autocommit=True) as conn:
            row = conn.execute("SELECT to_regclass('wfctl_schema') IS NOT NULL").fetchone()
            version = None
            if row is not None and row[0]:
                found = conn.execute("SELECT max(version) FROM wfctl_schema").fetchone()
                version = None if found is None else found[0]
    except psycopg.Error as exc:
        raise StoreLocationError(
            url, f"cannot be reached: {failure_text(exc, url)}", unreachable=True
        ) from None
    if version is None:
        raise StoreLocationError(url, "holds no wfctl store (no wfctl schema): nothing to read")
    if version < SCHEMA_VERSION:
        raise StoreLocationError(
            url,
            f"holds wfctl schema version {version}, which reading it would upgrade to "
            f"{SCHEMA_VERSION}: a source does not write (open it once with wfctl runs to upgrade)",
        )


def _relation_bytes(url: str) -> int | None:
    """The bytes of the ``wfctl_*`` tables of ``url``'s database with their indexes and TOAST
    (``pg_total_relation_size``), in a read-only transaction; None when it cannot be read."""
    import psycopg

    query = (
        "SELECT coalesce(sum(pg_total_relation_size(c.oid)), 0)::bigint FROM pg_class c"
        " WHERE c.relkind IN ('r', 'p') AND c.relname LIKE 'wfctl\\_%' AND pg_table_is_visible(c.oid)"
    )
    try:
        with psycopg.connect(url) as conn:
            conn.read_only = True
            row = conn.execute(query).fetchone()
    except psycopg.Error:
        return None
    return None if row is None else int(row[0])


def entry_of(checkpoint: Checkpoint, size: int) -> Entry:
    """Return a wfctl record as an :class:`Entry` (its data the record as stored).

    The summary is what ``wfctl log`` shows of it (steps, requests, answers, error), which
    also checks that its data reads as its kind's.

    Raises:
        CheckpointCorruptError: its data does not read as its kind's.
    """
    from wfctl._inspect._entries import log_entry

    shown = log_entry(checkpoint).to_json()
    summary = {"workflow": checkpoint.workflow_name} | {
        key: value
        for key, value in shown.items()
        if key not in ("checkpoint_id", "seq", "kind", "created_at")
    }
    parent = checkpoint.previous_checkpoint_id
    return Entry(
        entry_id=checkpoint.checkpoint_id,
        run_id=checkpoint.run_id,
        parent_ids=() if parent is None else (parent,),
        order=checkpoint.seq,
        kind=str(checkpoint.kind.value),
        time=checkpoint.timestamp,
        summary=summary,
        data=checkpoint.to_dict(),
        size_bytes=size,
    )
