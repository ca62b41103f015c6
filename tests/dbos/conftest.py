"""System databases the real DBOS wrote, shared by the DBOS reader's tests (each written once
per session: DBOS's launch is slow), and the private PostgreSQL server of tests/postgres."""

from __future__ import annotations

import sqlite3
import sys
from pathlib import Path

import pytest

from tests.dbos.stores import write_store
from tests.langgraph.stores import fresh_url
from tests.postgres.conftest import pg_server
from wfctl.storage.testing import PrivateServer

__all__ = ["dbos_long", "dbos_long_pg", "dbos_pg", "dbos_sqlite", "pg_server"]


def _dbos_writes_sqlite_here() -> None:
    """Skip when DBOS cannot write a SQLite system database with this interpreter: on Python
    3.12 and later DBOS 3.4 stamps rows with ``unixepoch('subsec')``, which SQLite has from
    3.42 on; an interpreter built against an older SQLite makes each insert fail (NOT NULL)."""
    if sys.version_info >= (3, 12) and sqlite3.sqlite_version_info < (3, 42):
        pytest.skip(
            f"DBOS 3.4 on Python 3.12+ needs SQLite 3.42 (unixepoch('subsec')); this Python's "
            f"SQLite is {sqlite3.sqlite_version}: DBOS cannot write its SQLite store here"
        )


@pytest.fixture(scope="session")
def dbos_sqlite(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A SQLite system database written by :mod:`tests.dbos.app`."""
    _dbos_writes_sqlite_here()
    path = tmp_path_factory.mktemp("dbos") / "dbos.sqlite"
    write_store(f"sqlite:///{path}")
    return path


@pytest.fixture(scope="session")
def dbos_long(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A SQLite system database holding one workflow ``long`` of 200 steps of 20 kB."""
    _dbos_writes_sqlite_here()
    path = tmp_path_factory.mktemp("dbos-long") / "long.sqlite"
    write_store(f"sqlite:///{path}", long=True)
    return path


@pytest.fixture(scope="session")
def dbos_long_pg(pg_server: PrivateServer) -> str:
    """A database of the private server holding one workflow ``long`` of 200 steps of 20 kB."""
    url = fresh_url(pg_server.url, "dbos_long")
    write_store(url, long=True)
    return url


@pytest.fixture(scope="session")
def dbos_pg(pg_server: PrivateServer) -> str:
    """A database of the private server written by :mod:`tests.dbos.app` (schema ``dbos``)."""
    url = fresh_url(pg_server.url, "dbos_system")
    write_store(url)
    return url
