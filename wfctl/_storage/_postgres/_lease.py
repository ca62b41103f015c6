"""A run's lease on PostgreSQL: an advisory lock on a connection of its own, and a fence.

The lock is a session-level ``pg_try_advisory_lock`` on the run's 64-bit key, taken on a
connection opened for the lease alone and held until :meth:`PostgresLease.release` closes it:
the server drops it when that connection ends, however its process died. Taking it bumps the
run's ``fence`` (a lease epoch from a sequence, never reused); every save carries the fence
it was granted, and the append trigger refuses any other, so a writer that lost its lease
cannot append even where the head did not move. The connection also ``LISTEN``s for pause
requests: a background task keeps :meth:`~PostgresLease.pause_requested` a plain read.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import socket
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Final

import psycopg

from wfctl._errors import RunLockedError

from ._connection import Connection
from ._schema import run_key

__all__ = ["CHANNEL", "PostgresLease", "holder_text", "lock_or_none"]

#: The notification channel of pause requests; the payload is ``<0|1>:<run id>``.
CHANNEL: Final = "wfctl_pause"
_LISTEN: Final = f"LISTEN {CHANNEL}"
_TRY_LOCK: Final = f"SELECT pg_try_advisory_lock({run_key()})"
_UNLOCK: Final = f"SELECT pg_advisory_unlock({run_key()})"
#: Bump the run's fence (creating its row for a run with no records yet), say who holds it,
#: and read its pause request: one statement, one transaction.
GRANT: Final = (
    "INSERT INTO wfctl_runs (run_id, fence, holder) VALUES (%s, nextval('wfctl_fence'), %s)"
    " ON CONFLICT (run_id) DO UPDATE SET fence = EXCLUDED.fence, holder = EXCLUDED.holder"
    " RETURNING fence, pause_requested"
)
_HOLDER: Final = "SELECT holder FROM wfctl_runs WHERE run_id = %s"


def holder_text() -> str:
    """Describe this process as a lease holder (as the file store's ``owner.json`` does)."""
    since = datetime.now(UTC).isoformat(timespec="seconds")
    return f"pid {os.getpid()} on host {socket.gethostname()} since {since}"


async def lock_or_none(url: str, run_id: str) -> Connection | None:
    """Open a dedicated connection listening for pause requests and lock the run on it.

    Returns the connection holding the run's advisory lock, or None if someone holds it (the
    connection is closed then).
    """
    conn = await psycopg.AsyncConnection.connect(url, autocommit=True)
    try:
        # Listening before the lock, and so before the grant reads the pause flag: a request
        # committed after that read is notified here, once this connection is idle.
        await conn.execute(_LISTEN)
        cursor = await conn.execute(_TRY_LOCK, (run_id,))
        row = await cursor.fetchone()
    except BaseException:
        await conn.close()
        raise
    if row is not None and row[0] is True:
        return conn
    await conn.close()
    return None


async def locked_error(conn: Connection, run_id: str) -> RunLockedError:
    """Return the error for a run someone holds, naming them from the run's row."""
    cursor = await conn.execute(_HOLDER, (run_id,))
    row = await cursor.fetchone()
    holder = row[0] if row is not None and isinstance(row[0], str) else "another process"
    return RunLockedError(run_id, holder)


class PostgresLease:
    """The right to drive one run, held by an advisory lock on :attr:`connection`.

    ``on_release`` is called once, when the lease is released (the store forgets the fence).
    """

    def __init__(
        self,
        run_id: str,
        conn: Connection,
        fence: int,
        paused: bool,
        on_release: Callable[[], None],
    ) -> None:
        self._run_id = run_id
        self._conn: Connection | None = conn
        self.fence = fence
        #: Set while a pause is requested (what :meth:`pause_requested` reads), for a caller
        #: that would rather wait for a request than poll.
        self.pause_event = asyncio.Event()
        if paused:
            self.pause_event.set()
        #: Whether the lease's connection ended under it (the server dropped the lock).
        self.lost = False
        self._on_release = on_release
        self._listener = asyncio.get_running_loop().create_task(self._listen(conn))

    @property
    def run_id(self) -> str:
        """The run held."""
        return self._run_id

    @property
    def held(self) -> bool:
        """Whether this object still holds the lease (released, or its connection ended)."""
        return self._conn is not None and not self.lost

    def pause_requested(self) -> bool:
        """Return whether a pause was requested (a plain read: notifications set it)."""
        return self.pause_event.is_set()

    async def _listen(self, conn: Connection) -> None:
        suffix = f":{self._run_id}"
        try:
            async for note in conn.notifies():
                flag = note.payload.removesuffix(suffix)
                if flag == "1":
                    self.pause_event.set()
                elif flag == "0":
                    self.pause_event.clear()
        except psycopg.Error:
            self.lost = True  # the connection ended: the server has dropped the lock

    async def release(self) -> None:
        """Give the run back: unlock it and close the lease's connection (idempotent)."""
        conn, self._conn = self._conn, None
        if conn is None:
            return
        self._listener.cancel()
        try:
            with contextlib.suppress(asyncio.CancelledError):
                await self._listener
            with contextlib.suppress(psycopg.Error):
                # Unlock first: the server ends a closed connection's session (and its locks)
                # only after the close returns, so a look right after could still see it held.
                await conn.execute(_UNLOCK, (self._run_id,))
            with contextlib.suppress(psycopg.Error):
                await conn.close()
        finally:
            self._on_release()
