"""A run copied into PostgreSQL: written under the copy's mark, read back, then shown whole.

The copy holds the run's lease (so nobody drives it meanwhile) and, before its first record,
marks the run as being copied (``copy_seq``, schema version 3) with its head at -1: from then on
no read, listing, claim, pause or resume of the database sees the run, and the append trigger
moves the mark, not the head, as records come (each still checked as the next link, under the
lease's fence). The records go a batch a statement, each statement its own transaction (one
transaction for the whole run would update the run's row once per record, and a row updated
again and again in one transaction costs each update more than the last). Once every record
is read back as the source's bytes, one statement moves the head to the copy's last record and
clears the mark: the run appears whole.

A copy killed part way leaves its records under the mark, seen by nothing; the next copy of
that run deletes them and starts again, and so does the next removal (``gc``, ``rm``: see
``PostgresCheckpointStorage.delete_runs``). A copy refused (not killed) puts back what the
destination showed before (an earlier copy of a shorter chain) at once.

A record is stored as the source stores it (``record`` is ``bytea``, never parsed), so its
bytes and checksum are the source's.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncGenerator
from typing import TYPE_CHECKING, Any, Final

import psycopg

from wfctl._errors import CheckpointCorruptError, RunNotFoundError, StoreLocationError
from wfctl._records._checkpoint import Checkpoint
from wfctl._storage._capabilities import stored_records

from ._lease import PostgresLease

if TYPE_CHECKING:
    from ._reads import PostgresReads

__all__ = ["MarkedCopy"]

#: Records inserted by one statement.
_BATCH: Final = 1000
#: One batch of records: arrays of their columns, inserted in seq order (the trigger checks
#: each link as it comes).
_INSERT: Final = (
    "INSERT INTO wfctl_checkpoints (run_id, seq, kind, prev, workflow_name, ts, fence, record)"
    " SELECT %s, u.seq, u.kind, u.prev, u.wf, u.ts, %s, u.record FROM unnest(%s::bigint[],"
    " %s::text[], %s::text[], %s::text[], %s::text[], %s::bytea[])"
    " AS u(seq, kind, prev, wf, ts, record) ORDER BY u.seq"
)
#: A page of the run's records.
_READ_BACK: Final = (
    "SELECT record FROM wfctl_checkpoints WHERE run_id = %s AND seq > %s ORDER BY seq LIMIT %s"
)
#: Mark the run as being copied, hiding it, keeping the records it shows (their count given;
#: those past them, left by a copy killed part way, are deleted).
_MARK: Final = (
    "WITH gone AS (DELETE FROM wfctl_checkpoints WHERE run_id = %s AND seq >= %s)"
    " UPDATE wfctl_runs SET copy_seq = %s, head_seq = -1, claimable = false"
    " WHERE run_id = %s AND fence = %s"
)
#: Show the copy: the head moves to its last record, the mark goes.
_PUBLISH: Final = (
    "UPDATE wfctl_runs r SET head_seq = r.copy_seq, copy_seq = NULL, head_kind = c.kind,"
    " updated = c.ts, claimable = wfctl_claimable(c.kind, c.record) FROM wfctl_checkpoints c"
    " WHERE r.run_id = %s AND r.fence = %s AND r.copy_seq = %s AND c.run_id = r.run_id"
    " AND c.seq = r.copy_seq"
)
#: Drop a copy that is not shown: its records past those the run showed go, and the run shows
#: those again (none: no run).
_DISCARD: Final = (
    "WITH gone AS (DELETE FROM wfctl_checkpoints WHERE run_id = %s AND seq > %s),"
    " head AS (SELECT kind, ts, record FROM wfctl_checkpoints WHERE run_id = %s AND seq = %s)"
    " UPDATE wfctl_runs SET copy_seq = NULL, head_seq = %s,"
    " head_kind = (SELECT kind FROM head), updated = coalesce((SELECT ts FROM head), updated),"
    " claimable = coalesce((SELECT wfctl_claimable(kind, record) FROM head), false)"
    " WHERE run_id = %s AND fence = %s AND copy_seq IS NOT NULL"
)


class MarkedCopy:
    """One run being copied into PostgreSQL (see the module's docstring)."""

    atomic = True

    def __init__(self, store: PostgresReads, lease: PostgresLease) -> None:
        self._store, self._lease = store, lease
        self._run_id = lease.run_id
        self._batch: list[tuple[Checkpoint, bytes]] = []
        self._held = 0  # the records the run showed, kept
        self._last = -1  # the seq of the last record added
        self._marked = False
        self._published = False

    async def held(self) -> AsyncGenerator[bytes, None]:
        lines = stored_records(self._store, self._run_id)  # a page at a time
        async with contextlib.aclosing(lines):
            try:
                async for line, _ in lines:
                    yield line
            except RunNotFoundError:
                return  # a new run (or a row leased, never written to, or a killed copy's)

    async def keep(self, line: bytes, checkpoint: Checkpoint) -> None:
        self._held, self._last = checkpoint.seq + 1, checkpoint.seq

    async def add(self, line: bytes, checkpoint: Checkpoint) -> None:
        if not self._marked:
            run, fence = self._run_id, self._lease.fence
            cursor = await self._execute(_MARK, (run, self._held, self._held - 1, run, fence))
            self._changed(cursor.rowcount)
            self._marked = True
        self._batch.append((checkpoint, line))
        self._last = checkpoint.seq
        if len(self._batch) >= _BATCH:
            await self._flush()

    async def _flush(self) -> None:
        batch, self._batch = self._batch, []
        if not batch:
            return
        records = [checkpoint for checkpoint, _ in batch]
        params = (
            self._run_id,
            self._lease.fence,
            [checkpoint.seq for checkpoint in records],
            [checkpoint.kind.value for checkpoint in records],
            [checkpoint.previous_checkpoint_id for checkpoint in records],
            [checkpoint.workflow_name for checkpoint in records],
            [checkpoint.timestamp for checkpoint in records],
            [line for _, line in batch],
        )
        await self._execute(_INSERT, params)

    async def staged(self) -> AsyncGenerator[bytes, None]:
        await self._flush()
        after = -1
        while True:
            cursor = await self._execute(_READ_BACK, (self._run_id, after, _BATCH))
            rows = await cursor.fetchall()
            for row in rows:
                record = row[0]
                assert isinstance(record, bytes | memoryview), "a bytea column"
                yield bytes(record)
            if len(rows) < _BATCH:
                return
            after += len(rows)

    async def publish(self) -> None:
        if self._marked:
            params = (self._run_id, self._lease.fence, self._last)
            self._changed((await self._execute(_PUBLISH, params)).rowcount)
        self._published = True

    async def close(self) -> None:
        try:
            if self._marked and not self._published and not self._lease.lost:
                run, shown = self._run_id, self._held - 1
                params = (run, shown, run, shown, shown, run, self._lease.fence)
                with contextlib.suppress(CheckpointCorruptError, StoreLocationError):
                    await self._execute(_DISCARD, params)
        finally:
            await self._lease.release()

    def _changed(self, rowcount: int) -> None:
        """Refuse a statement on the run's row that found it other than the copy left it."""
        if rowcount != 1:
            raise CheckpointCorruptError(
                self._store._source(self._run_id),
                "the run changed in the destination while it was copied (its lease was taken over)",
            )

    async def _execute(
        self, query: str, params: tuple[object, ...] | None = None
    ) -> psycopg.AsyncCursor[tuple[Any, ...]]:
        """One statement on the lease's connection (inside the copy's transaction).

        Raises:
            CheckpointCorruptError: the append trigger refused a record.
            StoreLocationError: the server cannot be reached.
        """
        try:
            return await self._lease.execute(query, params)
        except psycopg.errors.RaiseException as exc:
            message = exc.diag.message_primary or str(exc)
            raise CheckpointCorruptError(
                self._store._source(self._run_id), f"the database refused the copy: {message}"
            ) from None
        except psycopg.Error as exc:
            raise self._store._unreachable(exc) from None
