"""The PostgreSQL store's reads: each record verified as the file store verifies its lines."""

from __future__ import annotations

import itertools
from collections.abc import AsyncGenerator, AsyncIterator
from typing import Any, Final

from wfctl._errors import CheckpointCorruptError, RunNotFoundError
from wfctl._records._checkpoint import Checkpoint, validate_run_id
from wfctl._records._refs import Resolver, holds_refs
from wfctl._storage._base import broken_summary, load_checkpoint, strict_chain, summarize
from wfctl._storage._follow import FollowedRecords
from wfctl._storage._journal import check_journal, check_version, decode_record, resolve_or_keep
from wfctl._storage._pages import (
    PAGE_RECORDS,
    ChainEnds,
    check_pages,
    decode_ends,
    head_mismatch,
    paged_records,
)
from wfctl._storage._protocol import JournalProblem, RunJournal, RunSummary

from . import _sql
from ._connection import PostgresConnections

__all__ = ["PostgresReads"]

#: Rows of :data:`_sql.RECORDS_OF`: run id, head seq, workflow name, held, record.
_Row = tuple[Any, ...]
#: Runs read by one statement of :meth:`PostgresReads.stream_runs` (about 3 MB of records for
#: runs of ten steps of 100-character values).
PAGE_RUNS: Final = 500
#: Records from which :meth:`PostgresReads.stream_runs` leaves a run to be read by itself, a
#: page of records at a time (a page's worth, :data:`~wfctl._storage._pages.PAGE_RECORDS`).
LONG_RUN: Final = PAGE_RECORDS
#: Rows of a listing fetched at a time (about 2 MB of records of 100-character values).
LIST_ROWS: Final = 5000


class PostgresReads(PostgresConnections):
    """The read methods of the run store protocol, on the store's tables."""

    async def read_run(self, run_id: str) -> RunJournal:
        """Return every record of the run, naming each one that fails its checksum or decoding.

        Never raises for a corrupt record: it is a problem of the journal returned.

        Raises:
            InvalidIdError: ``run_id`` is malformed.
            RunNotFoundError: the run has no committed checkpoint.
        """
        validate_run_id(run_id)
        rows = await self._rows(_sql.RUN_RECORDS, (run_id,))
        if not rows or int(rows[0][0]) < 0:  # no row, or leased but never started
            raise RunNotFoundError(run_id)
        return self._journal(run_id, int(rows[0][0]), _records(rows, 1))

    def _journal(self, run_id: str, head_seq: int, records: list[bytes]) -> RunJournal:
        source = self._source(run_id)
        checkpoints: list[Checkpoint] = []
        problems: list[JournalProblem] = []
        resolver = Resolver(source)
        for line, record in enumerate(records, 1):
            where = f"{source}:{line}"
            try:
                checkpoint = decode_record(record, where)
                check_version(checkpoint, checkpoints[0] if checkpoints else None, where)
                checkpoint = resolve_or_keep(resolver, checkpoint, where)
            except CheckpointCorruptError as exc:
                problems.append(JournalProblem(exc.where, exc.reason, line))
            else:
                checkpoints.append(checkpoint)
        if len(records) != head_seq + 1:
            problems.append(JournalProblem(source, head_mismatch(head_seq, len(records))))
        return RunJournal(run_id, tuple(checkpoints), tuple(problems), 0, source, head_seq)

    async def stream_runs(
        self, *, workflow_name: str | None = None
    ) -> AsyncIterator[RunJournal | str]:
        """Every run's journal (of one workflow's runs), oldest first: ``verify-lineage``.

        One statement per page of :data:`PAGE_RUNS` runs, each run read whole with its head
        (``head_seq``), as :meth:`read_run` reads one; no connection is held between pages. A
        run of :data:`LONG_RUN` records or more comes as its id instead: the caller reads it
        by itself (:meth:`verified_records`), so a page holds at most that many records a run.
        A run created while the pages are read is in a later page if it sorts after the last
        one read; a run removed meanwhile is not read. Runs whose row lost its creation time
        (changed by hand) come last, so that none is left out.
        """
        for statement in (_sql.RUNS_PAGE, _sql.UNDATED_RUNS_PAGE):
            after: tuple[Any, Any] = ("", "")
            while True:
                params = {"wf": workflow_name, "created": after[0], "run": after[1]}
                rows = await self._rows(statement, params | {"n": PAGE_RUNS, "long": LONG_RUN - 1})
                runs = 0
                for rid, group in itertools.groupby(rows, lambda r: r[0]):
                    found = list(group)
                    runs += 1
                    head_seq = int(found[0][1])
                    if head_seq >= LONG_RUN - 1:
                        yield str(rid)
                    else:
                        yield self._journal(str(rid), head_seq, _records(found, 3))
                if runs < PAGE_RUNS:
                    break
                after = (rows[-1][2], rows[-1][0])

    async def load_chain(self, run_id: str) -> list[Checkpoint]:
        """Return the run's checkpoints ``0..n-1``, verified as one chain (for restore).

        Raises:
            InvalidIdError: ``run_id`` is malformed.
            RunNotFoundError: the run has no committed checkpoint.
            CheckpointCorruptError: a record fails verification or the chain is broken.
        """
        return strict_chain(await self.read_run(run_id), resolved_as_read=True)

    async def load(self, checkpoint_id: str) -> Checkpoint:
        """Return one checkpoint, read strictly with its whole run.

        Raises:
            InvalidIdError: the id is malformed.
            CheckpointNotFoundError: no such run or seq.
            CheckpointCorruptError: the run does not verify.
        """
        return await load_checkpoint(self.load_chain, checkpoint_id)

    async def _records_of(
        self, run_id: str | None, workflow_name: str | None
    ) -> list[tuple[str, list[_Row]]]:
        """Every record of the matching runs, grouped by run, runs in creation order."""
        rows = await self._rows(_sql.RECORDS_OF, {"run": run_id, "wf": workflow_name})
        return [(str(rid), list(group)) for rid, group in itertools.groupby(rows, lambda r: r[0])]

    async def list_checkpoints(
        self, *, workflow_name: str | None = None, run_id: str | None = None
    ) -> list[Checkpoint]:
        """Return matching checkpoints, each run in chain order, runs oldest first (strict).

        Raises:
            CheckpointCorruptError: a matching run does not verify.
        """
        return [cp for chain in await self._chains(workflow_name, run_id) for cp in chain]

    async def list_checkpoint_ids(
        self, *, workflow_name: str | None = None, run_id: str | None = None
    ) -> list[str]:
        """Return the ids of :meth:`list_checkpoints`."""
        return [cp.checkpoint_id for cp in await self.list_checkpoints(
            workflow_name=workflow_name, run_id=run_id
        )]  # fmt: skip

    async def _chains(
        self, workflow_name: str | None, run_id: str | None
    ) -> list[list[Checkpoint]]:
        if run_id is not None:
            validate_run_id(run_id)
        chains: list[list[Checkpoint]] = []
        for rid, rows in await self._records_of(run_id, workflow_name):
            journal = self._journal(rid, int(rows[0][1]), _records(rows, 4))
            chain = strict_chain(journal, resolved_as_read=True)
            if workflow_name is not None:
                chain = [cp for cp in chain if cp.workflow_name == workflow_name]
            if chain:
                chains.append(chain)
        chains.sort(key=lambda c: (c[0].timestamp, c[0].run_id))
        return chains

    async def get_latest(
        self, *, workflow_name: str | None = None, run_id: str | None = None
    ) -> Checkpoint | None:
        """Return the newest head among matching runs (the run's head with ``run_id``), or None.

        Raises:
            CheckpointCorruptError: the head found does not verify (never skipped for an older
                record), or is not the run's last record (its pointer moved by hand).
        """
        if run_id is not None:
            rows = await self._rows(_sql.HEAD_OF_RUN, {"run": validate_run_id(run_id)})
        else:
            rows = await self._rows(_sql.NEWEST_HEAD, {"wf": workflow_name})
        if not rows:
            return None
        found = rows[0]
        rid, head_seq, top, record = str(found[0]), int(found[1]), found[2], found[3]
        source = self._source(rid)
        if record is None or top != head_seq:
            raise CheckpointCorruptError(
                source, head_mismatch(head_seq, 0 if top is None else top + 1)
            )
        head = decode_record(bytes(record), f"{source} (head)")
        if workflow_name is not None and head.workflow_name != workflow_name:
            return None
        # Its step arguments' references resolve from the records before it: read with them.
        return await self.load(head.checkpoint_id) if holds_refs(head) else head

    async def follow_records(
        self, run_id: str, after_seq: int, limit: int | None = None
    ) -> FollowedRecords | None:
        """The run's records past ``after_seq`` (at most ``limit``), its head seq and whether
        it is leased, in one statement (``wfctl log --follow``); None if the run has no row (it
        was removed).

        The records are returned as stored (the caller verifies each one as it reads it).
        """
        params = {"run": run_id, "after": after_seq, "n": limit}
        rows = await self._rows(_sql.FOLLOW, params, binary=True)
        if not rows:
            return None
        return FollowedRecords(int(rows[0][0]), bool(rows[0][1]), _records(rows, 2))

    async def chain_ends(self, run_id: str) -> ChainEnds | None:
        """The run's root and head records as stored, its head seq and whether it is leased,
        in one statement (``wfctl log`` reads the rest a page at a time: :meth:`chain_page`);
        None if the run has no committed checkpoint.

        Raises:
            InvalidIdError: ``run_id`` is malformed.
        """
        validate_run_id(run_id)
        rows = await self._rows(_sql.CHAIN_ENDS, (run_id,), binary=True)
        if not rows or int(rows[0][0]) < 0:  # no row, or leased but never started
            return None
        head_seq = int(rows[0][0])
        records = {int(row[2]): bytes(row[3]) for row in rows if row[3] is not None}
        top = rows[0][4]
        return ChainEnds(
            self._source(run_id),
            head_seq,
            bool(rows[0][1]),
            records.get(0),
            records.get(head_seq),
            -1 if top is None else int(top),
        )

    async def verified_records(
        self, run_id: str
    ) -> tuple[str, int, AsyncGenerator[Checkpoint, None]]:
        """The run as ``verify-lineage`` judges it while it reads it: where it is, its head's
        seq and its records, each verified as read, a page at a time (see
        :func:`~wfctl._storage._pages.paged_records`)."""
        return await paged_records(self, validate_run_id(run_id))

    async def chain_page(
        self, run_id: str, after_seq: int, last_seq: int, limit: int
    ) -> list[bytes]:
        """The run's records of seqs ``after_seq + 1`` to ``last_seq``, at most ``limit``, in
        order and as stored (the caller verifies them: :mod:`wfctl._storage._pages`).

        Results in binary: a record comes as its bytes, not as hexadecimal text to decode (half
        the bytes sent, and 2.6 s less CPU per million records here).
        """
        params = {"run": run_id, "after": after_seq, "last": last_seq, "n": limit}
        rows = await self._rows(_sql.CHAIN_PAGE, params, binary=True)
        return _records(rows, 0)

    async def list_runs(self, *, workflow_name: str | None = None) -> list[RunSummary]:
        """Return one summary per run, oldest first, each run verified whole (one query).

        A run whose records do not all verify is listed as ``corrupt`` with its problem.
        ``running`` means its lease is held (by any process), read from ``pg_locks``.

        The query's rows are fetched :data:`LIST_ROWS` at a time through a server-side cursor
        (one statement, one snapshot), and each run is summarised once its rows are in: the
        listing holds one run's records at a time, however many the store holds. A run of
        :data:`LONG_RUN` records or more comes without its records and is summarised after, as
        :meth:`run_summary` summarises it (a page of its records at a time).
        """
        summaries: list[RunSummary] = []
        long_runs: list[str] = []
        params = {"run": None, "wf": workflow_name, "long": LONG_RUN - 1}
        async with (
            self._connection() as conn,
            conn.transaction(),  # a server-side cursor lives in a transaction
            conn.cursor(name="wfctl_list_runs", binary=True) as cursor,
        ):
            await cursor.execute(_sql.SHORT_RUN_RECORDS, params)
            run_id: Any = None
            rows: list[_Row] = []
            while batch := await cursor.fetchmany(LIST_ROWS):
                for row in batch:
                    if row[0] != run_id:
                        if rows:
                            self._listed(rows, summaries, long_runs)
                        run_id, rows = row[0], []
                    rows.append(row)
            if rows:
                self._listed(rows, summaries, long_runs)
        for long_run in long_runs:
            summary = await self._long_summary(long_run)
            if summary is not None:  # else removed since it was listed
                summaries.append(summary)
        summaries.sort(key=lambda s: (s.created, s.run_id))
        return summaries

    def _listed(self, rows: list[_Row], summaries: list[RunSummary], long_runs: list[str]) -> None:
        """Summarise a run's rows of :data:`_sql.SHORT_RUN_RECORDS`, or name it a long run."""
        run_id = str(rows[0][0])
        if int(rows[0][1]) >= LONG_RUN - 1:
            long_runs.append(run_id)
        else:
            summaries.append(self._summary(run_id, rows))

    async def run_summary(self, run_id: str) -> RunSummary:
        """Return one run's summary, verified whole as :meth:`list_runs` does.

        Raises:
            InvalidIdError: ``run_id`` is malformed.
            RunNotFoundError: the run has no committed checkpoint.
        """
        params = {"run": validate_run_id(run_id), "wf": None, "long": LONG_RUN - 1}
        rows = await self._rows(_sql.SHORT_RUN_RECORDS, params)
        summary = None
        if rows and int(rows[0][1]) >= LONG_RUN - 1:
            summary = await self._long_summary(run_id)
        elif rows:
            summary = self._summary(run_id, rows)
        if summary is None:
            raise RunNotFoundError(run_id)
        return summary

    async def _long_summary(self, run_id: str) -> RunSummary | None:
        """The summary of a long run (:meth:`_paged_summary`), or, if it does not verify so,
        of its whole read, which says what is wrong; None if it is gone."""
        summary = await self._paged_summary(run_id)
        if summary is not None:
            return summary
        groups = await self._records_of(run_id, None)
        return self._summary(*groups[0]) if groups else None

    async def _paged_summary(self, run_id: str) -> RunSummary | None:
        """The summary of a run of :data:`LONG_RUN` records or more, its records verified a
        page at a time (:func:`~wfctl._storage._pages.check_pages`) and only its ends decoded;
        None if it does not verify so (the caller reads it whole, to say what is wrong)."""
        ends = await self.chain_ends(run_id)
        decoded = None if ends is None else decode_ends(ends, run_id)
        if ends is None or decoded is None:
            return None
        try:
            await check_pages(self, run_id, ends)
        except CheckpointCorruptError:
            return None
        leased = ends.leased
        return summarize(*decoded, lambda: leased)

    def _summary(self, run_id: str, rows: list[_Row]) -> RunSummary:
        """Verify every checksum and link of a run (decoding only its ends) and summarise it."""
        source = self._source(run_id)
        head_seq, workflow_name, locked = int(rows[0][1]), rows[0][2], bool(rows[0][3])
        records = _records(rows, 4)
        try:
            ends = check_journal(records, source, run_id)
            last = len(records)
            if ends is None or last != head_seq + 1:
                raise CheckpointCorruptError(source, head_mismatch(head_seq, last))
            root = decode_record(ends[0], f"{source}:1")
            head = root if last == 1 else decode_record(ends[1], f"{source}:{last}")
        except CheckpointCorruptError as exc:
            wf = workflow_name if isinstance(workflow_name, str) else None
            return broken_summary(run_id, wf, JournalProblem.from_error(exc))
        return summarize(root, head, lambda: locked)


def _records(rows: list[_Row], column: int) -> list[bytes]:
    """The records of a run's rows (a run whose records are all gone has one row, without)."""
    return [bytes(row[column]) for row in rows if row[column] is not None]
