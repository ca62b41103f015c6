"""``PostgresCheckpointStorage``: a run store in a PostgreSQL database (psycopg 3, async).

Each checkpoint is one ``INSERT`` in its own transaction, checked by the database's append
trigger (:mod:`._schema`); leases are advisory locks on connections of their own
(:mod:`._lease`); reads verify each record's checksum as the file store does (:mod:`._reads`).
"""

from __future__ import annotations

import json
import os
from collections.abc import Collection, Sequence
from typing import ClassVar

import psycopg

from wfctl._errors import (
    CheckpointCorruptError,
    LeaseLostError,
    RunLockedError,
    RunNotFoundError,
)
from wfctl._records._checkpoint import (
    Checkpoint,
    checkpoint_id_for,
    split_checkpoint_id,
    validate_run_id,
)
from wfctl._records._payloads import CancelRequest
from wfctl._storage._base import check_append, delete_each
from wfctl._storage._journal import encode_record

from . import _sql
from ._connection import Connection
from ._copying import MarkedCopy
from ._lease import (
    GRANT,
    PostgresLease,
    SpareConnections,
    holder_text,
    lease_or_none,
    locked_error,
)
from ._names import PostgresNames
from ._reads import PostgresReads

__all__ = ["PostgresCheckpointStorage"]


class PostgresCheckpointStorage(PostgresReads, PostgresNames):
    """Runs in a PostgreSQL database: one row per checkpoint, the chain guarded by the schema.

    ``save`` appends only to a run this object holds the lease of (:meth:`lease_run` or
    :meth:`claim_run`): it carries that lease's fence, and the database refuses a fence that
    is no longer the run's. Every other method may be called without a lease.
    """

    #: Its ``save`` enters nothing bound to the current task and waits only on plain futures
    #: (the lease's turn, then the reply its socket's reader resolves): the engine may start a
    #: sequential step's save in the caller, the rest going on in a task (``wfctl._engine._chain``).
    _SAVE_STARTS_ANYWHERE: ClassVar[bool] = True

    def __init__(self, url: str, *, max_connections: int = 8) -> None:
        super().__init__(url, max_connections=max_connections)
        #: run id -> each lease this object holds.
        self._leases: dict[str, PostgresLease] = {}
        #: Connections for the next leases: lease connections given back unlocked, and the
        #: one the schema was checked on (see ``_lease``).
        self._spares = SpareConnections(max_connections)

    def __repr__(self) -> str:
        return f"PostgresCheckpointStorage({self._location!r})"

    def _keep(self, conn: Connection) -> bool:
        """The connection the schema was checked on becomes the first lease's (a spare)."""
        return self._spares.give(conn, ready=False)

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
        if lease is None:
            raise CheckpointCorruptError(
                where,
                f"refusing checkpoint seq {checkpoint.seq} ({checkpoint.kind}) of run "
                f"{run_id!r}: this store holds no lease on the run; a writer without it cannot "
                "append",
            )
        if lease.lost:
            raise _lost(checkpoint, where)
        fence = lease.fence
        encoding = lease.encoding
        parent = checkpoint.previous_checkpoint_id
        params = (  # as _sql.PREPARE_SAVE declares them
            run_id.encode(encoding),
            b"%d" % checkpoint.seq,
            checkpoint.kind.encode(encoding),
            None if parent is None else parent.encode(encoding),
            checkpoint.workflow_name.encode(encoding),
            checkpoint.timestamp.encode(encoding),
            b"%d" % fence,
            record,
        )
        try:
            # On the connection holding the lease's lock: no pool checkout, and a save after
            # that connection ended (the lock with it) fails instead of landing unlocked.
            # Alone, it waits for its reply in place for a moment: no other run of this store
            # could use the event loop meanwhile (see PostgresLease.save).
            await lease.save(params, inline=len(self._leases) == 1)
        except psycopg.errors.RaiseException as exc:
            raise _refusal(checkpoint, fence, exc, where) from None
        except psycopg.Error as exc:
            if lease.lost:
                raise _lost(checkpoint, where, sent=True) from None
            raise self._unreachable(exc) from None

    # -- leases and pauses -------------------------------------------------------------------

    async def lease_run(self, run_id: str) -> PostgresLease:
        """Take the run's lease: an advisory lock on a connection of its own, and a new fence.

        Raises:
            InvalidIdError: ``run_id`` is malformed.
            RunLockedError: someone holds it (any process, or another lease of this one), or
                this store holds a lease on it still, even one whose session ended (a server
                restart): until that lease is released, its drive's saves come through this
                store, and must not go out under a new lease.
            StoreLocationError: the server cannot be reached.
        """
        validate_run_id(run_id)
        if run_id in self._leases:  # held by a drive of this store, even if its session ended
            raise _held_here(run_id)
        try:
            await self._ready()  # the schema exists
            lease = await lease_or_none(self._url, run_id, self._forget, self._spares)
        except psycopg.Error as exc:
            raise self._unreachable(exc) from None
        if lease is None:
            async with self._connection() as conn:
                raise await locked_error(conn, run_id)
        try:
            await lease.grant()
        except BaseException as exc:
            await lease.close()
            if isinstance(exc, psycopg.Error):
                raise self._unreachable(exc) from None
            raise
        self._leases[run_id] = lease
        return lease

    async def copy_in(self, run_id: str) -> MarkedCopy:
        """Hold ``run_id`` to copy it into this database: its lease, then one transaction that
        is committed only once the copy read back whole (see :mod:`._copying`).

        Raises:
            InvalidIdError: ``run_id`` is malformed.
            RunLockedError: someone holds it.
            StoreLocationError: the server cannot be reached.
        """
        return MarkedCopy(self, await self.lease_run(run_id))

    async def claim_run(self, exclude: Collection[str] = ()) -> PostgresLease | None:
        """Lease the oldest run a worker may take over, or return None if there is none.

        A run may be taken over when its head is a root, step or resume record, or a pause a
        stopping worker wrote to hand it over (not ended, failed, cancelled or paused
        otherwise), and nobody holds its lease: the run's ``claimable`` flag says which, set by
        the append trigger from the head's structure, so no record is read or decoded here
        (whatever a run's data holds). The candidate's row is locked
        ``FOR UPDATE SKIP LOCKED`` while its lease is taken, so concurrent claimers (in any
        process) pass over it rather than wait or collide. ``exclude`` names runs not to take.

        Raises:
            StoreLocationError: the server cannot be reached.
        """
        skip = [*exclude, *self._leases]  # not a run held here (see lease_run)
        while True:
            async with self._connection() as conn, conn.transaction():
                cursor = await conn.execute(_sql.CLAIMABLE, (skip,))
                found = await cursor.fetchone()
                if found is None:
                    return None
                run_id = str(found[0])
                lease = await lease_or_none(self._url, run_id, self._forget, self._spares)
                if lease is None:  # taken between the look and the lock
                    skip.append(run_id)
                    continue
                try:
                    # On the claim's connection: it holds the run's row locked.
                    cursor = await conn.execute(GRANT, (run_id, holder_text(), lease.backend_pid))
                    row = await cursor.fetchone()
                except BaseException:
                    await lease.close()
                    raise
            assert row is not None, "an upsert with RETURNING returns its row"
            lease.granted(row)
            self._leases[run_id] = lease
            return lease

    async def aclose(self) -> None:
        """Close the connection pool and the spare lease connections; leases stay held."""
        await self._spares.aclose()
        await super().aclose()

    def _forget(self, lease: PostgresLease) -> None:
        """Called by each lease when released: the store forgets it."""
        if self._leases.get(lease.run_id) is lease:
            del self._leases[lease.run_id]

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

    async def request_cancel(self, run_id: str, request: CancelRequest) -> None:
        """Ask whoever drives the run to end it cancelled: its pause request, with who asked.

        Raises:
            InvalidIdError: ``run_id`` is malformed.
            RunNotFoundError: no such run.
        """
        validate_run_id(run_id)
        params = {"run": run_id, "note": f"1:{run_id}", "request": json.dumps(request.to_json())}
        async with self._connection() as conn:
            cursor = await conn.execute(_sql.CANCEL, params)
            if await cursor.fetchone() is None:
                raise RunNotFoundError(run_id)

    async def cancel_request(self, run_id: str) -> CancelRequest | None:
        """Return the cancel request standing for the run (None: none, or a plain pause)."""
        rows = await self._rows(_sql.CANCEL_REQUEST, (validate_run_id(run_id),))
        row = rows[0] if rows else None
        if row is None or not isinstance(row[0], str):
            return None
        try:
            return CancelRequest.from_json(json.loads(row[0]))
        except (ValueError, RecursionError):
            return None

    async def _set_pause(self, run_id: str, flag: bool) -> bool:
        note = f"{int(flag)}:{run_id}"
        async with self._connection() as conn:
            cursor = await conn.execute(_sql.PAUSE, {"flag": flag, "run": run_id, "note": note})
            return await cursor.fetchone() is not None

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

        The records of copies killed part way (runs still under a copy's mark that nobody
        holds, seen by nothing) are deleted first, as a file store's removal deletes what its
        killed copies left.

        Raises:
            InvalidIdError: a run id is malformed (nothing is removed).
        """
        for run_id in run_ids:
            validate_run_id(run_id)
        async with self._connection() as conn:
            await conn.execute(_sql.ABANDONED_COPIES)
        return await delete_each(self.delete_run, run_ids)


def _held_here(run_id: str) -> RunLockedError:
    """The refusal of a second lease on a run this store holds a lease on still."""
    return RunLockedError(run_id, f"another lease of this process (pid {os.getpid()})")


def _lost(checkpoint: Checkpoint, where: str, *, sent: bool = False) -> LeaseLostError:
    """The failure of a save whose lease's connection ended (the server dropped the lock):
    found before the save was sent (nothing stored), or while it was in flight (``sent``)."""
    run, seq, kind = checkpoint.run_id, checkpoint.seq, checkpoint.kind
    what = (
        f" during the save of checkpoint seq {seq} ({kind}), which is stored only if the server "
        f"committed it before: `wfctl log {run}` shows the run's last checkpoint, and"
        if sent
        else f", so checkpoint seq {seq} ({kind}) was not stored; the run stays at its last "
        "checkpoint:"
    )
    return LeaseLostError(
        where,
        f"run {run!r} lost its lease: its connection to the server ended (a server restart, a "
        f"network cut){what} `wfctl resume {run}` continues it",
    )


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
        return LeaseLostError(
            where,
            f"{prefix}this store's lease on the run was taken over (fence {fence}, the run's "
            f"is now {value}): another process drives it; a writer that lost its lease cannot "
            "append",
        )
    if what == "nolease":
        return CheckpointCorruptError(where, f"{prefix}the run is not in the store (deleted?)")
    return CheckpointCorruptError(where, f"{prefix}the database refused it: {message}")
