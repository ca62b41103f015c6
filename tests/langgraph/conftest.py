"""Stores the real LangGraph wrote, shared by the LangGraph reader's tests (each written once),
and the private PostgreSQL server of tests/postgres."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.langgraph.stores import sqlite_saver, write_long_thread, write_sqlite
from tests.postgres.conftest import pg_server

__all__ = ["long_sqlite", "pg_server", "sqlite_store"]


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
