"""One process, one PostgreSQL measurement: ``python bench/_pg_worker.py ENGINE MODE N URL``.

Modes: ``sequential`` runs N steps and times them (wall and CPU); ``crash`` runs the same
workflow as run ``bench`` and SIGKILLs its own process the moment step ``--crash-at`` has
returned to the workflow (so nothing after that return gets a chance to run); ``recover``
continues that run in a fresh process and reports how many steps that had returned before the
kill ran again. Prints one JSON line: ``status`` (``ok``, ``wrong``, ``not available``),
``note``, ``seconds``, ``cpu_seconds``, ``rerun``, and with ``--stats-url`` (a database of the
same server with pg_stat_statements) ``statements``, ``server_exec_ms`` and ``transaction_ids``:
what the server did during the timed run. Set-up (connecting, creating tables or schemas,
launching DBOS) is not timed, nor counted; only the workflow run is.
"""

from __future__ import annotations

import argparse
import asyncio
import inspect
import json
import os
import signal
import sys
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

BENCH = Path(__file__).resolve().parent
sys.path.insert(1, str(BENCH.parent))  # the wfctl being developed, as _worker.py does
sys.path.insert(0, str(BENCH))

from engines import _common as common  # noqa: E402 - needs the path above

__all__ = ["ENGINES", "measure"]

#: The run id (thread id, workflow id) every engine's crash and recover modes use.
RUN_ID = "bench"
#: Size of the floor's record: about what one step's checkpoint row holds.
FLOOR_RECORD_BYTES = 300
#: Indices of the step bodies executed in this process, in order.
EXECUTED: list[int] = []
#: Kill this process once this many steps have returned to the workflow (crash mode only).
CRASH_AT: int | None = None
#: How long wfctl's recovery waits for the killed process's lease to end (its expiry, if any).
LEASE_WAIT_SECONDS = 120.0


class NotAvailable(Exception):
    """The engine cannot be measured here (not installed, or wfctl cannot open the URL yet)."""


def work(text: str) -> str:
    """The step body every engine wraps: remember which step ran, then do the shared work."""
    EXECUTED.append(int(text[5:14]))  # payload(i) is "call-<i:09d>-..."
    return common.run_step(text)


def returned(i: int) -> None:
    """Called by each workflow once step ``i`` returned to it: the crash point of crash mode."""
    if CRASH_AT is not None and i + 1 == CRASH_AT:
        os.kill(os.getpid(), signal.SIGKILL)


async def call_steps(echo: Callable[[str], Awaitable[str]], steps: int) -> str:
    """The workflow every async engine runs: ``steps`` steps in turn, each one's result awaited."""
    result = ""
    for i in range(steps):
        result = await echo(common.payload(i))
        returned(i)
    return result


def call_steps_sync(echo: Callable[[str], str], steps: int) -> str:
    """The same workflow for the synchronous engines."""
    result = ""
    for i in range(steps):
        result = echo(common.payload(i))
        returned(i)
    return result


Timed = tuple[Any, float, float]


class ServerCounts:
    """What the server did during the measured run: statements run in the measured database
    (pg_stat_statements, BEGIN and COMMIT included), the time the server spent executing them
    (transaction control left out: a ``COMMIT``'s time is mostly its wait for the WAL flush,
    which an autocommit statement's time does not include either), and transaction ids
    assigned on the server (one per transaction that wrote: a commit the client waits for).
    Read on a connection of its own, to another database, so the reading is not counted."""

    def __init__(self, stats_url: str, url: str) -> None:
        import psycopg
        from psycopg.conninfo import conninfo_to_dict

        self.conn = psycopg.connect(stats_url, autocommit=True)
        self.database = str(conninfo_to_dict(url)["dbname"])
        self.before = (0, 0)
        self.exec_before = 0.0
        self.counted: dict[str, float] = {}

    def read(self) -> tuple[int, int]:
        row = self.conn.execute(
            "SELECT (SELECT coalesce(sum(calls), 0) FROM pg_stat_statements s"
            " JOIN pg_database d ON d.oid = s.dbid WHERE d.datname = %s),"
            " pg_snapshot_xmax(pg_current_snapshot())::text::bigint",
            (self.database,),
        ).fetchone()
        assert row is not None
        return int(row[0]), int(row[1])

    def exec_ms(self) -> float:
        """Milliseconds the server spent executing the database's statements so far, but for
        transaction control (``BEGIN``, ``COMMIT``, ``ROLLBACK``, ...)."""
        row = self.conn.execute(
            "SELECT coalesce(sum(s.total_exec_time), 0) FROM pg_stat_statements s"
            " JOIN pg_database d ON d.oid = s.dbid WHERE d.datname = %s"
            r" AND s.query !~* '^\s*(begin|commit|rollback|start|end|abort)\M'",
            (self.database,),
        ).fetchone()
        assert row is not None
        return float(row[0])

    def begin(self) -> None:
        self.before = self.read()
        self.exec_before = self.exec_ms()

    def end(self) -> None:
        after = self.read()
        self.counted = {
            "statements": after[0] - self.before[0],
            "transaction_ids": after[1] - self.before[1],
            "server_exec_ms": self.exec_ms() - self.exec_before,
        }


#: Set when the parent asks for the server's counts (``--stats-url``).
COUNTS: ServerCounts | None = None


def _start() -> tuple[float, float]:
    if COUNTS is not None:
        COUNTS.begin()
    return time.perf_counter(), time.process_time()


def _stop(result: Any, started: tuple[float, float]) -> Timed:
    wall, cpu = time.perf_counter() - started[0], time.process_time() - started[1]
    if COUNTS is not None:
        COUNTS.end()
    return result, wall, cpu


async def timed(run: Callable[[], Awaitable[Any]]) -> Timed:
    """Await ``run()``; return its result, wall seconds and CPU seconds of this process."""
    started = _start()
    return _stop(await run(), started)


def timed_sync(run: Callable[[], Any]) -> Timed:
    """Call ``run()``; return its result, wall seconds and CPU seconds of this process."""
    started = _start()
    return _stop(run(), started)


# -- the floor ------------------------------------------------------------------------------------


async def floor(url: str, n: int, mode: str) -> Timed:
    """N autocommit INSERTs of ~300 bytes on one async psycopg connection."""
    if mode != "sequential":
        raise NotAvailable("the floor stores no workflow to recover")
    import psycopg

    records = [(common.payload(i) * 3)[:FLOOR_RECORD_BYTES] for i in range(n)]
    async with await psycopg.AsyncConnection.connect(url, autocommit=True) as conn:
        await conn.execute("CREATE TABLE floor (id bigserial PRIMARY KEY, body text NOT NULL)")

        async def insert_all() -> None:
            for record in records:
                await conn.execute("INSERT INTO floor (body) VALUES (%s)", (record,))

        _, wall, cpu = await timed(insert_all)
        cursor = await conn.execute("SELECT count(*) FROM floor")
        stored = await cursor.fetchone()
        return (stored[0] if stored else 0), wall, cpu


# -- LangGraph ------------------------------------------------------------------------------------


def _langgraph_input(n: int, mode: str) -> Any:
    return None if mode == "recover" else n  # None continues the thread from its checkpoint


async def langgraph_async(url: str, n: int, mode: str) -> Timed:
    """The functional API (``@entrypoint``/``@task``) on ``AsyncPostgresSaver``, as in
    bench/engines/langgraph_engine.py: one entrypoint call, N tasks awaited in turn."""
    from langgraph.checkpoint.postgres.aio import AsyncPostgresSaver
    from langgraph.func import entrypoint, task

    @task
    async def echo(text: str) -> str:
        return work(text)

    async def body(steps: int) -> str:
        return await call_steps(echo, steps)

    config: Any = {"configurable": {"thread_id": RUN_ID}}
    async with AsyncPostgresSaver.from_conn_string(url) as saver:
        await saver.setup()
        graph = entrypoint(checkpointer=saver)(body)
        return await timed(lambda: graph.ainvoke(_langgraph_input(n, mode), config))


def langgraph_sync(url: str, n: int, mode: str) -> Timed:
    """The same workflow, synchronous, on ``PostgresSaver``."""
    from langgraph.checkpoint.postgres import PostgresSaver
    from langgraph.func import entrypoint, task

    @task
    def echo(text: str) -> str:
        return work(text)

    def body(steps: int) -> str:
        return call_steps_sync(lambda text: echo(text).result(), steps)

    config: Any = {"configurable": {"thread_id": RUN_ID}}
    with PostgresSaver.from_conn_string(url) as saver:
        saver.setup()
        graph = entrypoint(checkpointer=saver)(body)
        return timed_sync(lambda: graph.invoke(_langgraph_input(n, mode), config))


# -- DBOS -----------------------------------------------------------------------------------------


def dbos(url: str, n: int, mode: str) -> Timed:
    """A synchronous ``@DBOS.workflow`` calling N ``@DBOS.step``; its system database is ``url``.

    Recovery is DBOS's own: ``DBOS.launch()`` resumes the pending workflow; this process waits
    for its result.
    """
    from dbos import DBOS, SetWorkflowID

    @DBOS.step()
    def echo(text: str) -> str:
        return work(text)

    @DBOS.workflow()
    def bench_workflow(steps: int) -> str:
        return call_steps_sync(echo, steps)

    DBOS(
        config={
            "name": "bench",
            "system_database_url": url,
            "run_admin_server": False,
            "application_version": "bench",  # the recovering process must match the crashed one
            "log_level": "WARNING",
        }
    )
    DBOS.launch()
    try:
        if mode == "recover":
            return timed_sync(DBOS.retrieve_workflow(RUN_ID).get_result)

        def start() -> str:
            with SetWorkflowID(RUN_ID):
                result: str = bench_workflow(n)
                return result

        return timed_sync(start)
    finally:
        DBOS.destroy()


# -- wfctl ----------------------------------------------------------------------------------------


async def wfctl(url: str, n: int, mode: str) -> Timed:
    """A ``@workflow`` calling N ``@step`` on ``open_storage(url)``; recovery is ``resume``."""
    from wfctl import StoreLocationError, step, workflow
    from wfctl.storage import open_storage

    @step
    async def echo(text: str) -> str:
        return work(text)

    @workflow(name="bench_pg_sequential")
    async def sequential_wf(steps: int) -> str:
        return await call_steps(echo, steps)

    try:
        storage = open_storage(url)
    except StoreLocationError as exc:
        raise NotAvailable(f"open_storage refused the URL ({exc.reason})") from None
    try:
        await storage.get_latest(run_id=RUN_ID)  # connect and create the schema: set-up
        wf = sequential_wf.build(checkpoint_storage=storage)
        if mode == "recover":
            outcome = await timed(lambda: resume_when_free(wf.resume))
        else:
            outcome = await timed(lambda: wf.run(n, run_id=RUN_ID))
        result, wall, cpu = outcome
        outputs = result.get_outputs()
        return (outputs[-1] if outputs else None), wall, cpu
    finally:
        await storage.aclose()


async def resume_when_free(resume: Callable[[str], Awaitable[Any]]) -> Any:
    """Resume the killed run once the dead process's lease is gone: at once where the lease
    ends with its connection, after the expiry where it is a row with a deadline."""
    from wfctl import RunLockedError

    deadline = time.monotonic() + LEASE_WAIT_SECONDS
    while True:
        try:
            return await resume(RUN_ID)
        except RunLockedError:
            if time.monotonic() > deadline:
                raise
            await asyncio.sleep(0.1)


#: Each engine's measurement: async ones run in ``asyncio.run``, sync ones (their own threads) not.
ENGINES: dict[str, Callable[[str, int, str], Awaitable[Timed] | Timed]] = {
    "floor": floor,
    "langgraph_async": langgraph_async,
    "langgraph_sync": langgraph_sync,
    "dbos": dbos,
    "wfctl": wfctl,
}


def measure(
    engine: str, mode: str, n: int, url: str, crash_at: int, stats_url: str | None = None
) -> dict[str, Any]:
    """Make one measurement and return the JSON object the worker prints."""
    global CRASH_AT, COUNTS
    row: dict[str, Any] = {"engine": engine, "mode": mode, "n": n}
    CRASH_AT = crash_at if mode == "crash" else None
    COUNTS = ServerCounts(stats_url, url) if stats_url else None
    try:
        outcome = ENGINES[engine](url, n, mode)
        result, wall, cpu = asyncio.run(outcome) if inspect.isawaitable(outcome) else outcome
    except (NotAvailable, ModuleNotFoundError) as exc:
        return row | {"status": "not available", "note": str(exc)}
    row |= {"status": "ok", "note": "", "seconds": wall, "cpu_seconds": cpu}
    row |= COUNTS.counted if COUNTS is not None else {}
    expected = n if engine == "floor" else common.expected_outputs(n)[-1]  # rows / last output
    if result != expected:
        row |= {"status": "wrong", "note": f"wrong output: {repr(result)[:160]}"}
    if mode == "recover":
        row["rerun"] = sum(1 for i in EXECUTED if i < crash_at)
        row["executed"] = len(EXECUTED)
    return row


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("engine", choices=sorted(ENGINES))
    parser.add_argument("mode", choices=("sequential", "crash", "recover"))
    parser.add_argument("n", type=int, help="number of sequential steps")
    parser.add_argument("url", help="postgresql:// URL of the fresh database to use")
    parser.add_argument("--crash-at", type=int, default=0, help="steps returned before the kill")
    parser.add_argument(
        "--stats-url", help="a database of the same server to count statements from"
    )
    args = parser.parse_args()
    row = measure(args.engine, args.mode, args.n, args.url, args.crash_at, args.stats_url)
    print(json.dumps(row), flush=True)


if __name__ == "__main__":
    main()
