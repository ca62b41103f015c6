"""Clearing a pause request that is not there writes nothing: every run clears at its end."""

from __future__ import annotations

import psycopg

from tests.postgres.conftest import opened
from tests.storage.helpers import arun, ckpt


def _next_xid(url: str) -> int:
    with psycopg.connect(url, autocommit=True) as conn:
        row = conn.execute("SELECT pg_snapshot_xmax(pg_current_snapshot())::text").fetchone()
        assert row is not None
        return int(row[0])


def test_clearing_no_request_takes_no_write_transaction(pg_url: str) -> None:
    async def body() -> None:
        async with opened(pg_url) as store:
            lease = await store.lease_run("r1")
            await store.save(ckpt("r1", 0))
            before = _next_xid(pg_url)
            for _ in range(3):
                await store.clear_pause("r1")
            assert _next_xid(pg_url) == before  # no transaction id assigned: nothing written
            await store.request_pause("r1")  # a real request is still set and cleared
            assert _next_xid(pg_url) == before + 1
            await store.clear_pause("r1")
            assert _next_xid(pg_url) == before + 2
            await lease.release()

    arun(body())
