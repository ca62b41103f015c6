"""Stores written by running real wfctl workflows, for the sources' tests."""

from __future__ import annotations

import asyncio
import base64
import hashlib
from typing import Any

import psycopg
from psycopg import sql

from wfctl import RunContext, step, workflow
from wfctl.storage import open_storage

#: Steps in the long run (each result ~200 kB: ~20 MB of journal, far more than the file
#: store's read buffer of 1 MB, so what streaming holds is seen not to grow with the run).
BIG_STEPS = 100


@step
async def shout(text: str) -> str:
    return text.upper()


@step
async def blob(i: int, size: int) -> str:
    # Incompressible (base64 of a hash's stream): stored as big as it is, not packed.
    noise = hashlib.shake_256(b"%d" % i).digest(size * 3 // 4 + 3)
    return f"{i}:" + base64.b64encode(noise).decode()[:size]


@workflow(name="greet")
async def greet(name: str) -> list[str]:
    first = await shout(f"hello {name}")
    return [first, *await asyncio.gather(*(shout(f"{name} {i}") for i in range(3)))]


@workflow(name="ask")
async def ask(topic: str, ctx: RunContext) -> str:
    draft = await shout(topic)
    verdict: str = await ctx.request_info({"draft": draft}, str)
    return verdict


@workflow(name="boom")
async def boom(topic: str) -> str:
    await shout(topic)
    raise ValueError(f"no {topic}")


@workflow(name="big")
async def big(job: list[int]) -> int:
    n, size = job
    for i in range(n):
        await blob(i, size)
    return n


async def fill(location: str) -> dict[str, str]:
    """Run a completed, a paused and a failed workflow into the store; their run ids."""
    storage = open_storage(location, must_exist=False)
    try:
        done = await greet.build(checkpoint_storage=storage).run("ann")
        paused = await ask.build(checkpoint_storage=storage).run("cats")
        failed: Any = None
        try:
            await boom.build(checkpoint_storage=storage).run("dogs")
        except ValueError as exc:
            failed = exc
        assert failed is not None
        runs = {s.status.value: s.run_id for s in await storage.list_runs()}
        assert (done.status, paused.status) == ("completed", "paused")
        return runs
    finally:
        await storage.aclose()


async def fill_big(location: str, steps: int = BIG_STEPS, size: int = 200_000) -> str:
    """Run the long workflow into the store (not synced: its durability is not tested here);
    its run id."""
    storage = open_storage(location, must_exist=False, durability="none")
    try:
        result = await big.build(checkpoint_storage=storage).run([steps, size])
        return result.run_id
    finally:
        await storage.aclose()


def table_digest(url: str) -> str:
    """A digest of every row of every table of the database's public schema."""
    digest = hashlib.sha256()
    with psycopg.connect(url, autocommit=True) as conn:
        tables = [
            row[0]
            for row in conn.execute(
                "SELECT table_name FROM information_schema.tables"
                " WHERE table_schema = 'public' ORDER BY table_name"
            )
        ]
        for table in tables:
            digest.update(table.encode() + b"\0")
            rows = sorted(
                str(row[0])
                for row in conn.execute(
                    sql.SQL("SELECT t::text FROM {} t").format(sql.Identifier(table))
                )
            )
            for row in rows:
                digest.update(row.encode() + b"\0")
    return digest.hexdigest()
