"""ms per step on PostgreSQL: wfctl's store against the commit floor, CPU and wall.

On a private PostgreSQL server (``fsync`` and ``synchronous_commit`` on; or ``--url``), runs
interleaved repetitions of:

- ``floor``: one autocommit ``INSERT`` of ~300 bytes per step over one async psycopg
  connection (what any durable step must at least cost: one round trip, one commit);
- ``wfctl save``: the store alone, ``save()`` of N step checkpoints of a 100-character result
  (the record is what the engine writes for such a step);
- ``wfctl run``: a ``@workflow`` of N sequential ``@step`` calls, each returning a distinct
  100-character string, on ``open_storage(url)`` (root, N step records, the end).

and prints the median per step of wall time and of this process's CPU time
(``time.process_time``: the server's CPU is not in it). Wall times on a busy machine are
noisy; the interleaving keeps the rows comparable.

Usage::

    python bench/postgres_steps.py [--steps 1000] [--rounds 3] [--url postgresql://...]
        [--setting synchronous_commit=off ...]

``--setting`` starts the private server with that setting: ``synchronous_commit=off`` takes
the commit's flush out of every row, to see what each adds above the floor on a machine whose
disk flush dominates (not a durable configuration).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import statistics
import time
import uuid
from collections.abc import Awaitable, Callable, Iterator

import psycopg

from wfctl import step, workflow
from wfctl._records._checkpoint import Checkpoint, Kind, checkpoint_id_for
from wfctl._storage._postgres import PostgresCheckpointStorage
from wfctl.storage import open_storage
from wfctl.storage.testing import private_postgres

_TEXT = "x" * 90


@step
async def produce(i: int) -> str:
    return f"{i:09d}-{_TEXT}"  # 100 characters, distinct per step


@workflow
async def steps(n: int) -> int:
    total = 0
    for i in range(n):
        total += len(await produce(i))
    return total


async def _floor(url: str, n: int) -> None:
    body = b"y" * 300
    async with await psycopg.AsyncConnection.connect(url, autocommit=True) as conn:
        await conn.execute(
            "CREATE TABLE IF NOT EXISTS bench_floor (run text, seq int, body bytea,"
            " PRIMARY KEY (run, seq))"
        )
        run = uuid.uuid4().hex
        for seq in range(n):
            await conn.execute(
                "INSERT INTO bench_floor VALUES (%s, %s, %s)", (run, seq, body), prepare=True
            )


async def _saves(url: str, n: int) -> None:
    store = PostgresCheckpointStorage(url)
    run_id = uuid.uuid4().hex
    lease = await store.lease_run(run_id)
    try:
        for seq in range(n + 1):
            await store.save(
                Checkpoint(
                    run_id=run_id,
                    seq=seq,
                    kind=Kind.ROOT if seq == 0 else Kind.STEP,
                    workflow_name="bench",
                    timestamp="2026-01-01T00:00:00.000000+00:00",
                    previous_checkpoint_id=checkpoint_id_for(run_id, seq - 1) if seq else None,
                    data={"results": [[f"produce#{seq}", f"{seq:09d}-{_TEXT}"]]},
                )
            )
    finally:
        await lease.release()
        await store.aclose()


async def _run(url: str, n: int) -> None:
    storage = open_storage(url)
    try:
        result = await steps.build(checkpoint_storage=storage).run(n)
        assert result.status == "completed", result.status
    finally:
        await storage.aclose()


def _measure(body: Callable[[], Awaitable[None]]) -> tuple[float, float]:
    wall, cpu = time.perf_counter(), time.process_time()
    asyncio.run(body())  # type: ignore[arg-type]
    return time.perf_counter() - wall, time.process_time() - cpu


@contextlib.contextmanager
def _server(url: str | None, settings: list[str]) -> Iterator[str]:
    if url is not None:
        yield url
        return
    with private_postgres(*settings) as server:
        yield server.url


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--steps", type=int, default=1000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--url", help="a server to use (default: a private one)")
    parser.add_argument(
        "--setting", action="append", default=[], help="name=value for the private server"
    )
    args = parser.parse_args()
    n = args.steps
    rows: dict[str, Callable[[str], Callable[[], Awaitable[None]]]] = {
        "floor: autocommit INSERT of ~300 B": lambda url: lambda: _floor(url, n),
        "wfctl save() alone": lambda url: lambda: _saves(url, n),
        "wfctl @workflow run": lambda url: lambda: _run(url, n),
    }
    with _server(args.url, args.setting) as url:
        for make in rows.values():  # warm up: schema, caches, imports
            _measure(make(url))
        times: dict[str, list[tuple[float, float]]] = {name: [] for name in rows}
        for _ in range(args.rounds):
            for name, make in rows.items():
                times[name].append(_measure(make(url)))
    floor_wall = statistics.median(w for w, _ in times[next(iter(rows))])
    print(f"{n} sequential steps, {args.rounds} interleaved rounds (median per step)")
    print(f"{'':36} {'wall ms':>8} {'x floor':>8} {'CPU ms':>8}")
    for name, samples in times.items():
        wall = statistics.median(w for w, _ in samples)
        cpu = statistics.median(c for _, c in samples)
        print(f"{name:36} {wall / n * 1e3:8.3f} {wall / floor_wall:8.2f} {cpu / n * 1e3:8.3f}")


if __name__ == "__main__":
    main()
