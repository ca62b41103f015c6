"""Leases, fences, pause requests and claims of the PostgreSQL store, on a real private server.

Crash tests SIGKILL a real child process holding a lease; waits are for notifications or for
the server to drop a dead session's lock (bounded, never a timing threshold).
"""

from __future__ import annotations

import asyncio
import base64
import collections
import gc
import hashlib
import os
import signal
import socket
import subprocess
import time
import warnings
from collections.abc import Awaitable, Callable, Coroutine, Generator, Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest

from tests.postgres.conftest import opened
from tests.storage.helpers import arun, ckpt, start_holder, stop_children
from wfctl._errors import CheckpointCorruptError, LeaseLostError, RunLockedError, WfctlError
from wfctl._storage._postgres import _lease
from wfctl._storage._postgres._schema import LOCK_SEED
from wfctl._storage._postgres._sql import PAUSE
from wfctl._storage._postgres._store import PostgresCheckpointStorage
from wfctl.storage.testing import PrivateServer, restart

REPO = Path(__file__).resolve().parents[2]
HOLDER = """
import asyncio, sys
from wfctl._storage._postgres import PostgresCheckpointStorage
from tests.storage.helpers import ckpt

async def main():
    store = PostgresCheckpointStorage(sys.argv[1])
    lease = await store.lease_run("r1")
    await store.save(ckpt("r1", 0))
    print("leased", flush=True)
    await asyncio.get_running_loop().run_in_executor(None, sys.stdin.read)

asyncio.run(main())
"""


async def _save_all(store: Any, run_id: str, kinds: list[str]) -> None:
    lease = await store.lease_run(run_id)
    for seq, kind in enumerate(kinds):
        await store.save(ckpt(run_id, seq, kind, minute=len(run_id)))
    await lease.release()


def test_a_lease_excludes_another_store_object_until_released(pg_url: str) -> None:
    async def main() -> None:
        async with opened(pg_url) as one, opened(pg_url) as two:
            lease = await one.lease_run("r1")
            assert lease.held
            with pytest.raises(RunLockedError, match=rf"pid {os.getpid()} on host \S+ since"):
                await two.lease_run("r1")
            with pytest.raises(RunLockedError):
                await one.lease_run("r1")  # a second lease in the same object too
            await lease.release()
            await lease.release()  # idempotent
            assert not lease.held
            again = await two.lease_run("r1")
            await again.release()

    arun(main())


@pytest.fixture
def holder(pg_url: str) -> Iterator[Any]:
    """Start a child process that leases run r1 (saving its root) and holds it."""
    children: list[subprocess.Popen[str]] = []

    def start() -> subprocess.Popen[str]:
        return start_holder(children, HOLDER, [pg_url], "leased")

    yield start
    stop_children(children)


async def _lease_when_free(store: Any, run_id: str) -> Any:
    """Lease the run once the server has ended a dead holder's session (bounded wait)."""
    deadline = time.monotonic() + 30
    while True:
        try:
            return await store.lease_run(run_id)
        except RunLockedError:
            if time.monotonic() > deadline:
                raise
            await asyncio.sleep(0.02)


def _end_lease_sessions(url: str) -> None:
    """End every session holding an advisory lock (a network cut, a server-side kill)."""
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(
            "SELECT pg_terminate_backend(pid) FROM pg_locks WHERE locktype = 'advisory' AND granted"
        )


def test_a_lease_excludes_other_processes_and_dies_with_a_sigkilled_holder(
    pg_url: str, holder: Any
) -> None:
    child = holder()

    async def main() -> None:
        async with opened(pg_url) as store:
            with pytest.raises(RunLockedError, match=rf"pid {child.pid} on host"):
                await store.lease_run("r1")
            [summary] = await store.list_runs()
            assert summary.status == "running"
            os.kill(child.pid, signal.SIGKILL)
            assert child.wait() == -signal.SIGKILL
            lease = await _lease_when_free(store, "r1")  # the server dropped the lock
            assert (await store.run_summary("r1")).status == "running"
            await store.save(ckpt("r1", 1))  # taken over: the chain goes on
            await lease.release()
            assert (await store.run_summary("r1")).status == "interrupted"
            assert await store.list_checkpoint_ids() == ["r1.0", "r1.1"]

    arun(main())


def test_a_writer_whose_lease_was_taken_over_cannot_append(pg_url: str) -> None:
    async def main() -> None:
        async with opened(pg_url) as stale, opened(pg_url) as fresh:
            lease = await stale.lease_run("r1")
            await stale.save(ckpt("r1", 0))
            # Its lease's session ends (a network cut, a server-side kill): the lock is gone.
            _end_lease_sessions(pg_url)
            taken = await _lease_when_free(fresh, "r1")
            # The head did not move, yet the stale writer's next link is refused.
            with pytest.raises(CheckpointCorruptError, match=r"lost its lease|taken over"):
                await stale.save(ckpt("r1", 1))
            await fresh.save(ckpt("r1", 1))
            await taken.release()
            await lease.release()
            assert await fresh.list_checkpoint_ids() == ["r1.0", "r1.1"]

    arun(main())


def test_a_stale_fence_is_refused_by_the_database_even_with_the_head_unmoved(pg_url: str) -> None:
    async def main() -> None:
        async with opened(pg_url) as store:
            lease = await store.lease_run("r1")
            await store.save(ckpt("r1", 0))
            with psycopg.connect(pg_url, autocommit=True) as conn:  # what a takeover does
                conn.execute("UPDATE wfctl_runs SET fence = nextval('wfctl_fence')")
            with pytest.raises(CheckpointCorruptError, match=r"taken over \(fence \d+, the run"):
                await store.save(ckpt("r1", 1))
            await lease.release()
            assert await store.list_checkpoint_ids() == ["r1.0"]

    arun(main())


def test_a_pause_request_from_another_store_reaches_the_lease(pg_url: str) -> None:
    async def main() -> None:
        async with opened(pg_url) as driver, opened(pg_url) as other:
            lease = await driver.lease_run("r1")
            await driver.save(ckpt("r1", 0))
            assert not lease.pause_requested()
            await other.request_pause("r1")
            await asyncio.wait_for(lease.pause_event.wait(), 30)  # the notification
            assert lease.pause_requested()
            await lease.release()
            # A request made while nobody listened is read when the lease is taken.
            again = await driver.lease_run("r1")
            assert again.pause_requested()
            await again.release()
            await other.clear_pause("r1")
            last = await driver.lease_run("r1")
            assert not last.pause_requested()
            await last.release()

    arun(main())


def test_claims_take_the_oldest_free_run_and_never_the_same_one_twice(pg_url: str) -> None:
    async def main() -> None:
        async with opened(pg_url) as one, opened(pg_url) as two:
            await _save_all(one, "a", ["root"])  # claimable (oldest)
            await _save_all(one, "bb", ["root", "completed"])
            await _save_all(one, "ccc", ["root", "step"])  # claimable, but held below
            await _save_all(one, "dddd", ["root", "pause"])
            await _save_all(one, "eeeee", ["root", "step", "failed"])
            await _save_all(one, "ffffff", ["root", "step", "failed", "resume"])  # claimable
            await _save_all(one, "ggggggg", ["root", "cancelled"])
            await _save_all(one, "hhhhhhhh", ["root", "step"])  # claimable, excluded below
            held = await one.lease_run("ccc")
            first, second = await asyncio.gather(
                one.claim_run(exclude=["hhhhhhhh"]), two.claim_run(exclude=["hhhhhhhh"])
            )
            assert first is not None and second is not None
            assert {first.run_id, second.run_id} == {"a", "ffffff"}
            assert await one.claim_run(exclude=["hhhhhhhh"]) is None
            third = await two.claim_run()
            assert third is not None and third.run_id == "hhhhhhhh"
            claimer = one if first.run_id == "a" else two
            await claimer.save(ckpt("a", 1))  # a claim is a lease: it may append
            for lease in (held, first, second, third):
                await lease.release()
            oldest = await one.claim_run()
            assert oldest is not None and oldest.run_id == "a"
            await oldest.release()

    arun(main())


def test_a_server_restart_mid_run_fails_the_save_cleanly_and_loses_nothing(
    pg_server: PrivateServer, pg_url: str
) -> None:
    async def main() -> None:
        async with opened(pg_url) as store:
            lease = await store.lease_run("r1")
            await store.save(ckpt("r1", 0))
            await store.save(ckpt("r1", 1))
            restart(pg_server)  # every session ends, the lease's too
            with pytest.raises(WfctlError) as failed:
                await store.save(ckpt("r1", 2))
            assert "\n" not in str(failed.value)
            assert await store.list_checkpoint_ids() == ["r1.0", "r1.1"]  # nothing half-written
            assert (await store.run_summary("r1")).status == "interrupted"
            await lease.release()
            resumed = await store.lease_run("r1")  # the run goes on from its head
            await store.save(ckpt("r1", 2))
            await resumed.release()
            assert await store.list_checkpoint_ids() == ["r1.0", "r1.1", "r1.2"]

    arun(main())


#: The backend holding run r1's lease (its advisory lock), and the last statement it ran.
_LEASE_BACKEND = (
    "SELECT a.pid, a.query FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid"
    " WHERE l.locktype = 'advisory' AND l.granted AND l.objsubid = 1"
    f" AND ((l.classid::bigint << 32) | l.objid::bigint) = hashtextextended('r1', {LOCK_SEED})"
)


def _query(url: str, query: str, params: Any = None) -> list[tuple[Any, ...]]:
    """Run one statement on a connection of its own, blocking (the test's loop does not run)."""
    with psycopg.connect(url, autocommit=True) as conn:
        cursor = conn.execute(query, params)
        return cursor.fetchall() if cursor.description else []


def _xids(url: str) -> int:
    """The next transaction id the server assigns (each transaction that writes takes one)."""
    [(xmax,)] = _query(url, "SELECT pg_snapshot_xmax(pg_current_snapshot())::text")
    return int(xmax)


def test_saves_go_over_the_lease_connection_one_transaction_each_and_no_pool_checkout(
    pg_url: str,
) -> None:
    async def main() -> None:
        async with opened(pg_url) as store:
            lease = await store.lease_run("r1")
            pool = await store._ready()
            requests = pool.get_stats().get("requests_num", 0)
            xids = _xids(pg_url)
            for seq in range(20):
                await store.save(ckpt("r1", seq))
            assert _xids(pg_url) - xids == 20  # one transaction per save, nothing else writes
            assert pool.get_stats().get("requests_num", 0) == requests  # no pooled connection
            [(_, last)] = _query(pg_url, _LEASE_BACKEND)
            # On the locked session (its prepared INSERT shows as the PREPARE that made it).
            assert "INSERT INTO wfctl_checkpoints" in last
            await lease.release()
            assert len(await store.list_checkpoint_ids()) == 20

    arun(main())


class _CountingLoop(asyncio.SelectorEventLoop):
    """An event loop that counts, while ``counting``, the readers, writers and timers asked of it
    (``call_later`` goes through ``call_at``)."""

    COUNTED = ("add_reader", "remove_reader", "add_writer", "remove_writer", "call_at")

    def __init__(self) -> None:
        super().__init__()
        self.counting = False
        self.calls: collections.Counter[str] = collections.Counter()


def _counted(name: str) -> Any:
    plain = getattr(asyncio.SelectorEventLoop, name)

    def method(self: _CountingLoop, *args: Any, **kwargs: Any) -> Any:
        if self.counting:
            self.calls[name] += 1
        return plain(self, *args, **kwargs)

    return method


for _name in _CountingLoop.COUNTED:
    setattr(_CountingLoop, _name, _counted(_name))


class _Waits:
    """Awaits a coroutine and records each object it waits on (what it yields to the task).

    What the task throws in (a cancellation) goes on to the coroutine, as ``await`` would.
    """

    def __init__(self, coro: Coroutine[Any, Any, None]) -> None:
        self.coro = coro
        self.waited: list[Any] = []
        self.waiting = asyncio.Event()  # set at its first wait

    def __await__(self) -> Generator[Any, Any, None]:
        step = self.coro.send
        value: Any = None
        while True:
            try:
                waiting = step(value)
            except StopIteration:
                return
            self.waited.append(waiting)
            self.waiting.set()
            try:
                value, step = (yield waiting), self.coro.send
            except BaseException as exc:  # each goes on to the coroutine
                value, step = exc, self.coro.throw


@pytest.fixture
def patient(monkeypatch: pytest.MonkeyPatch) -> None:
    """A save alone on its store waits for its reply in place for up to a minute (1 ms by
    default): on a slow machine a reply may take longer than 1 ms, and the save would then wait
    in the loop instead; no test should hang on it, or depend on the machine's speed."""
    monkeypatch.setattr(_lease, "INLINE_WAIT_MS", 60_000)


def _counting_saves(
    url: str,
    saves: Callable[[_CountingLoop, PostgresCheckpointStorage], Awaitable[None]],
    *,
    alone: bool = True,
) -> None:
    """Lease run r1 and save its root, then await ``saves(loop, store)`` on a counting loop;
    with ``alone=False`` the store holds a second lease (on run r2) meanwhile."""

    async def main() -> None:
        loop = asyncio.get_running_loop()
        assert isinstance(loop, _CountingLoop)
        async with opened(url) as store:
            lease = await store.lease_run("r1")
            other = None if alone else await store.lease_run("r2")
            await store.save(ckpt("r1", 0))
            await saves(loop, store)
            await lease.release()
            if other is not None:
                await other.release()

    with asyncio.Runner(loop_factory=_CountingLoop) as runner:
        runner.run(main())


def test_a_store_s_only_lease_saves_in_place_without_a_turn_of_the_loop(
    pg_url: str, patient: None
) -> None:
    """Alone on its store, a lease's save waits for its reply in place: it never yields to the
    event loop, and adds nothing to it."""

    async def saves(loop: _CountingLoop, store: PostgresCheckpointStorage) -> None:
        loop.counting = True
        for seq in range(1, 21):
            waits = _Waits(store.save(ckpt("r1", seq)))
            await waits
            assert waits.waited == []
        loop.counting = False
        assert dict(loop.calls) == {}
        assert len(await store.list_checkpoint_ids()) == 21

    _counting_saves(pg_url, saves)


def test_beside_another_lease_a_save_waits_once_on_a_plain_future_and_adds_nothing_to_the_loop(
    pg_url: str, patient: None
) -> None:
    """With a second lease on its store (another run could use the loop meanwhile), a save is
    one send and one wait for its reply, on the reader the lease keeps on its socket: nothing
    is added to or removed from the event loop per save, and the one thing it waits on is a
    plain future (which any task may await), not a task or a timer."""

    async def saves(loop: _CountingLoop, store: PostgresCheckpointStorage) -> None:
        waited: list[Any] = []
        loop.counting = True
        for seq in range(1, 21):
            waits = _Waits(store.save(ckpt("r1", seq)))
            await waits
            waited += waits.waited
        loop.counting = False
        assert dict(loop.calls) == {}
        assert len(waited) == 20
        assert all(isinstance(w, asyncio.Future) for w in waited)
        assert not any(isinstance(w, asyncio.Task) for w in waited)
        assert len(await store.list_checkpoint_ids()) == 21

    _counting_saves(pg_url, saves, alone=False)


def test_a_save_whose_reply_is_late_waits_in_the_loop_and_so_do_the_lease_s_next_few(
    pg_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A reply that has not come within INLINE_WAIT_MS is waited for in the loop; the lease's
    next INLINE_SKIP saves wait there at once, and the one after waits in place again."""
    monkeypatch.setattr(_lease, "INLINE_WAIT_MS", 20)
    monkeypatch.setattr(_lease, "INLINE_SKIP", 2)

    async def main() -> None:
        async with opened(pg_url) as store:
            lease = await store.lease_run("r1")
            await store.save(ckpt("r1", 0))
            # Another session holds a lock the INSERT needs: no reply can come until it ends.
            with psycopg.connect(pg_url) as blocker:
                blocker.execute("LOCK TABLE wfctl_checkpoints IN EXCLUSIVE MODE")
                late = _Waits(store.save(ckpt("r1", 1)))
                saving = asyncio.ensure_future(late)
                await late.waiting.wait()  # it gave up waiting in place: it waits in the loop
                blocker.rollback()
            await saving
            assert len(late.waited) == 1
            monkeypatch.setattr(_lease, "INLINE_WAIT_MS", 60_000)
            waited = []
            for seq in (2, 3, 4):
                waits = _Waits(store.save(ckpt("r1", seq)))
                await waits
                waited.append(len(waits.waited))
            assert waited == [1, 1, 0]
            await lease.release()
            assert len(await store.list_checkpoint_ids()) == 5

    arun(main())


def test_a_save_larger_than_the_socket_takes_at_once_is_sent_whole(pg_url: str) -> None:
    # 1 MiB, incompressible (a record that compresses is stored packed, a few kB): more than a
    # socket's buffer takes at once.
    blob = base64.b64encode(hashlib.shake_256(b"blob").digest(786_432)).decode()

    async def saves(loop: _CountingLoop, store: PostgresCheckpointStorage) -> None:
        # A small send buffer: the server cannot read the record as fast as libpq would send
        # it (with the default one, it sometimes kept up and the record went in one send).
        with socket.socket(fileno=os.dup(store._leases["r1"]._fd)) as sock:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 4096)
        loop.counting = True
        await store.save(ckpt("r1", 1, data={"blob": blob}))
        loop.counting = False
        assert loop.calls["add_writer"] == 1 == loop.calls["remove_writer"]  # sent in parts
        await store.save(ckpt("r1", 2))
        assert (await store.load("r1.1")).data == {"blob": blob}
        assert await store.list_checkpoint_ids() == ["r1.0", "r1.1", "r1.2"]

    _counting_saves(pg_url, saves)


def test_a_save_whose_caller_is_cancelled_still_lands_and_the_next_one_waits_for_it(
    pg_url: str,
) -> None:
    async def main() -> None:
        async with opened(pg_url) as store:
            lease = await store.lease_run("r1")
            other = await store.lease_run("r2")  # so the save waits in the loop
            await store.save(ckpt("r1", 0))
            waits = _Waits(store.save(ckpt("r1", 1)))
            caller = asyncio.ensure_future(waits)
            await waits.waiting.wait()  # sent: waiting for its reply
            caller.cancel()
            with pytest.raises(asyncio.CancelledError):
                await caller
            await store.save(ckpt("r1", 2))  # sent once the cancelled one's reply is read
            await lease.release()
            await other.release()
            assert await store.list_checkpoint_ids() == ["r1.0", "r1.1", "r1.2"]

    arun(main())


class _Interrupted:
    """A poll of the socket that a Ctrl-C (KeyboardInterrupt) ends."""

    def poll(self, timeout: int) -> list[tuple[int, int]]:
        raise KeyboardInterrupt


def test_an_interrupted_wait_in_place_leaves_the_reply_to_the_socket_s_reader(
    pg_url: str, patient: None
) -> None:
    """A save whose wait in place is interrupted still lands, and the lease's next statement
    runs once the socket's reader has read its reply."""

    async def main() -> None:
        async with opened(pg_url) as store:
            lease = await store.lease_run("r1")
            await store.save(ckpt("r1", 0))
            poll, lease._poll = lease._poll, _Interrupted()
            with pytest.raises(KeyboardInterrupt):
                await store.save(ckpt("r1", 1))
            lease._poll = poll
            # Bounded: were the reply left unread, the connection would stay taken for good.
            await asyncio.wait_for(store.save(ckpt("r1", 2)), 60)
            await lease.release()
            assert await store.list_checkpoint_ids() == ["r1.0", "r1.1", "r1.2"]

    arun(main())


@pytest.mark.parametrize("alone", [True, False], ids=["in place", "in the loop"])
def test_a_save_after_the_lease_session_ended_fails_even_before_the_lease_noticed(
    pg_url: str, patient: None, alone: bool
) -> None:
    async def main() -> None:
        async with opened(pg_url) as store:
            lease = await store.lease_run("r1")
            other = None if alone else await store.lease_run("r2")
            await store.save(ckpt("r1", 0))
            [(pid, _)] = _query(pg_url, _LEASE_BACKEND)
            # Ended, and waited for: the lock is gone; the loop has not run since.
            _query(pg_url, "SELECT pg_terminate_backend(%s, 10000)", (pid,))
            with pytest.raises(LeaseLostError, match=r"^run 'r1' lost its lease") as failed:
                await store.save(ckpt("r1", 1))  # it would land without the run's lock
            assert "wfctl resume r1" in str(failed.value)
            assert not lease.held
            assert await store.list_checkpoint_ids() == ["r1.0"]
            with pytest.raises(LeaseLostError):
                await store.save(ckpt("r1", 1))  # refused at once now
            await lease.release()
            again = await store.lease_run("r1")
            await store.save(ckpt("r1", 1))
            await again.release()
            if other is not None:
                await other.release()
            assert await store.list_checkpoint_ids() == ["r1.0", "r1.1"]

    arun(main())


@pytest.mark.parametrize("alone", [True, False], ids=["in place", "in the loop"])
def test_a_pause_request_read_during_a_save_on_the_lease_connection_is_not_lost(
    pg_url: str, patient: None, alone: bool
) -> None:
    async def main() -> None:
        async with opened(pg_url) as store:
            lease = await store.lease_run("r1")
            other = None if alone else await store.lease_run("r2")
            await store.save(ckpt("r1", 0))
            _query(pg_url, PAUSE, {"flag": True, "run": "r1", "note": "1:r1"})
            # The save's statement is sent before the loop runs again, so the notification is
            # read with its result (the server sends it before the save's ReadyForQuery).
            await store.save(ckpt("r1", 1))
            assert lease._notified  # internal: read with the save's reply, not dropped
            # It only wakes the lease, which reads the run's flag (the request) next.
            await asyncio.wait_for(lease.pause_event.wait(), 30)
            await lease.release()
            if other is not None:
                await other.release()

    arun(main())


#: The server processes of client connections to the current database (this query's own too).
_SESSIONS = (
    "SELECT pid FROM pg_stat_activity WHERE datname = current_database()"
    " AND backend_type = 'client backend'"
)


def _backend_pid(lease: Any) -> int:
    """The server process of a lease's connection (internal: the connection it holds)."""
    return int(lease._conn.pgconn.backend_pid)


def test_a_released_lease_gives_its_connection_to_the_next_lease(pg_url: str) -> None:
    # A new connection is a new server process (about 5 ms): a lease released unlocked hands
    # its connection on, and the run it held is free for anyone.
    async def main() -> None:
        async with opened(pg_url) as store, opened(pg_url) as other:
            first = await store.lease_run("r1")
            await store.save(ckpt("r1", 0))
            pid = _backend_pid(first)
            await first.release()
            taken = await other.lease_run("r1")  # unlocked: another store object takes it
            await taken.release()
            second = await store.lease_run("r2")
            assert _backend_pid(second) == pid  # the same session, now holding r2 only
            await store.save(ckpt("r2", 0))
            held = _query(pg_url, "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory'")
            assert held == [(1,)]
            with pytest.raises(RunLockedError):
                await other.lease_run("r2")
            await second.release()

    arun(main())


def test_a_store_s_first_lease_takes_the_connection_its_schema_was_checked_on(
    pg_url: str,
) -> None:
    # Opening the store connects twice (the schema's check, then the pool); the first lease
    # makes no third connection: it takes the first, and makes it a lease connection.
    async def main() -> None:
        async with opened(pg_url) as store, opened(pg_url) as other:
            await store.list_checkpoint_ids()  # opens the store: the schema's check, the pool
            sessions = {pid for (pid,) in _query(pg_url, _SESSIONS)}
            lease = await store.lease_run("r1")
            assert _backend_pid(lease) in sessions  # no new server process
            await store.save(ckpt("r1", 0))  # the save prepared on it
            await other.request_pause("r1")
            await asyncio.wait_for(lease.pause_event.wait(), 30)  # and listening on it
            second = await store.lease_run("r2")  # nothing left to take: a new connection
            assert _backend_pid(second) not in sessions
            await second.release()
            await lease.release()
            assert await store.list_checkpoint_ids() == ["r1.0"]

    arun(main())


def test_a_spare_connection_whose_session_ended_is_replaced(pg_url: str) -> None:
    async def main() -> None:
        async with opened(pg_url) as store:
            first = await store.lease_run("r1")
            pid = _backend_pid(first)
            await first.release()
            _query(pg_url, "SELECT pg_terminate_backend(%s, 10000)", (pid,))
            second = await store.lease_run("r1")  # not the ended one: a new connection
            assert _backend_pid(second) != pid
            await store.save(ckpt("r1", 0))
            await second.release()
            assert await store.list_checkpoint_ids() == ["r1.0"]

    arun(main())


def test_a_lease_on_a_spare_connection_hears_its_own_run_s_pause_requests_only(
    pg_url: str,
) -> None:
    async def main() -> None:
        async with opened(pg_url) as driver, opened(pg_url) as other:
            for run_id in ("r1", "r2"):
                await _save_all(driver, run_id, ["root"])
            first = await driver.lease_run("r1")
            pid = _backend_pid(first)
            await first.release()
            await other.request_pause("r1")  # notified to the spare connection, unread
            lease = await driver.lease_run("r2")
            assert _backend_pid(lease) == pid
            assert not lease.pause_requested()  # r1's request is not r2's
            await other.request_pause("r2")
            await asyncio.wait_for(lease.pause_event.wait(), 30)  # the notification
            await lease.release()

    arun(main())


def test_a_lease_whose_unlock_is_not_confirmed_closes_its_connection(pg_url: str) -> None:
    async def main() -> None:
        async with opened(pg_url) as store:
            lease = await store.lease_run("r1")
            pid = _backend_pid(lease)
            await lease.execute("SELECT pg_advisory_unlock_all()")  # the lock gone already
            await lease.release()  # its unlock says false: the connection is not kept
            again = await store.lease_run("r2")
            assert _backend_pid(again) != pid
            await again.release()

    arun(main())


def test_a_store_dropped_without_aclose_closes_its_kept_connections(pg_url: str) -> None:
    async def main() -> None:
        store = PostgresCheckpointStorage(pg_url)
        lease = await store.lease_run("r1")
        await lease.release()  # its connection is kept for the next lease

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        arun(main())
        gc.collect()
    assert [str(w.message) for w in caught if w.category is ResourceWarning] == []


def test_a_lease_whose_session_ended_is_not_taken_again_by_its_store_until_released(
    pg_url: str,
) -> None:
    """A store keeps one lease per run and saves through it: while a lease whose session ended
    is still held by its drive, the same store neither leases nor claims the run again (else the
    old drive's saves would go out under the new lease); once released, it does."""

    async def main() -> None:
        async with opened(pg_url) as store, opened(pg_url) as other:
            lease = await store.lease_run("r1")
            await store.save(ckpt("r1", 0))
            _end_lease_sessions(pg_url)
            # The server has dropped the lock: another store may take the run now.
            await (await _lease_when_free(other, "r1")).release()
            with pytest.raises(RunLockedError, match="another lease of this process"):
                await store.lease_run("r1")
            assert await store.claim_run() is None
            with pytest.raises(LeaseLostError):
                await store.save(ckpt("r1", 1))
            await lease.release()
            again = await store.lease_run("r1")
            await store.save(ckpt("r1", 1))
            await again.release()

    arun(main())
