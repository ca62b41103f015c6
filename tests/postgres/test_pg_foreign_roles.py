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
import time
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path

import psycopg
import pytest

from tests.cli.conftest import WORKFLOWS, wfctl
from tests.postgres.conftest import opened
from wfctl import get_run_context, step, workflow
from wfctl._storage._postgres._lease import CHANNEL
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


async def _until(done: Callable[[], bool], what: str) -> None:
    """Wait (bounded) for what the server sends this process to be handled."""
    end = time.monotonic() + 30
    while not done():
        assert time.monotonic() < end, f"{what} never happened"
        await asyncio.sleep(0.005)


def test_a_notification_from_a_role_that_cannot_write_the_run_pauses_nothing(
    pg_url: str, intruder_url: str
) -> None:
    """Run a waits in its first step while the foreign role notifies "pause a"; then run b is
    paused legitimately on the same channel. Both leases handle their notifications (a's read
    of the run's row included) before a's step ends: a completes, b pauses."""
    started = {"a": asyncio.Event(), "b": asyncio.Event()}
    gates = {"a": asyncio.Event(), "b": asyncio.Event()}
    run_ids: dict[str, str] = {}
    after: Counter[str] = Counter()

    @step
    async def hold(name: str) -> str:
        ctx = get_run_context()
        assert ctx is not None
        run_ids[name] = ctx.run_id
        started[name].set()
        await gates[name].wait()
        return name

    @step
    async def then(name: str, i: int) -> int:
        after[name] += 1
        return i

    @workflow(name="held")
    async def held(name: str) -> int:
        await hold(name)
        return sum([await then(name, i) for i in range(3)])

    async def main() -> None:
        async with opened(pg_url) as store:
            a = asyncio.create_task(held.build(checkpoint_storage=store).run("a"))
            b = asyncio.create_task(held.build(checkpoint_storage=store).run("b"))
            await started["a"].wait()
            await started["b"].wait()
            lease_a, lease_b = store._leases[run_ids["a"]], store._leases[run_ids["b"]]
            async with await psycopg.AsyncConnection.connect(intruder_url, autocommit=True) as c:
                await c.execute("SELECT pg_notify(%s, %s)", (CHANNEL, f"1:{run_ids['a']}"))
            await store.request_pause(run_ids["b"])  # committed after: delivered after
            await asyncio.wait_for(lease_b.pause_event.wait(), 30)
            # Internal: a's lease read the foreign notification and has read the run's row.
            await _until(lambda: lease_a._notified, "a's notification")
            await _until(lambda: getattr(lease_a, "_looking", None) is None, "a's read")
            assert not lease_a.pause_requested()
            gates["a"].set()
            gates["b"].set()
            done, paused = await a, await b
            assert (done.status, done.get_outputs(), after["a"]) == ("completed", [3], 3)
            assert (paused.status, after["b"]) == ("paused", 0)

    asyncio.run(main())


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


def test_copy_names_a_foreign_session_holding_a_run_s_lock_in_the_destination(
    pg_url: str, intruder_url: str, tmp_path: Path
) -> None:
    run_id = _paused_run(str(tmp_path / "files"))
    with psycopg.connect(intruder_url, autocommit=True) as intruder:
        intruder.execute("SELECT pg_advisory_lock(hashtextextended(%s, %s))", (run_id, LOCK_SEED))
        pid = intruder.info.backend_pid
        done = wfctl("copy", "--from", tmp_path / "files", "--to", pg_url, "--json")
    assert done.code == 1, done
    [run] = done.json()["runs"]
    assert run["outcome"] == "refused"
    assert f"locked by another database session (pid {pid} of role {INTRUDER}" in run["problem"]


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
