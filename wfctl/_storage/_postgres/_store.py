"""``PostgresCheckpointStorage``: a run store in a PostgreSQL database (psycopg 3, async).

Constructed from a URL without connecting; the first call in an event loop opens a connection
pool there (and creates or checks the schema, see :mod:`._schema`). Each checkpoint is one
``INSERT`` in its own transaction, checked by the database's append trigger; reads verify each
record's checksum as the file store does.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
from collections.abc import AsyncIterator, Collection, Sequence
from typing import Any

import psycopg
from psycopg import AsyncConnection
from psycopg.rows import TupleRow
from psycopg_pool import AsyncConnectionPool

from wfctl._checkpoint import Checkpoint, checkpoint_id_for, split_checkpoint_id, validate_run_id
from wfctl._errors import (
    CheckpointCorruptError,
    CheckpointNotFoundError,
    RunLockedError,
    RunNotFoundError,
    StoreLocationError,
)
from wfctl._storage._base import broken_summary, check_append, strict_chain, summarize
from wfctl._storage._journal import check_journal, decode_record, encode_record
from wfctl._storage._open import redact
from wfctl._storage._protocol import JournalProblem, RunJournal, RunSummary

from . import _sql
from ._lease import GRANT, PostgresLease, holder_text, lock_or_none, locked_error
from ._schema import ensure_schema

__all__ = ["PostgresCheckpointStorage"]

Connection = AsyncConnection[TupleRow]
#: Rows of :data:`_sql.RECORDS_OF`: run id, head seq, workflow name, held, record.
_Row = tuple[Any, ...]


class PostgresCheckpointStorage:
    """Runs in a PostgreSQL database: one row per checkpoint, the chain guarded by the schema.

    ``save`` appends only to a run this object holds the lease of (:meth:`lease_run` or
    :meth:`claim_run`): it carries that lease's fence, and the database refuses a fence that
    is no longer the run's. Every other method may be called without a lease.
    """

    def __init__(self, url: str, *, max_connections: int = 8) -> None:
        self._url = url
        self._location = redact(url)
        self._max = max_connections
        self._pool: AsyncConnectionPool[Connection] | None = None
        self._opening: asyncio.Task[AsyncConnectionPool[Connection]] | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        #: run id -> each lease this object holds.
        self._leases: dict[str, PostgresLease] = {}

    def __repr__(self) -> str:
        return f"PostgresCheckpointStorage({self._location!r})"

    @property
    def location(self) -> str:
        """The store's URL, without its password."""
        return self._location

    # -- connections -------------------------------------------------------------------------

    async def _ready(self) -> AsyncConnectionPool[Connection]:
        """Return the pool of this event loop, opening it (and checking the schema) at first use."""
        loop = asyncio.get_running_loop()
        if self._loop is not loop:  # first use, or a new loop: the old pool cannot serve it
            self._loop, self._pool, self._opening = loop, None, None
        if self._pool is not None:
            return self._pool
        if self._opening is None:
            self._opening = loop.create_task(self._open())
        try:
            self._pool = await asyncio.shield(self._opening)
        except BaseException:
            if self._opening is not None and self._opening.done():
                self._opening = None  # let the next call try again
            raise
        return self._pool

    async def _open(self) -> AsyncConnectionPool[Connection]:
        # A direct connection first: a server that cannot be reached says why at once (a pool
        # would retry in the background until its timeout).
        async with await psycopg.AsyncConnection.connect(self._url, autocommit=True) as conn:
            await ensure_schema(conn, self._location)
        pool: AsyncConnectionPool[Connection] = AsyncConnectionPool(
            self._url,
            min_size=1,
            max_size=self._max,
            kwargs={"autocommit": True, "prepare_threshold": 0},
            open=False,
            timeout=10.0,
            name="wfctl",
        )
        await pool.open(wait=True, timeout=10.0)
        return pool

    @contextlib.asynccontextmanager
    async def _connection(self) -> AsyncIterator[Connection]:
        """Lend a pooled connection; a failure of the server becomes a one-line WfctlError."""
        try:
            pool = await self._ready()
            async with pool.connection() as conn:
                yield conn
        except psycopg.Error as exc:
            raise self._unreachable(exc) from None

    def _unreachable(self, exc: psycopg.Error) -> StoreLocationError:
        text = " ".join(str(exc).split()) or type(exc).__name__
        if isinstance(exc, psycopg.OperationalError):
            return StoreLocationError(self._location, f"cannot be reached: {text}")
        return StoreLocationError(self._location, f"refused a query: {text}")

    async def aclose(self) -> None:
        """Close the connection pool; leases keep their own connections and stay held."""
        pool, self._pool, self._opening = self._pool, None, None
        if pool is not None and self._loop is asyncio.get_running_loop():
            await pool.close()

    def _source(self, run_id: str) -> str:
        return f"{self._location} run {run_id}"

    # -- writing -----------------------------------------------------------------------------

    async def save(self, checkpoint: Checkpoint) -> None:
        """Append ``checkpoint`` to its run: one ``INSERT``, one transaction, one round trip.

        Only for a run this object holds the lease of; the database checks the link and the
        lease's fence and advances the head in the same transaction.

        Raises:
            InvalidIdError: the run id is malformed.
            CheckpointCorruptError: this object holds no lease on the run, its lease was taken
                over (a stale fence), or the checkpoint does not extend the run's head by
                exactly one link (wrong seq, wrong parent, a second root).
            StoreLocationError: the server cannot be reached (nothing was written, or the
                transaction committed whole: the next read says which).
            TypeError, ValueError: its data is not plain JSON.
        """
        run_id = validate_run_id(checkpoint.run_id)
        record = encode_record(checkpoint)[:-1]  # first: bad data changes nothing
        where = self._source(run_id)
        lease = self._leases.get(run_id)
        if lease is None or lease.lost:
            why = "holds no lease on" if lease is None else "lost its lease (connection ended) on"
            raise CheckpointCorruptError(
                where,
                f"refusing checkpoint seq {checkpoint.seq} ({checkpoint.kind}) of run "
                f"{run_id!r}: this store {why} the run; a writer without it cannot append",
            )
        fence = lease.fence
        params = (
            run_id,
            checkpoint.seq,
            str(checkpoint.kind),
            checkpoint.previous_checkpoint_id,
            checkpoint.workflow_name,
            checkpoint.timestamp,
            fence,
            record,
        )
        async with self._connection() as conn:
            try:
                await conn.execute(_sql.INSERT, params)
            except psycopg.errors.RaiseException as exc:
                raise _refusal(checkpoint, fence, exc, where) from None

    # -- leases and pauses -------------------------------------------------------------------

    async def lease_run(self, run_id: str) -> PostgresLease:
        """Take the run's lease: an advisory lock on a connection of its own, and a new fence.

        Raises:
            InvalidIdError: ``run_id`` is malformed.
            RunLockedError: someone holds it (any process, or another lease of this one).
            StoreLocationError: the server cannot be reached.
        """
        validate_run_id(run_id)
        async with self._connection() as conn:
            lease_conn = await lock_or_none(self._url, run_id)
            if lease_conn is None:
                raise await locked_error(conn, run_id)
        try:
            cursor = await lease_conn.execute(GRANT, (run_id, holder_text()))
            row = await cursor.fetchone()
        except BaseException as exc:
            await lease_conn.close()
            if isinstance(exc, psycopg.Error):
                raise self._unreachable(exc) from None
            raise
        assert row is not None, "an upsert with RETURNING returns its row"
        return self._granted(run_id, lease_conn, row)

    async def claim_run(self, exclude: Collection[str] = ()) -> PostgresLease | None:
        """Lease the oldest run a worker may take over, or return None if there is none.

        A run may be taken over when its head is a root, step or resume record (not ended,
        failed, cancelled or paused) and nobody holds its lease. The candidate's row is locked
        ``FOR UPDATE SKIP LOCKED`` while its lease is taken, so concurrent claimers (in any
        process) pass over it rather than wait or collide. ``exclude`` names runs not to take.

        Raises:
            StoreLocationError: the server cannot be reached.
        """
        skip = list(exclude)
        while True:
            async with self._connection() as conn, conn.transaction():
                cursor = await conn.execute(_sql.CLAIMABLE, (skip,))
                found = await cursor.fetchone()
                if found is None:
                    return None
                run_id = str(found[0])
                lease_conn = await lock_or_none(self._url, run_id)
                if lease_conn is None:  # taken between the look and the lock
                    skip.append(run_id)
                    continue
                try:
                    cursor = await conn.execute(GRANT, (run_id, holder_text()))
                    row = await cursor.fetchone()
                except BaseException:
                    await lease_conn.close()
                    raise
            assert row is not None, "an upsert with RETURNING returns its row"
            return self._granted(run_id, lease_conn, row)

    def _granted(self, run_id: str, conn: Connection, row: TupleRow) -> PostgresLease:
        def forget() -> None:
            if self._leases.get(run_id) is lease:
                del self._leases[run_id]

        lease = PostgresLease(run_id, conn, int(row[0]), bool(row[1]), forget)
        self._leases[run_id] = lease
        return lease

    async def request_pause(self, run_id: str) -> None:
        """Ask whoever drives the run to pause: set the run's flag and notify its lease.

        Raises:
            InvalidIdError: ``run_id`` is malformed.
            RunNotFoundError: no such run.
        """
        if not await self._set_pause(validate_run_id(run_id), True):
            raise RunNotFoundError(run_id)

    async def clear_pause(self, run_id: str) -> None:
        """Withdraw a pause request (no-op if there is none)."""
        await self._set_pause(validate_run_id(run_id), False)

    async def _set_pause(self, run_id: str, flag: bool) -> bool:
        note = f"{int(flag)}:{run_id}"
        async with self._connection() as conn:
            cursor = await conn.execute(_sql.PAUSE, {"flag": flag, "run": run_id, "note": note})
            return await cursor.fetchone() is not None

    # -- reading -----------------------------------------------------------------------------

    async def read_run(self, run_id: str) -> RunJournal:
        """Return every record of the run, naming each one that fails its checksum or decoding.

        Never raises for a corrupt record: it is a problem of the journal returned.

        Raises:
            InvalidIdError: ``run_id`` is malformed.
            RunNotFoundError: the run has no committed checkpoint.
        """
        validate_run_id(run_id)
        async with self._connection() as conn:
            cursor = await conn.execute(_sql.RUN_RECORDS, (run_id,))
            rows = await cursor.fetchall()
        records = [bytes(row[1]) for row in rows if row[1] is not None]
        if not records:
            raise RunNotFoundError(run_id)
        return self._journal(run_id, int(rows[0][0]), records)

    def _journal(self, run_id: str, head_seq: int, records: list[bytes]) -> RunJournal:
        source = self._source(run_id)
        checkpoints: list[Checkpoint] = []
        problems: list[JournalProblem] = []
        for line, record in enumerate(records, 1):
            try:
                checkpoints.append(decode_record(record, f"{source}:{line}"))
            except CheckpointCorruptError as exc:
                problems.append(JournalProblem(exc.where, exc.reason, line))
        if len(records) != head_seq + 1:
            problems.append(JournalProblem(source, _head_mismatch(head_seq, len(records))))
        return RunJournal(run_id, tuple(checkpoints), tuple(problems), 0, source)

    async def load_chain(self, run_id: str) -> list[Checkpoint]:
        """Return the run's checkpoints ``0..n-1``, verified as one chain (for restore).

        Raises:
            InvalidIdError: ``run_id`` is malformed.
            RunNotFoundError: the run has no committed checkpoint.
            CheckpointCorruptError: a record fails verification or the chain is broken.
        """
        return strict_chain(await self.read_run(run_id))

    async def load(self, checkpoint_id: str) -> Checkpoint:
        """Return one checkpoint, read strictly with its whole run.

        Raises:
            InvalidIdError: the id is malformed.
            CheckpointNotFoundError: no such run or seq.
            CheckpointCorruptError: the run does not verify.
        """
        run_id, seq = split_checkpoint_id(checkpoint_id)
        try:
            chain = await self.load_chain(run_id)
        except RunNotFoundError:
            raise CheckpointNotFoundError(checkpoint_id) from None
        if seq >= len(chain):
            raise CheckpointNotFoundError(checkpoint_id)
        return chain[seq]

    async def _records_of(
        self, run_id: str | None, workflow_name: str | None
    ) -> list[tuple[str, list[_Row]]]:
        """Every record of the matching runs, grouped by run, runs in creation order."""
        async with self._connection() as conn:
            cursor = await conn.execute(_sql.RECORDS_OF, {"run": run_id, "wf": workflow_name})
            rows = await cursor.fetchall()
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
            journal = self._journal(rid, int(rows[0][1]), [bytes(r[4]) for r in rows])
            chain = strict_chain(journal)
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
                record).
        """
        async with self._connection() as conn:
            if run_id is not None:
                cursor = await conn.execute(_sql.HEAD_OF_RUN, (validate_run_id(run_id),))
                found = await cursor.fetchone()
                rid = run_id
            else:
                cursor = await conn.execute(_sql.NEWEST_HEAD, {"wf": workflow_name})
                found = await cursor.fetchone()
                rid = "" if found is None else str(found[0])
        if found is None:
            return None
        head = decode_record(bytes(found[-1]), f"{self._source(rid)} (head)")
        if workflow_name is not None and head.workflow_name != workflow_name:
            return None
        return head

    async def list_runs(self, *, workflow_name: str | None = None) -> list[RunSummary]:
        """Return one summary per run, oldest first, each run verified whole (one query).

        A run whose records do not all verify is listed as ``corrupt`` with its problem.
        ``running`` means its lease is held (by any process), read from ``pg_locks``.
        """
        summaries = [
            self._summary(rid, rows) for rid, rows in await self._records_of(None, workflow_name)
        ]
        summaries.sort(key=lambda s: (s.created, s.run_id))
        return summaries

    async def run_summary(self, run_id: str) -> RunSummary:
        """Return one run's summary, verified whole as :meth:`list_runs` does.

        Raises:
            InvalidIdError: ``run_id`` is malformed.
            RunNotFoundError: the run has no committed checkpoint.
        """
        groups = await self._records_of(validate_run_id(run_id), None)
        if not groups:
            raise RunNotFoundError(run_id)
        return self._summary(*groups[0])

    def _summary(self, run_id: str, rows: list[_Row]) -> RunSummary:
        """Verify every checksum and link of a run (decoding only its ends) and summarise it."""
        source = self._source(run_id)
        head_seq, workflow_name, locked = int(rows[0][1]), rows[0][2], bool(rows[0][3])
        records = [bytes(row[4]) for row in rows]
        try:
            ends = check_journal(records, source, run_id)
            assert ends is not None, "a run listed has records"
            root = decode_record(ends[0], f"{source}:1")
            last = len(records)
            head = root if last == 1 else decode_record(ends[1], f"{source}:{last}")
            if last != head_seq + 1:
                raise CheckpointCorruptError(source, _head_mismatch(head_seq, last))
        except CheckpointCorruptError as exc:
            wf = workflow_name if isinstance(workflow_name, str) else None
            return broken_summary(run_id, wf, JournalProblem.from_error(exc))
        return summarize(root, head, lambda: locked)

    # -- deleting ----------------------------------------------------------------------------

    async def delete(self, checkpoint_id: str) -> bool:
        """Cut a run's chain at ``checkpoint_id`` (seq 0 removes the run); False if absent.

        One transaction, which takes the run's advisory lock for itself: a run someone drives
        is refused. A cut moves the run's fence on.

        Raises:
            InvalidIdError: the id is malformed.
            RunLockedError: the run is being driven.
        """
        run_id, seq = split_checkpoint_id(checkpoint_id)
        async with self._connection() as conn, conn.transaction():
            cursor = await conn.execute(_sql.CUT_START, (run_id,))
            row = await cursor.fetchone()
            if row is None or seq > int(row[0]):
                return False
            if row[1] is not True:
                raise await locked_error(conn, run_id)
            if seq == 0:
                await conn.execute(_sql.DELETE_RUN, {"run": run_id})
            else:
                await conn.execute(_sql.CUT, {"run": run_id, "seq": seq})
        return True

    async def delete_run(self, run_id: str) -> bool:
        """Remove a run whole; False if it did not exist.

        Raises:
            InvalidIdError: ``run_id`` is malformed.
            RunLockedError: the run is being driven.
        """
        return await self.delete(checkpoint_id_for(validate_run_id(run_id), 0))

    async def delete_runs(self, run_ids: Sequence[str]) -> tuple[list[str], list[RunLockedError]]:
        """Remove several runs: the ids removed, and the error of each run being driven (kept).

        Raises:
            InvalidIdError: a run id is malformed (nothing is removed).
        """
        for run_id in run_ids:
            validate_run_id(run_id)
        removed: list[str] = []
        locked: list[RunLockedError] = []
        for run_id in run_ids:
            try:
                if await self.delete_run(run_id):
                    removed.append(run_id)
            except RunLockedError as exc:
                locked.append(exc)
        return removed, locked


def _head_mismatch(head_seq: int, records: int) -> str:
    return f"the run's head is seq {head_seq} but it holds {records} records (seq 0..{records - 1})"


def _refusal(
    checkpoint: Checkpoint, fence: int, exc: psycopg.errors.RaiseException, where: str
) -> CheckpointCorruptError:
    """Turn the append trigger's refusal into the error the file store gives for it."""
    message = exc.diag.message_primary or ""
    _, _, rest = message.partition("wfctl:")
    what, _, value = rest.partition(":")
    run, seq = checkpoint.run_id, checkpoint.seq
    prefix = f"refusing checkpoint seq {seq} ({checkpoint.kind}) of run {run!r}: "
    if what == "head":
        head_seq = int(value)
        try:
            check_append(
                checkpoint,
                head_seq,
                checkpoint_id_for(run, head_seq) if head_seq >= 0 else None,
                where,
            )
        except CheckpointCorruptError as refused:
            return refused
    if what == "fence":
        return CheckpointCorruptError(
            where,
            f"{prefix}this store's lease on the run was taken over (fence {fence}, the run's "
            f"is now {value}); a writer that lost its lease cannot append",
        )
    if what == "nolease":
        return CheckpointCorruptError(where, f"{prefix}the run is not in the store (deleted?)")
    return CheckpointCorruptError(where, f"{prefix}the database refused it: {message}")
