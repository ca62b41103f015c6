"""A run named by the start of its id is looked up in an index, not by reading every run.

The planner is kept off sequential scans (a table of a few rows would be scanned whole
anyway): what is checked is that an index can answer each lookup, under the database's own
collation (a ``LIKE`` prefix cannot use a plain text index unless the collation is C).
"""

from __future__ import annotations

import psycopg

from tests.conftest import arun
from tests.postgres.conftest import opened
from wfctl._storage._postgres import _sql
from wfctl._storage._postgres._names import like_prefix


def _plan(url: str, query: str, params: dict[str, object]) -> str:
    async def schema() -> None:
        async with opened(url) as store:  # created on first use
            await store.run_ids_starting("x", 1)

    arun(schema())
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("SET enable_seqscan = off")
        rows = conn.execute(f"EXPLAIN {query}", params).fetchall()
    return "\n".join(str(row[0]) for row in rows)


def test_the_start_of_a_run_id_is_looked_up_in_an_index(pg_url: str) -> None:
    plan = _plan(pg_url, _sql.RUNS_STARTING, {"pattern": like_prefix("20261206-"), "n": 20})
    assert "wfctl_runs_prefix" in plan, plan


def test_the_newest_run_is_read_from_the_creation_index(pg_url: str) -> None:
    plan = _plan(pg_url, _sql.NEWEST_RUN, {})
    assert "wfctl_runs_created" in plan, plan


def test_a_person_s_underscore_is_not_a_wildcard() -> None:
    assert like_prefix("a_b%c\\") == "a\\_b\\%c\\\\%"
