"""``wfctl gc --prune-history`` and ``wfctl rm`` on LangGraph stores, through the installed
``wfctl``: a report without ``--yes`` (exit 0, the store unchanged), the change with it, one
line and exit 2 for what is refused. The documents are checked against their schema."""

from __future__ import annotations

import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from tests.cli.conftest import Invocation, base_env, wfctl
from tests.cli.test_json_documents import _check  # the schema check every document passes
from tests.langgraph.prune_stores import ALL_THREADS, Store, fill_all, written_store
from tests.postgres.conftest import pg_server  # noqa: F401  # the private server, a fixture


@pytest.fixture(params=["sqlite", "postgresql"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Store:
    """A store of each backend holding every thread, written by LangGraph."""
    return written_store(request, tmp_path, "lgprune_cli")


def _refused(done: Invocation, words: str) -> None:
    assert done.code == 2
    assert done.stderr.count("\n") == 1 and words in done.stderr, done.stderr
    assert "Traceback" not in done.stderr


def test_gc_prune_history_reports_then_applies_with_yes(store: Store) -> None:
    before = store.digests()
    states = store.states()
    sound = wfctl("verify-lineage", "--store", store.location, "--json")  # a DeltaChannel too
    assert sound.code == 0, sound.stdout + sound.stderr
    report = wfctl("gc", "--prune-history", "--store", store.location, "--json")
    assert report.code == 0, report.stderr
    document = report.json()
    _check(document, "langgraph-change")
    assert document["applied"] is False and document["action"] == "prune"
    assert {t["run_id"] for t in document["threads"]} == set(ALL_THREADS)
    assert document["bytes"] > 0
    assert store.digests() == before

    done = wfctl("gc", "--prune-history", "--yes", "--store", store.location, "--json")
    assert done.code == 0, done.stderr
    applied = done.json()
    _check(applied, "langgraph-change")
    assert applied["applied"] is True
    assert applied["threads"] == document["threads"]
    assert store.states() == states
    # what is left is still one sound lineage per thread, as wfctl's reader judges it
    verified = wfctl("verify-lineage", "--store", store.location, "--json")
    assert verified.code == 0, verified.stdout + verified.stderr
    assert {r["run_id"] for r in verified.json()["runs"]} == set(ALL_THREADS)

    table = wfctl("gc", "--prune-history", "--store", store.location)
    assert table.code == 0 and "would remove 0 bytes from 6 thread(s)" in table.stdout


def test_rm_removes_a_thread_with_yes_only(store: Store) -> None:
    before = store.digests()
    report = wfctl("rm", "done", "--store", store.location, "--json")
    assert report.code == 0, report.stderr
    _check(report.json(), "langgraph-change")
    assert store.digests() == before
    done = wfctl("rm", "done", "--yes", "--store", store.location, "--json")
    assert done.code == 0, done.stderr
    assert [t["run_id"] for t in done.json()["threads"]] == ["done"]
    assert {k[1] for k in store.digests()} == set(ALL_THREADS) - {"done"}


def test_what_is_refused_is_one_line_and_exit_2(store: Store, tmp_path: Path) -> None:
    before = store.digests()
    _refused(wfctl("rm", "done", "nope", "--yes", "--store", store.location), "'nope' not found")
    _refused(wfctl("gc", "--store", store.location), "--prune-history")
    _refused(wfctl("gc", "--prune-history", "--keep", "2", "--store", store.location), "--keep")
    _refused(wfctl("rm", "done", "--force", "--store", store.location), "--force")
    assert store.digests() == before
    for command in ("cancel", "pause"):  # they work on wfctl's runs only
        _refused(wfctl(command, "done", "--store", store.location), "is a langgraph-")
    (tmp_path / "wfctl-store").mkdir()
    _refused(wfctl("gc", "--prune-history", "--store", tmp_path / "wfctl-store"), "--prune-history")


def test_a_plain_path_to_a_langgraph_sqlite_file_is_detected(tmp_path: Path) -> None:
    path = tmp_path / "checkpoints.sqlite"
    with Store("sqlite", str(path)).saver() as saver:
        fill_all(saver)
    done = wfctl("gc", "--prune-history", "--store", path, "--json")
    assert done.code == 0, done.stderr
    assert done.json()["kind"] == "langgraph-sqlite"


def test_a_store_that_cannot_be_read_is_one_line_and_exit_2(tmp_path: Path) -> None:
    junk = tmp_path / "junk.sqlite"
    junk.write_bytes(b"not a database at all, " * 100)
    _refused(
        wfctl("gc", "--prune-history", "--store", f"langgraph+sqlite://{junk}"), "not a database"
    )
    empty = tmp_path / "empty.sqlite"
    sqlite3.connect(empty).close()
    _refused(wfctl("rm", "t", "--store", f"langgraph+sqlite://{empty}"), "no such table")
    _refused(
        wfctl(
            "gc",
            "--prune-history",
            "--store",
            "langgraph+postgresql://nobody@/nodb?host=/nonexistent",
        ),
        "cannot be opened",
    )


# wfctl's command line with the SQLite change of a thread replaced by one that changes the
# first thread, then raises KeyboardInterrupt (what Ctrl-C raises), so the interruption lands
# between two threads every time (the pattern of tests/cli/test_stopped_part_way.py).
_INTERRUPTED_AFTER_ONE = """
import sys
from wfctl._storage._langgraph import _sqlite

real_change, changed = _sqlite.SqliteChanger.change, []

def change_one_then_stop(self, thread, action):
    if self._write:  # the report before the change goes as it is
        if changed:
            raise KeyboardInterrupt
        changed.append(thread)
    return real_change(self, thread, action)

_sqlite.SqliteChanger.change = change_one_then_stop
from wfctl._cli import main
sys.argv[:1] = ["wfctl"]
main()
"""


def test_ctrl_c_between_threads_says_what_it_left(tmp_path: Path) -> None:
    path = tmp_path / "checkpoints.sqlite"
    store = Store("sqlite", str(path))
    with store.saver() as saver:
        fill_all(saver)
    before = store.digests()
    store_args = ("--store", str(path))
    done = subprocess.run(
        [
            sys.executable,
            "-c",
            _INTERRUPTED_AFTER_ONE,
            "gc",
            "--prune-history",
            "--yes",
            *store_args,
        ],
        env=base_env(),
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 130
    assert done.stderr.count("\n") == 1 and "stopped part way" in done.stderr, done.stderr
    after = store.digests()
    changed = {thread for (_, thread) in after if after[_, thread] != before.get((_, thread))}
    assert changed == {"delta"}  # the first thread, in id order, pruned; the others as they were
