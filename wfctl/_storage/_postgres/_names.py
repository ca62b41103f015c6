"""The PostgreSQL store's lookups of runs by name: a prefix of a run id, the newest run."""

from __future__ import annotations

from . import _sql
from ._connection import PostgresConnections

__all__ = ["PostgresNames"]


def like_prefix(prefix: str) -> str:
    """Return the ``LIKE`` pattern of the strings that start with ``prefix`` (its ``_``, ``%``
    and ``\\`` matched as themselves)."""
    escaped = prefix.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
    return escaped + "%"


class PostgresNames(PostgresConnections):
    """How the commands find a run from what a person typed (``wfctl._inspect._names``)."""

    async def run_ids_starting(self, prefix: str, limit: int) -> tuple[list[str], int]:
        """Return the ids (sorted, at most ``limit``) of the runs whose id starts with
        ``prefix``, and how many there are (one statement on the run id's pattern index)."""
        rows = await self._rows(_sql.RUNS_STARTING, {"pattern": like_prefix(prefix), "n": limit})
        return [str(row[0]) for row in rows], int(rows[0][1]) if rows else 0

    async def newest_run_id(self) -> str | None:
        """Return the id of the run created last (None: the store holds no run)."""
        rows = await self._rows(_sql.NEWEST_RUN)
        return str(rows[0][0]) if rows else None

    async def all_run_ids(self) -> list[str]:
        """Return every run's id, in any order."""
        rows = await self._rows(_sql.RUN_IDS)
        return [str(row[0]) for row in rows]
