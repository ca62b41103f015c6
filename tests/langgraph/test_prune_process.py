"""A prune killed between two threads (SIGKILL) leaves each thread whole: pruned, or as it
was; LangGraph then loads every thread as before. SQLite and PostgreSQL."""

from __future__ import annotations

import signal
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import psycopg
import pytest

from tests.langgraph.prune_stores import ALL_THREADS, Store, fill_all, written_store
from tests.langgraph.stores import fresh_database
from tests.postgres.conftest import pg_server  # noqa: F401  # the private server, a fixture
from wfctl._storage._langgraph import ChangeReport, apply, plan_prune
from wfctl.storage.testing import PrivateServer

# Prunes the store named by argv[1]; after each thread's transaction it prints the thread's id
# and waits for a line on stdin: the test sends one to let it go on, and kills it there.
_PRUNER = textwrap.dedent(
    """
    import sys
    from wfctl._storage._langgraph import apply, plan_prune

    def gate(change):
        print(change.thread_id, flush=True)
        sys.stdin.readline()

    apply(plan_prune(sys.argv[1]), after_thread=gate)
    """
)


@pytest.fixture(params=["sqlite", "postgresql"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Store:
    """A store of each backend holding every thread, written by LangGraph."""
    return written_store(request, tmp_path, "lgprune_kill")


@pytest.mark.parametrize("killed_after", [1, 3])
def test_a_prune_killed_between_threads_leaves_each_thread_whole(
    store: Store, killed_after: int
) -> None:
    before = store.digests()
    states = store.states()
    planned = {c.thread_id: c for c in plan_prune(store.location).report.threads}
    with subprocess.Popen(
        [sys.executable, "-c", _PRUNER, store.location],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    ) as child:
        assert child.stdout is not None and child.stdin is not None
        done = [child.stdout.readline().strip()]
        while len(done) < killed_after:  # let it go on to the next thread
            child.stdin.write("\n")
            child.stdin.flush()
            done.append(child.stdout.readline().strip())
        child.send_signal(signal.SIGKILL)
        assert child.wait() == -signal.SIGKILL
    after = store.digests()
    for thread in ALL_THREADS:
        same = {k: v for k, v in after.items() if k[1] == thread} == {
            k: v for k, v in before.items() if k[1] == thread
        }
        if thread in done:  # pruned whole
            assert not same
            assert store.count(thread) == planned[thread].kept_checkpoints
        else:  # untouched
            assert same, thread
    assert store.states() == states


def test_a_thread_another_writer_changes_meanwhile_is_left_whole(
    request: pytest.FixtureRequest,
) -> None:
    server: PrivateServer = request.getfixturevalue("pg_server")
    store = Store("postgresql", fresh_database(server.url, "lgprune_writer"))
    with store.saver() as saver:
        fill_all(saver)
    plan = plan_prune(store.location, ["done", "paused"])
    before = store.digests()
    reports: list[ChangeReport] = []
    with psycopg.connect(store.target) as writer:  # a transaction left open
        writer.execute("UPDATE checkpoints SET metadata = metadata WHERE thread_id = 'done'")
        pruner = threading.Thread(target=lambda: reports.append(apply(plan)))
        pruner.start()
        waiting = (
            "SELECT count(*) FROM pg_stat_activity"
            " WHERE wait_event_type = 'Lock' AND datname = current_database()"
        )
        deadline = time.monotonic() + 60
        while store.rows(waiting)[0][0] == 0:  # the prune waits for the writer's row
            assert time.monotonic() < deadline, "the prune never waited for the writer"
            time.sleep(0.01)
        writer.commit()
    pruner.join(timeout=60)
    (report,) = reports
    declined = {c.thread_id: c.declined for c in report.threads}
    assert declined["done"] is not None and "another writer" in declined["done"]
    assert declined["paused"] is None
    after = store.digests()
    assert {k: v for k, v in after.items() if k[1] == "done"} == {
        k: v for k, v in before.items() if k[1] == "done"
    }
    assert store.count("paused") == 1
