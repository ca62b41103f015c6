"""DBOS's PostgreSQL system database (schema ``dbos``), read-only.

One connection, every statement in one read-only repeatable-read transaction (one snapshot for
the source's life, :mod:`._server`); streams are server-side cursors.
"""

from __future__ import annotations

import contextlib
import itertools
from collections.abc import Iterator
from typing import Any

import psycopg
from psycopg import sql

from wfctl._errors import StoreLocationError
from wfctl._redact import redact

from ._dbos_sql import DBOS_TABLES, DbosStatements
from ._server import connect_snapshot, failed

__all__ = ["SCHEMA", "PostgresBackend", "dbos_tables"]

#: The schema DBOS keeps its system tables in (its ``dbos_system_schema`` default).
SCHEMA = "dbos"
_cursors = itertools.count()
_PAGE = 1000


def _tables(conn: psycopg.Connection[Any]) -> set[str]:
    return {
        str(row[0])
        for row in conn.execute(
            "SELECT table_name FROM information_schema.tables WHERE table_schema = %s", (SCHEMA,)
        )
    }


def dbos_tables(conn: psycopg.Connection[Any]) -> bool:
    """Whether the connection's database holds DBOS's system tables (schema ``dbos``)."""
    return _tables(conn) >= DBOS_TABLES


class PostgresBackend(DbosStatements):
    """Statements over DBOS's schema of one PostgreSQL database.

    Raises:
        StoreLocationError: (from the constructor) the server cannot be reached, or the
            database holds no DBOS system tables.
    """

    kind = "dbos-postgresql"
    _P = "%s"
    _T = f"{SCHEMA}."
    _BYTES = ' COLLATE "C"'

    def __init__(self, url: str) -> None:
        self.location = redact(url)
        self._conn = connect_snapshot(url, self.location)
        missing = sorted(DBOS_TABLES - _tables(self._conn))
        if missing:
            self._conn.close()
            raise StoreLocationError(
                self.location,
                f"has no {SCHEMA}.{' or '.join(missing)} table: not a DBOS system database",
            )

    def close(self) -> None:
        self._conn.close()

    def _len(self, column: str) -> str:
        return f"octet_length({column})"

    def _rows(self, query: str, args: tuple[Any, ...] = (), page: int = _PAGE) -> Iterator[Any]:
        """Rows of ``query`` from a server-side cursor, ``page`` rows a fetch; a server that
        fails is one line naming the store."""
        cursor = self._conn.cursor(name=f"wfctl_dbos_{next(_cursors)}")
        try:
            cursor.itersize = page
            cursor.execute(sql.SQL(query), args)
            for row in cursor:  # noqa: UP028 (a stream left unfinished, see the LangGraph reader)
                yield row
        except psycopg.Error as exc:
            raise failed(self.location, exc) from None
        finally:
            with contextlib.suppress(psycopg.Error):
                cursor.close()
