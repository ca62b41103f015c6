"""The PostgreSQL store's connections: a pool per event loop, opened at first use.

A store is built from a URL without connecting; its first call in an event loop connects once
directly (so an unreachable server says why at once) to create or check the schema, then opens
a pool there. A server failure becomes one :class:`StoreLocationError` line; a read whose session
the server ends under it runs once more on another (:meth:`PostgresConnections._rows`).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator

import psycopg
from psycopg import AsyncConnection
from psycopg.abc import Params
from psycopg.pq import ConnStatus
from psycopg.rows import TupleRow
from psycopg_pool import AsyncConnectionPool, PoolTimeout

from wfctl._errors import StoreLocationError
from wfctl._redact import malformed, redact, reveals

from ._schema import ensure_schema

__all__ = ["Connection", "PostgresConnections", "alive", "check_url", "failure_text"]

Connection = AsyncConnection[TupleRow]

# The pool logs each failed attempt to reconnect (a server restarting) as a warning, which
# Python's last-resort handler prints raw on stderr when nothing configured logging. wfctl says
# what matters itself, in one line when it gives up (see PostgresConnections._connection); a
# program that configures logging still receives psycopg's records.
logging.getLogger("psycopg").addHandler(logging.NullHandler())


class PostgresConnections:
    """A database named by URL, and the connections to it of the running event loop."""

    def __init__(self, url: str, *, max_connections: int = 8) -> None:
        """Take the database's URL; nothing is connected yet.

        Raises:
            StoreLocationError: ``url`` is not one libpq reads, or its password cannot be told
                apart (see :func:`~wfctl._redact.malformed`); libpq's message, which would
                quote the URL, is never shown.
        """
        check_url(url)
        self._url = url
        self._location = redact(url)
        self._max = max_connections
        self._pool: AsyncConnectionPool[Connection] | None = None
        self._opening: asyncio.Task[AsyncConnectionPool[Connection]] | None = None
        self._loop: asyncio.AbstractEventLoop | None = None

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
        conn = await psycopg.AsyncConnection.connect(self._url, autocommit=True)
        try:
            await ensure_schema(conn, self._location)
        except BaseException:
            await conn.close()
            raise
        if not self._keep(conn):
            await conn.close()
        pool: AsyncConnectionPool[Connection] = AsyncConnectionPool(
            self._url,
            min_size=1,
            max_size=self._max,
            kwargs={"autocommit": True, "prepare_threshold": 0},
            check=alive,
            open=False,
            timeout=10.0,
            name="wfctl",
        )
        await pool.open(wait=True, timeout=10.0)
        return pool

    def _keep(self, conn: Connection) -> bool:
        """Keep the connection the schema was checked on for later use (False: close it)."""
        return False

    @contextlib.asynccontextmanager
    async def _connection(self) -> AsyncIterator[Connection]:
        """Lend a pooled connection; a failure of the server becomes a one-line WfctlError."""
        try:
            pool = await self._ready()
            async with pool.connection() as conn:
                yield conn
        except PoolTimeout as exc:  # the pool's attempts failed: one more, to say why
            raise self._unreachable(await self._why_not(exc)) from None
        except psycopg.Error as exc:
            raise self._unreachable(exc) from None

    async def _rows(
        self, query: str, params: Params | None = None, *, binary: bool = False
    ) -> list[TupleRow]:
        """Run a read statement on a pooled connection and return its rows.

        A session the server ends under the statement (a restart or a stop, an
        administrator's ``pg_terminate_backend``) is let go and the statement runs once more
        on another, as a read between statements would: the pool replaces a session that
        ended while idle, waiting up to 10 s for the server. A read changes nothing, so running
        it again is safe; ``log --follow`` rides through a server restart (of less than those
        10 s) wherever its poll was when it came.

        Raises:
            StoreLocationError: the server cannot be reached (the second time too), or refused
                the statement.
        """
        async with self._connection() as conn:
            try:
                return await _fetch(conn, query, params, binary)
            except psycopg.OperationalError:
                if not conn.broken:
                    raise
        # The session ended: the pool dropped its connection as it took it back.
        async with self._connection() as conn:
            return await _fetch(conn, query, params, binary)

    async def _why_not(self, gave_up: PoolTimeout) -> psycopg.Error:
        """Return why a connection cannot be made now (a direct attempt's error), else
        ``gave_up`` (the pool found none free in time, and the server answers)."""
        try:
            conn = await psycopg.AsyncConnection.connect(self._url, connect_timeout=10)
        except psycopg.Error as exc:
            return exc
        await conn.close()
        return gave_up

    def _unreachable(self, exc: psycopg.Error) -> StoreLocationError:
        text = failure_text(exc, self._url)
        if isinstance(exc, psycopg.OperationalError):
            return StoreLocationError(
                self._location, f"cannot be reached: {text}", unreachable=True
            )
        return StoreLocationError(self._location, f"refused a query: {text}")

    async def aclose(self) -> None:
        """Close the connection pool; leases keep their own connections and stay held."""
        pool, self._pool, self._opening = self._pool, None, None
        if pool is not None and self._loop is asyncio.get_running_loop():
            await pool.close()

    def _source(self, run_id: str) -> str:
        return f"{self._location} run {run_id}"


async def _fetch(
    conn: Connection, query: str, params: Params | None, binary: bool
) -> list[TupleRow]:
    """Run ``query`` on ``conn`` and return all its rows."""
    cursor = await conn.execute(query, params, binary=binary)
    return await cursor.fetchall()


def check_url(url: str) -> None:
    """Refuse a URL libpq cannot read, or whose password cannot be told apart, in wfctl's words.

    Raises:
        StoreLocationError: with the URL redacted, and libpq's reason only if it holds no
            password.
    """
    problem = malformed(url)
    if problem is None:
        try:
            psycopg.conninfo.conninfo_to_dict(url)  # libpq's own parser; connects nowhere
        except psycopg.Error as exc:
            problem = failure_text(exc, url)
    if problem is not None:
        raise StoreLocationError(url, f"is not a PostgreSQL URL wfctl can use: {problem}")


def failure_text(exc: BaseException, url: str) -> str:
    """Return a psycopg or libpq message on one line, or a plain one if it quotes a password
    of ``url`` (libpq quotes the parts of a URL it cannot parse, or the host it failed on)."""
    text = " ".join(str(exc).split()) or type(exc).__name__
    if reveals(text, url):
        return f"{type(exc).__name__} (its message held the password and is not shown)"
    return text


async def alive(conn: Connection) -> None:
    """The check of an idle connection before it is lent (by the pool, or kept for leases): one
    whose session ended while it sat idle (a server restart) is replaced instead of failing the
    caller's query. No round trip: it reads
    what the idle socket holds (nothing, or the server's goodbye and the end of the stream).

    Raises:
        psycopg.OperationalError: the connection ended.
    """
    pgconn = conn.pgconn
    # Non-blocking reads; the second sees the end of the stream after a goodbye the first read
    # (libpq stops reading once it gets data), and raises then.
    pgconn.consume_input()
    pgconn.consume_input()
    if pgconn.status != ConnStatus.OK:
        raise psycopg.OperationalError("the server ended the connection")
