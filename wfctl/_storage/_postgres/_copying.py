"""A run copied into PostgreSQL: written in one transaction, read back in it, then committed.

The copy holds the run's lease (so nobody drives it meanwhile) and writes the records the
database lacks on the lease's connection inside one transaction, a batch of records a
statement, each row checked by the append trigger as a save is. The records are then read back
in the same transaction and compared with the source's bytes, and only then committed: until
the commit no other session sees any of them (not ``runs``, not a worker's claim, not a resume),
and a copy killed part way is rolled back by the server when its connection ends. A run the
database held already (an earlier copy of a shorter chain) stays as it was until the commit.

A record is stored as the source stores it (``record`` is ``bytea``, never parsed), so its
bytes and checksum are the source's.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncGenerator
from typing import TYPE_CHECKING, Any, Final

import psycopg

from wfctl._checkpoint import Checkpoint
from wfctl._errors import CheckpointCorruptError, RunNotFoundError
from wfctl._storage._pages import paged_lines

from ._lease import PostgresLease

if TYPE_CHECKING:
    from ._store import PostgresCheckpointStorage

__all__ = ["TransactionCopy"]

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
#: A page of the run's records, as this transaction sees them.
_READ_BACK: Final = (
    "SELECT record FROM wfctl_checkpoints WHERE run_id = %s AND seq > %s ORDER BY seq LIMIT %s"
)


class TransactionCopy:
    """One run being copied into PostgreSQL (see the module's docstring)."""

    atomic = True

    def __init__(self, store: PostgresCheckpointStorage, lease: PostgresLease) -> None:
        self._store, self._lease = store, lease
        self._run_id = lease.run_id
        self._batch: list[tuple[Checkpoint, bytes]] = []
        self._begun = False
        self._committed = False

    async def held(self) -> AsyncGenerator[bytes, None]:
        try:
            _, _, lines = await paged_lines(self._store, self._run_id)
        except RunNotFoundError:
            return  # a new run (or a row leased, never written to)
        async with contextlib.aclosing(lines):
            async for line, _ in lines:
                yield line

    async def keep(self, line: bytes, checkpoint: Checkpoint) -> None:
        pass  # the database holds it

    async def add(self, line: bytes, checkpoint: Checkpoint) -> None:
        if not self._begun:
            await self._execute("BEGIN")
            self._begun = True
        self._batch.append((checkpoint, line))
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
        if self._begun:
            await self._execute("COMMIT")
        self._committed = True

    async def close(self) -> None:
        try:
            if self._begun and not self._committed:
                with contextlib.suppress(psycopg.Error):
                    await self._lease.execute("ROLLBACK")
        finally:
            await self._lease.release()

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
