"""Reading another engine's PostgreSQL database, for the readers that read one (LangGraph's,
DBOS's): one connection, every statement in one read-only repeatable-read transaction (one
snapshot for the source's life), and a server's failure as one line naming the store."""

from __future__ import annotations

from typing import Any

import psycopg

from wfctl._errors import StoreLocationError

__all__ = ["connect_snapshot", "failed"]


def _reason(exc: psycopg.Error) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


def connect_snapshot(url: str, location: str) -> psycopg.Connection[Any]:
    """A read-only repeatable-read connection to ``url`` (``location`` is how the store is
    named in errors: its password hidden).

    Raises:
        StoreLocationError: the server cannot be reached.
    """
    try:
        conn: psycopg.Connection[Any] = psycopg.connect(url, autocommit=False)
    except psycopg.Error as exc:
        raise StoreLocationError(
            location, f"cannot be reached: {_reason(exc)}", unreachable=True
        ) from None
    conn.read_only = True
    conn.isolation_level = psycopg.IsolationLevel.REPEATABLE_READ
    return conn


def failed(location: str, exc: psycopg.Error) -> StoreLocationError:
    """The one-line error of a statement the server failed."""
    return StoreLocationError(location, f"cannot be read: {_reason(exc)}", unreachable=True)
