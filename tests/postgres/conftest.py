"""A private PostgreSQL server for the session, and an empty store for each test.

Without server binaries the tests are skipped, unless ``WFCTL_REQUIRE_POSTGRES=1`` (CI) makes
that a failure.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import AsyncIterator, Iterator

import psycopg  # the test extra installs the postgres extra
import pytest

from wfctl._storage._postgres._store import PostgresCheckpointStorage
from wfctl.storage.testing import PostgresUnavailableError, PrivateServer, private_postgres


@pytest.fixture(scope="session")
def pg_server() -> Iterator[PrivateServer]:
    """A throwaway server for the whole session (fsync and synchronous_commit on)."""
    try:
        with private_postgres() as server:
            yield server
    except PostgresUnavailableError as exc:
        if os.environ.get("WFCTL_REQUIRE_POSTGRES") == "1":
            pytest.fail(f"WFCTL_REQUIRE_POSTGRES=1 but no PostgreSQL server: {exc}")
        pytest.skip(f"no PostgreSQL server to test against: {exc}")


@pytest.fixture
def pg_url(pg_server: PrivateServer) -> str:
    """The server's URL, its wfctl tables emptied (the schema stays: created once)."""
    with psycopg.connect(pg_server.url, autocommit=True) as conn:
        conn.execute(
            "DO $$ BEGIN IF to_regclass('wfctl_runs') IS NOT NULL THEN"
            " TRUNCATE wfctl_runs, wfctl_checkpoints; END IF; END $$"
        )
    return pg_server.url


@contextlib.asynccontextmanager
async def opened(url: str) -> AsyncIterator[PostgresCheckpointStorage]:
    """A store on ``url`` for the ``async with`` block, closed after it."""
    store = PostgresCheckpointStorage(url)
    try:
        yield store
    finally:
        await store.aclose()
