"""A run's lease on PostgreSQL: an advisory lock on a connection of its own, and a fence.

The lock is a session-level ``pg_try_advisory_lock`` on the run's 64-bit key, taken on a
connection of the lease's own and held until :meth:`PostgresLease.release` unlocks it: the
server drops it when that connection ends, however its process died. A released lease whose
unlock the server confirmed hands its connection to the store's :class:`SpareConnections`, and
the next lease takes it instead of connecting (a new connection is a new server process, about
3-5 ms on the same machine, and a network handshake beyond); any other release closes it. The
first lease of a store takes the connection the store checked its schema on. Taking it bumps the
run's ``fence`` (a lease epoch from a sequence, never reused); every save carries the fence
it was granted, and the append trigger refuses any other, so a writer that lost its lease
cannot append even where the head did not move.

Saves go over the lease's connection (:meth:`PostgresLease.save`): no pool checkout per
save, and a save after that connection ended fails instead of landing without the lock. A save
runs the INSERT the lease prepared when it opened (``PREPARE``, sent with its ``LISTEN``) at the
level of libpq: its parameters arrive encoded, the record as binary, and the reply is read by
the reader that stays on the connection's socket for as long as the lease is held. So a save is
one send and one wait, with no reader added or removed, no cursor, no timer and no adaptation
of its parameters. When the store holds this lease alone, the save first waits for its reply
in place, without the event loop, for up to ``INLINE_WAIT_MS``; otherwise, and past that, it
yields to the loop only at one future (a plain ``asyncio.Future``: it may be awaited from any
task). The other statements of a lease (the lock,
the grant, the unlock) go through psycopg (:meth:`PostgresLease.execute`), which waits on the
socket with a reader of its own meanwhile. The connection also ``LISTEN``s for pause requests:
a notification read during a psycopg statement is handled by a notify handler, and any other
one by the socket's reader (which notices the connection ending too), so
:meth:`~PostgresLease.pause_requested` stays a plain read. A notification decides nothing (any
role that can connect may send one): one naming the run makes the lease read the run's
``pause_requested`` flag, which only a role that may update wfctl's tables can set.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import os
import select
import socket
import weakref
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from typing import Any, Final

import psycopg
from psycopg import AsyncCursor
from psycopg.pq import ConnStatus, ExecStatus
from psycopg.pq.abc import PGconn, PGresult
from psycopg.rows import TupleRow

from wfctl._errors import RunLockedError

from . import _sql
from ._connection import Connection, alive
from ._schema import run_key

__all__ = [
    "CHANNEL",
    "GRANT",
    "PostgresLease",
    "SpareConnections",
    "holder_text",
    "lease_or_none",
    "locked_error",
]

#: The notification channel of pause requests; the payload is ``<0|1>:<run id>``.
CHANNEL: Final = "wfctl_pause"
#: Sent once when a lease opens (one round trip): listen, and prepare the save.
_OPEN: Final = f"LISTEN {CHANNEL}; {_sql.PREPARE_SAVE}"
_TRY_LOCK: Final = f"SELECT pg_try_advisory_lock({run_key()})"
_UNLOCK: Final = f"SELECT pg_advisory_unlock({run_key()})"
#: Bump the run's fence (creating its row for a run with no records yet), say who holds it
#: (this process, and the server process of the lease's session), and read its pause request:
#: one statement, one transaction. Parameters: run id, :func:`holder_text`, the backend pid.
GRANT: Final = (
    "INSERT INTO wfctl_runs (run_id, fence, holder, holder_pid)"
    " VALUES (%s, nextval('wfctl_fence'), %s, %s) ON CONFLICT (run_id) DO UPDATE SET"
    " fence = EXCLUDED.fence, holder = EXCLUDED.holder, holder_pid = EXCLUDED.holder_pid"
    " RETURNING fence, pause_requested"
)
#: What decides whether a pause is requested: the run's row, which only a role that may update
#: wfctl's tables can set. A notification on :data:`CHANNEL` only says "look again": anyone who
#: can connect can send one.
_PAUSE_FLAG: Final = "SELECT pause_requested FROM wfctl_runs WHERE run_id = %s"
#: How long a save may wait for its reply in place, in milliseconds (``inline`` saves); read
#: at each save.
INLINE_WAIT_MS = 1
#: Saves that wait in the event loop after one whose reply took longer than that.
INLINE_SKIP = 8
#: Who holds a run's advisory lock, as the server sees it: each session holding it (its server
#: process, role and application, where ``pg_stat_activity`` shows them), with the holder
#: wfctl recorded for the run and that holder's server process.
_HOLDERS: Final = (
    "SELECT l.pid, a.usename, a.application_name, r.holder, r.holder_pid"
    " FROM (SELECT DISTINCT pid FROM pg_locks WHERE locktype = 'advisory' AND granted"
    " AND objsubid = 1"
    " AND database = (SELECT oid FROM pg_database WHERE datname = current_database())"
    f" AND ((classid::bigint << 32) | objid::bigint) = {run_key('%(run)s')}) l"
    " LEFT JOIN pg_stat_activity a ON a.pid = l.pid"
    " LEFT JOIN wfctl_runs r ON r.run_id = %(run)s ORDER BY l.pid"
)


def holder_text() -> str:
    """Describe this process as a lease holder (as the file store's ``owner.json`` does)."""
    since = datetime.now(UTC).isoformat(timespec="seconds")
    return f"pid {os.getpid()} on host {socket.gethostname()} since {since}"


class SpareConnections:
    """Connections kept for the next leases of this event loop.

    Most are lease connections given back unlocked: each listens for pause requests and has
    the save prepared already (what a lease sends when it opens a connection). One may be the
    connection the store checked its schema on (given with ``ready=False``): a lease that takes
    it sends that first, as on a new connection, and saves a connection's set-up (a new server
    process). At most ``limit`` are kept; a connection of another event loop is never handed
    out (it cannot be used there), nor one whose session ended while it was kept. A store
    dropped without ``aclose()`` closes its kept connections with it.
    """

    def __init__(self, limit: int) -> None:
        self._limit = limit
        #: Each kept connection and whether it is ready (listening, the save prepared).
        self._kept: list[tuple[Connection, bool]] = []  # emptied in place, never replaced
        self._loop: asyncio.AbstractEventLoop | None = None
        # When this object goes (even in a cycle the collector breaks), before the connections
        # it kept are finalized: they close instead of warning that they were left open.
        weakref.finalize(self, _finish_all, self._kept)

    async def take(self) -> tuple[Connection, bool] | None:
        """Return a kept connection that is still alive, pending notifications dropped, and
        whether it is ready (else it needs what a lease sends a new connection first)."""
        if self._loop is not asyncio.get_running_loop():
            _finish_all(self._kept)  # another loop's: it cannot be used here
            return None
        while self._kept:
            conn, ready = self._kept.pop()
            try:
                await alive(conn)  # the pool's check: what the idle socket holds, no round trip
            except psycopg.OperationalError:
                _finish_all([(conn, ready)])
                continue
            # Notifications from before this lease: its grant reads the flag after.
            while conn.pgconn.notifies() is not None:
                pass
            return conn, ready
        return None

    def give(self, conn: Connection, *, ready: bool = True) -> bool:
        """Keep ``conn`` for a later lease; False if there is no room (the caller closes it).

        ``ready``: it listens for pause requests and has the save prepared (a lease's).
        """
        loop = asyncio.get_running_loop()
        if self._loop is not loop:
            _finish_all(self._kept)
            self._loop = loop
        if len(self._kept) >= self._limit:
            return False
        # Ready ones go last, so they are taken first.
        self._kept.insert(len(self._kept) if ready else 0, (conn, ready))
        return True

    async def aclose(self) -> None:
        """Close every kept connection."""
        kept = self._kept[:]
        self._kept.clear()
        if self._loop is not asyncio.get_running_loop():
            _finish_all(kept)
            return
        for conn, _ in kept:
            with contextlib.suppress(psycopg.Error):
                await conn.close()


def _finish_all(kept: list[tuple[Connection, bool]]) -> None:
    """Close the connections in ``kept`` at once, without waiting for the server, and empty it."""
    for conn, _ in kept:
        with contextlib.suppress(psycopg.Error):
            conn.pgconn.finish()
    kept.clear()


async def lease_or_none(
    url: str,
    run_id: str,
    on_release: Callable[[PostgresLease], None],
    spares: SpareConnections,
) -> PostgresLease | None:
    """Lock the run on a lease connection (a spare one, else a new one listening for pause
    requests) and return the lease.

    Returns the lease (its fence not granted yet: :meth:`PostgresLease.grant`), or None if
    someone holds the run (the connection is given back then).
    """
    spare = await spares.take()
    if spare is not None:
        try:
            return await _lock_on(run_id, *spare, on_release, spares)
        except psycopg.OperationalError:
            pass  # it ended between the look and the lock: a new one, then
    conn = await psycopg.AsyncConnection.connect(url, autocommit=True)
    return await _lock_on(run_id, conn, False, on_release, spares)


async def _lock_on(
    run_id: str,
    conn: Connection,
    ready: bool,
    on_release: Callable[[PostgresLease], None],
    spares: SpareConnections,
) -> PostgresLease | None:
    """Lock the run on ``conn``, first making it a lease connection unless it is ``ready``;
    return the lease, or None (the connection given back) if someone holds the run.

    Raises:
        psycopg.Error: the connection failed (it is closed).
    """
    lease = PostgresLease(run_id, conn, on_release, spares)
    try:
        if not ready:
            # Listening before the lock, and so before the grant reads the pause flag: a
            # request committed after that read is notified here.
            await lease.execute(_OPEN)
        locked = await lease.try_lock()
    except BaseException:
        await lease.close()
        raise
    if locked:
        return lease
    await lease.give_back()
    return None


async def locked_error(conn: Connection, run_id: str) -> RunLockedError:
    """Return the error for a run someone holds, naming them as the server sees them.

    The holder recorded in the run's row is named only if the session holding the lock is the
    one recorded with it; any other session (anyone who can connect may take an advisory
    lock, and a recorded holder may have exited long since) is named as the server shows it.
    """
    cursor = await conn.execute(_HOLDERS, {"run": run_id})
    return RunLockedError(run_id, _describe_holders(await cursor.fetchall()))


def _describe_holders(rows: Sequence[TupleRow]) -> str:
    """Name the holder of a run's lock from the rows of :data:`_HOLDERS`."""
    if not rows:
        return "another database session, which has let go of it since"
    pid, role, application, recorded, recorded_pid = rows[0]
    if len(rows) == 1 and isinstance(recorded, str) and recorded_pid == pid:
        return recorded
    who = f"pid {pid}"
    if isinstance(role, str):
        who += f" of role {role}"
    if isinstance(application, str) and application:
        who += f", application {application}"
    more = f", and {len(rows) - 1} more" if len(rows) > 1 else ""
    return f"another database session ({who}{more})"


class PostgresLease:
    """The right to drive one run, held by an advisory lock on the lease's connection.

    ``on_release`` is called with the lease once, when it is released (the store forgets it).
    """

    def __init__(
        self,
        run_id: str,
        conn: Connection,
        on_release: Callable[[PostgresLease], None],
        spares: SpareConnections,
    ) -> None:
        self._run_id = run_id
        self._spares = spares
        self._conn: Connection | None = conn
        self._suffix = f":{run_id}"
        #: The lease's fence, once granted (:meth:`grant` or :meth:`granted`).
        self.fence = -1
        #: Set while a pause is requested (what :meth:`pause_requested` reads), for a caller
        #: that would rather wait for a request than poll.
        self.pause_event = asyncio.Event()
        self._notified = False  # a notification arrived: it is newer than the grant's read
        #: Whether the lease's connection ended under it (the server dropped the lock).
        self.lost = False
        self._on_release = on_release
        self._loop = asyncio.get_running_loop()
        self._fd = conn.pgconn.socket
        self._busy = 0  # queries of the lease in flight: psycopg waits on the socket then
        self._watching = False
        #: The Python codec of the connection's client encoding (a save's text parameters).
        self.encoding = conn.info.encoding
        #: One statement at a time on the connection: held by a psycopg statement while it
        #: runs, and by a save from its send until the socket's reader has read its reply.
        self._turn = asyncio.Lock()
        self._saving = False  # a save is in flight: sent, its reply not read whole
        self._reply: asyncio.Future[None] | None = None  # what it waits on in the loop, if it does
        self._results: list[PGresult] = []  # read so far for it
        self._poll = select.poll()  # the socket, for a save that waits for its reply in place
        self._poll.register(self._fd, select.POLLIN)
        self._skip_inline = 0  # saves left that wait in the loop, after one found no reply
        self._sending = False  # a writer sends the rest of it
        self._handler: Callable[[psycopg.Notify], None] = lambda note: self._note(note.payload)
        conn.add_notify_handler(self._handler)
        #: The server process of the lease's session (recorded with the holder at the grant).
        self.backend_pid = conn.pgconn.backend_pid
        self._look_again = False  # a notification named the run: read its flag (again)
        self._looking: asyncio.Task[None] | None = None  # the task reading it, if any

    @property
    def run_id(self) -> str:
        """The run held."""
        return self._run_id

    @property
    def held(self) -> bool:
        """Whether this object still holds the lease (released, or its connection ended)."""
        return self._conn is not None and not self.lost

    def pause_requested(self) -> bool:
        """Return whether a pause was requested (a plain read: the run's row, read at the grant
        and again after each notification naming the run, sets it)."""
        return self.pause_event.is_set()

    # -- queries -----------------------------------------------------------------------------

    async def execute(
        self, query: str, params: tuple[Any, ...] | None = None
    ) -> AsyncCursor[TupleRow]:
        """Run one statement through psycopg on the lease's connection (the lock, the grant).

        Raises:
            psycopg.OperationalError: the connection ended (the lease is then :attr:`lost`),
                or was released.
            psycopg.Error: the server refused the statement.
        """
        async with self._turn:  # after a save in flight has had its reply
            conn = self._conn
            if conn is None:
                raise psycopg.OperationalError("the lease was released")
            # psycopg waits on the socket with a reader of its own, which replaces the idle
            # reader and removes it when the statement ends: the idle reader is put back after.
            self._watching = False
            self._busy += 1
            try:
                return await conn.execute(query, params)
            except psycopg.OperationalError:
                if conn.pgconn.status != ConnStatus.OK:
                    self.lost = True  # the connection ended: the server has dropped the lock
                raise
            finally:
                self._busy -= 1
                self._watch()

    async def save(self, params: Sequence[bytes | None], *, inline: bool = False) -> None:
        """Run the save the lease prepared (:data:`._sql.PREPARE_SAVE`): one send, one wait.

        ``params`` are encoded already: text in :attr:`encoding`, the record as binary (the
        formats of :data:`._sql.SAVE_FORMATS`).

        ``inline``: nothing else of this process's wfctl could use the event loop meanwhile
        (the caller's store holds this lease alone), so the save first waits for its reply in
        place, up to :data:`INLINE_WAIT_MS` (see :meth:`_reply_in_place`). Otherwise, and past
        that, it waits on a plain future, which the socket's reader resolves once the whole
        reply is read. Cancelling the caller does not cancel the statement: its reply is still
        read, and the lease's next statement waits for it.

        Raises:
            psycopg.OperationalError: the connection ended (the lease is then :attr:`lost`),
                or was released.
            psycopg.Error: the server refused the statement (the trigger's refusal is a
                ``RaiseException``).
        """
        turn = self._turn
        await turn.acquire()
        # From here the turn is released by the end of the reply (:meth:`_answer`).
        try:
            conn = self._conn
            if conn is None or self.lost:
                raise psycopg.OperationalError("the lease was released")
            pgconn = conn.pgconn
            try:
                pgconn.send_query_prepared(_sql.SAVE, params, _sql.SAVE_FORMATS)
                unsent = pgconn.flush()
            except psycopg.OperationalError:
                if pgconn.status != ConnStatus.OK:
                    self.lost = True  # the connection ended: the server has dropped the lock
                raise
        except BaseException:
            turn.release()
            raise
        self._saving = True
        if inline and not unsent and self._reply_in_place(pgconn):
            return
        reply = self._reply = self._loop.create_future()
        self._watch()
        if unsent:  # a record larger than the socket's buffer: send the rest when writable
            self._loop.add_writer(self._fd, self._writable)
            self._sending = True
        await reply

    def _reply_in_place(self, pgconn: PGconn) -> bool:
        """Wait for the save's reply without the event loop, up to :data:`INLINE_WAIT_MS`.

        A local server answers in a few tenths of a millisecond; waiting for that through the
        loop costs the step more CPU than the wait lasts (a future, two turns of the loop and
        their ``epoll_wait``), and for a run driven alone nothing else of wfctl's is ready to
        run meanwhile. The file store holds the loop for its ``fdatasync`` the same way.

        Returns True if the reply was read whole (the save has ended; raises the server's
        refusal, or the end of the connection); False if not, and the save goes on waiting in
        the loop. If nothing came in time, so do the lease's next :data:`INLINE_SKIP` saves:
        a server that slow to answer gains nothing from the wait.
        """
        if self._skip_inline:
            self._skip_inline -= 1
            return False
        # The socket's reader stays on meanwhile: should an interrupt (KeyboardInterrupt) end
        # the wait, it reads the reply and frees the connection, as for a cancelled caller.
        self._watch()
        if not self._poll.poll(INLINE_WAIT_MS):
            self._skip_inline = INLINE_SKIP
            return False
        ended, error = self._read(pgconn)
        if not ended:  # a notification, or part of the reply: the rest is read in the loop
            return False
        self._end_save(error)  # no future to resolve: this ends the save's state
        if error is not None:
            raise error
        return True

    def _writable(self) -> None:
        """Send more of a save the socket's buffer could not take at once."""
        conn = self._conn
        try:
            unsent = conn is not None and conn.pgconn.flush()
        except psycopg.OperationalError as exc:
            self.lost = True
            self._answer(exc)
            return
        if not unsent:
            self._stop_sending()

    def _stop_sending(self) -> None:
        if self._sending:
            self._loop.remove_writer(self._fd)
            self._sending = False

    async def try_lock(self) -> bool:
        """Try the run's advisory lock on the lease's connection; whether it was taken."""
        cursor = await self.execute(_TRY_LOCK, (self._run_id,))
        row = await cursor.fetchone()
        return row is not None and row[0] is True

    async def grant(self) -> None:
        """Take the run's fence on the lease's own connection (:data:`GRANT`)."""
        cursor = await self.execute(GRANT, (self._run_id, holder_text(), self.backend_pid))
        row = await cursor.fetchone()
        assert row is not None, "an upsert with RETURNING returns its row"
        self.granted(row)

    def granted(self, row: TupleRow) -> None:
        """Take the fence and pause flag :data:`GRANT` returned (run on any connection)."""
        self.fence = int(row[0])
        if not self._notified:  # a notification read since is newer than this read
            if row[1]:
                self.pause_event.set()
            else:
                self.pause_event.clear()

    # -- notifications -----------------------------------------------------------------------

    def _note(self, payload: str) -> None:
        """A notification on :data:`CHANNEL`: if it names this run, read the run's flag.

        The payload's flag is not believed (anyone who can connect may send one): only the
        row, which :data:`._sql.PAUSE` sets with the notification in one transaction, says
        whether a pause is requested. Notifications that come while the flag is being read
        cost one more read, not one each.
        """
        if not payload.endswith(self._suffix) or payload[: -len(self._suffix)] not in ("0", "1"):
            return
        self._notified = True
        self._look_again = True
        if self._looking is None:
            # Outside the context of whatever task read the notification (a run's: its task
            # factory would count this task among the run's).
            self._looking = asyncio.Task(self._read_flag(), context=contextvars.Context())

    async def _read_flag(self) -> None:
        """Read the run's pause flag until no notification came during the last read."""
        try:
            while self._look_again:
                self._look_again = False
                cursor = await self.execute(_PAUSE_FLAG, (self._run_id,))
                row = await cursor.fetchone()
                if row is not None and row[0] is True:
                    self.pause_event.set()
                else:
                    self.pause_event.clear()
        except psycopg.Error:
            pass  # the lease ended: its holder learns that from its next save
        finally:
            self._looking = None

    def _stop_looking(self) -> None:
        """Stop reading the flag: the lease ends, and its connection goes."""
        looking, self._looking = self._looking, None
        if looking is not None:
            looking.cancel()

    def _watch(self) -> None:
        """Read the idle connection's socket when it has something (a notification, an end)."""
        if self._busy or self._watching or self._conn is None or self.lost:
            return
        self._loop.add_reader(self._fd, self._readable)
        self._watching = True

    def _unwatch(self) -> None:
        if self._watching:
            self._loop.remove_reader(self._fd)
            self._watching = False

    def _readable(self) -> None:
        conn = self._conn
        if self._busy or conn is None:  # a statement starts: psycopg reads the socket now
            self._unwatch()
            return
        ended, error = self._read(conn.pgconn)
        if ended:
            self._end_save(error)

    def _read(self, pgconn: PGconn) -> tuple[bool, psycopg.Error | None]:
        """Read what the socket holds: notifications, and the results of a save in flight.

        Returns whether the save in flight has ended (its reply read whole, or the connection
        ended: :attr:`lost`), and its error (None: the row was inserted).
        """
        try:
            pgconn.consume_input()  # at the end of the stream (now or at a next call): raises
        except psycopg.OperationalError as exc:
            self.lost = True  # the connection ended: the server has dropped the lock
            return True, exc
        while (pgn := pgconn.notifies()) is not None:
            self._note(pgn.extra.decode(self.encoding))
        ended, outcome = False, None
        if self._saving:
            # A save's reply: its result, then the end of the results (when all is read).
            while not pgconn.is_busy():
                result = pgconn.get_result()
                if result is None:
                    ended, outcome = True, self._outcome()
                    break
                self._results.append(result)
        if pgconn.status != ConnStatus.OK:
            self.lost = True
            if not ended:
                return True, psycopg.OperationalError("the server ended the connection")
        return ended, outcome

    def _end_save(self, error: psycopg.Error | None) -> None:
        """After :meth:`_read` said the save ended: stop reading a lost connection, and end
        the save in flight, if any, with ``error``."""
        if self.lost:
            self._unwatch()
        self._answer(error)

    def _outcome(self) -> psycopg.Error | None:
        """The error a save's results hold (None: the row was inserted)."""
        for result in self._results:
            if result.status != ExecStatus.COMMAND_OK:
                return psycopg.errors.error_from_result(result, encoding=self.encoding)
        return None if self._results else psycopg.InterfaceError("a save returned no result")

    def _answer(self, error: BaseException | None) -> None:
        """End the save in flight (if any) with ``error`` or success; free the connection."""
        if not self._saving:
            return
        reply, self._reply = self._reply, None
        self._saving = False
        self._results = []
        self._stop_sending()
        self._turn.release()
        if reply is not None and not reply.done():  # its caller may have been cancelled
            if error is None:
                reply.set_result(None)
            else:
                reply.set_exception(error)

    # -- ending ------------------------------------------------------------------------------

    async def release(self) -> None:
        """Give the run back: unlock it, and give the connection to the spares (or close it,
        if the unlock was not confirmed); idempotent."""
        if self._conn is None:
            return
        try:
            unlocked = False
            if not self.lost:
                with contextlib.suppress(psycopg.Error):
                    # Unlock first: the server ends a closed connection's session (and its
                    # locks) only after the close returns, so a look right after could still
                    # see it held.
                    cursor = await self.execute(_UNLOCK, (self._run_id,))
                    row = await cursor.fetchone()
                    unlocked = row is not None and row[0] is True
            if unlocked:
                await self.give_back()
            else:
                await self.close()
        finally:
            self._on_release(self)

    async def give_back(self) -> None:
        """Hand the connection, holding no lock of this lease, to the spares (else close it)."""
        conn = self._conn
        if conn is None:
            return
        if self.lost or self._saving or conn.pgconn.status != ConnStatus.OK:
            await self.close()
            return
        self._unwatch()
        self._stop_looking()
        self._conn = None
        conn.remove_notify_handler(self._handler)
        if not self._spares.give(conn):
            with contextlib.suppress(psycopg.Error):
                await conn.close()

    async def close(self) -> None:
        """Close the lease's connection (the server drops its lock)."""
        conn = self._conn
        if conn is None:
            return
        self._unwatch()
        self._stop_looking()
        self._answer(psycopg.OperationalError("the lease was released"))
        self._conn = None
        with contextlib.suppress(psycopg.Error):
            await conn.close()
