"""Stores the real LangGraph wrote, shared by the LangGraph reader's tests (each written once),
and the private PostgreSQL server of tests/postgres."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from tests.langgraph.stores import (
    fresh_url,
    postgres_saver,
    sqlite_saver,
    write_long_thread,
    write_postgres,
    write_sqlite,
)
from tests.postgres.conftest import pg_server
from wfctl.storage.testing import PrivateServer

__all__ = ["long_pg", "long_sqlite", "pg_server", "pg_store", "sqlite_store", "table_digest"]


@pytest.fixture(scope="session")
def sqlite_store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A SQLite file holding every thread of :data:`~tests.langgraph.stores.THREADS`."""
    return write_sqlite(tmp_path_factory.mktemp("langgraph") / "checkpoints.sqlite")


@pytest.fixture(scope="session")
def long_sqlite(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A SQLite file holding one thread ``long`` of 200 steps of 20 kB each."""
    path = tmp_path_factory.mktemp("langgraph-long") / "long.sqlite"
    with sqlite_saver(path) as saver:
        write_long_thread(saver, "long", steps=200, size=20_000)
    return path


@pytest.fixture(scope="session")
def pg_store(pg_server: PrivateServer) -> str:
    """A database of the private server holding every thread of
    :data:`~tests.langgraph.stores.THREADS`, as LangGraph's ``PostgresSaver`` wrote them."""
    return write_postgres(fresh_url(pg_server.url, "langgraph_threads"))


@pytest.fixture(scope="session")
def long_pg(pg_server: PrivateServer) -> str:
    """A database holding one thread ``long`` of 200 steps of 20 kB each."""
    url = fresh_url(pg_server.url, "langgraph_long")
    with postgres_saver(url) as saver:
        write_long_thread(saver, "long", steps=200, size=20_000)
    return url


def table_digest(url: str, schema: str = "public") -> str:
    """A digest of every row of every table of ``schema`` of the database at ``url`` (and the
    table list)."""
    import psycopg

    digest = hashlib.sha256()
    with psycopg.connect(url) as conn:
        tables = [
            row[0]
            for row in conn.execute(
                "SELECT table_name FROM information_schema.tables"
                " WHERE table_schema = %s ORDER BY 1",
                (schema,),
            )
        ]
        for table in tables:
            digest.update(table.encode())
            rows = conn.execute(f'SELECT * FROM "{schema}"."{table}"').fetchall()
            for row in sorted(repr(row) for row in rows):
                digest.update(row.encode())
    return digest.hexdigest()
