"""What a database role with no rights on wfctl's tables can do to runs it did not start.

Any role that may connect can send a notification on any channel and take any advisory lock;
PostgreSQL restricts neither. Such a role must not be able to pause a run (a pause is the run's
row, which it cannot write), and a lock it holds must be named as its own, never as the wfctl
process recorded for the run (which may have exited long since).
"""

from __future__ import annotations

import asyncio
import json
import os
from collections.abc import Iterator

import psycopg
import pytest

from tests.cli.conftest import WORKFLOWS, wfctl
from tests.postgres.conftest import opened
from wfctl._storage._postgres._schema import LOCK_SEED
from wfctl.storage.testing import PrivateServer

#: A role that may connect (as PUBLIC may) and nothing more.
INTRUDER = "wfctl_intruder"


@pytest.fixture
def intruder_url(pg_server: PrivateServer, pg_url: str) -> Iterator[str]:
    """The URL of the database as a role with no rights on wfctl's tables."""
    with psycopg.connect(pg_url, autocommit=True) as conn:
        conn.execute(f"DROP ROLE IF EXISTS {INTRUDER}")
        conn.execute(f"CREATE ROLE {INTRUDER} LOGIN")
    try:
        yield pg_url.replace(f"{pg_server.user}@", f"{INTRUDER}@")
    finally:
        with psycopg.connect(pg_url, autocommit=True) as conn:
            conn.execute(
                "SELECT pg_terminate_backend(pid, 10000) FROM pg_stat_activity WHERE usename = %s",
                (INTRUDER,),
            )
            conn.execute(f"DROP ROLE IF EXISTS {INTRUDER}")


def _paused_run(url: str) -> str:
    """A run paused for answers by a `wfctl run` process that has exited since."""
    done = wfctl("run", WORKFLOWS / "review.py", "--store", url, "--json")
    assert done.code == 3, done.stderr
    return str(done.json()["run_id"])


def test_the_foreign_role_has_no_rights_on_wfctl_s_tables(pg_url: str, intruder_url: str) -> None:
    _paused_run(pg_url)
    with (
        psycopg.connect(intruder_url, autocommit=True) as conn,
        pytest.raises(psycopg.errors.InsufficientPrivilege),
    ):
        conn.execute("UPDATE wfctl_runs SET pause_requested = true")


@pytest.mark.parametrize(
    "command",
    [
        ("resume", "{run}", "--response", "0/request#0=yes", "--response", "1/request#0=4"),
        ("rm", "{run}"),
        ("cancel", "{run}"),
    ],
    ids=["resume", "rm", "cancel"],
)
def test_a_lock_a_foreign_session_holds_is_named_as_that_session(
    pg_url: str, intruder_url: str, command: tuple[str, ...]
) -> None:
    run_id = _paused_run(pg_url)
    with psycopg.connect(pg_url, autocommit=True) as conn:
        row = conn.execute("SELECT holder FROM wfctl_runs WHERE run_id = %s", (run_id,)).fetchone()
    assert row is not None and isinstance(row[0], str)
    recorded = row[0].split(" since ")[0]  # "pid N on host H": the exited `wfctl run`
    with psycopg.connect(intruder_url, autocommit=True) as intruder:
        intruder.execute("SET application_name = 'squatter'")
        intruder.execute("SELECT pg_advisory_lock(hashtextextended(%s, %s))", (run_id, LOCK_SEED))
        pid = intruder.info.backend_pid
        args = [part.format(run=run_id) for part in command]
        done = wfctl(*args, "--store", pg_url)
        assert done.code == 2, done
        lines = done.stderr.strip().splitlines()
        assert len(lines) == 1, lines
        assert (
            f"is locked by another database session (pid {pid} of role {INTRUDER},"
            " application squatter)" in lines[0]
        ), lines
        assert recorded not in lines[0]
        as_json = wfctl(*args, "--store", pg_url, "--json")
        assert (as_json.code, as_json.stdout) == (2, ""), as_json
    # Once it lets go, the run is wfctl's again.
    done = wfctl("log", run_id, "--store", pg_url, "--json")
    assert done.code == 0, done.stderr
    assert [c["kind"] for c in json.loads(done.stdout)["checkpoints"]] == ["root", "step", "pause"]


def test_a_lock_held_by_the_recorded_driver_names_it(pg_url: str) -> None:
    """The driver's own lease is named as wfctl recorded it (this process, on this host)."""
    run_id = _paused_run(pg_url)

    async def main() -> None:
        async with opened(pg_url) as store:
            lease = await store.lease_run(run_id)
            try:
                done = wfctl("rm", run_id, "--store", pg_url)
                assert done.code == 2, done
                assert f"is locked by pid {os.getpid()} on host " in done.stderr, done.stderr
            finally:
                await lease.release()

    asyncio.run(main())
