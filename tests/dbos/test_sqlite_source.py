"""The DBOS SQLite reader holds to the read port's conformance suite on a system database the
real DBOS wrote, and reads what DBOS stored: steps in order, a child's steps nested under the
step that started it, messages received, events set, sleeps, a fork's copied steps, statuses
in wfctl's words and DBOS's own facts of each run."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests.cli.conftest import wfctl
from tests.dbos.stores import change, copy_of
from wfctl._sources._dbos_model import EPOCH_MS_RANGE, epoch_ms
from wfctl._sources._views import tree
from wfctl.sources import Entry, Source, open_source
from wfctl.sources.testing import SourceConformance, directory_digest


class TestDbosSqlite(SourceConformance):
    statuses = frozenset({"completed", "failed", "unknown"})
    forks = True  # a child workflow's steps branch off the step that started it
    unknown_record_id = "no-such-workflow.1"

    @pytest.fixture
    def source_under_test(self, dbos_sqlite: Path) -> Iterator[Source]:
        with open_source(dbos_sqlite) as source:
            assert source.kind == "dbos-sqlite"
            yield source

    @pytest.fixture
    def store_digest(self, dbos_sqlite: Path) -> Callable[[], str]:
        return lambda: directory_digest(dbos_sqlite.parent)

    @pytest.fixture
    def big_run(self, dbos_long: Path) -> Iterator[tuple[Source, str, int]]:
        with open_source(dbos_long) as source:
            (size,) = source.sizes("long")
            yield source, "long", size.size_bytes


def test_runs_are_root_workflows_with_dbos_facts(dbos_sqlite: Path) -> None:
    with open_source(f"dbos+sqlite://{dbos_sqlite}") as source:
        listed = {r.run_id: r for r in source.runs()}
        statements: list[str] = []
        source._backend._conn.set_trace_callback(statements.append)  # type: ignore[attr-defined]
        assert len(list(source.runs())) == len(listed)
    assert len(statements) == 1  # one statement, whatever the workflow count
    (fork,) = [r for r in listed.values() if r.origin == "wf-parent"]
    assert set(listed) == {"wf-parent", "wf-failing", "wf-pending", fork.run_id}  # no child
    parent = listed["wf-parent"]
    assert (parent.status, parent.workflow, parent.problem) == ("completed", "parent", None)
    assert parent.details["dbos_status"] == "SUCCESS"
    assert parent.details["was_forked_from"] is True
    assert parent.details["recovery_attempts"] >= 1
    assert parent.record_count == 11  # its 8 steps and its child's one, and both results
    assert parent.head_id == "wf-parent.result"
    assert listed["wf-failing"].status == "failed"
    pending = listed["wf-pending"]
    assert (pending.status, pending.details["dbos_status"]) == ("unknown", "PENDING")
    assert pending.head_id == "wf-pending.3" and pending.record_count == 2
    assert fork.details["forked_from"] == "wf-parent"
    assert parent.created_at.endswith("+00:00")


def test_log_nests_the_child_and_shows_messages_events_and_sleeps(dbos_sqlite: Path) -> None:
    with open_source(dbos_sqlite) as source:
        entries = list(source.records("wf-parent"))
        ids = [e.entry_id for e in entries]
        assert ids == [
            "wf-parent.1",
            "wf-parent.2",
            "wf-parent.3",
            "wf-parent-3.1",
            "wf-parent-3.result",
            *[f"wf-parent.{n}" for n in range(4, 9)],
            "wf-parent.result",
        ]
        depths = {e.entry_id: depth for depth, e in tree(entries)}
        assert depths["wf-parent-3.1"] == 1 and depths["wf-parent.4"] == 1
        assert by_id_kind(entries, "wf-parent-3.result") == "output"
        assert by_id_kind(entries, "wf-parent.result") == "output"
        by_id = {e.entry_id: e for e in entries}
        assert by_id["wf-parent.3"].kind == "workflow"
        assert by_id["wf-parent-3.1"].parent_ids == ("wf-parent.3",)
        assert by_id["wf-parent-3.1"].summary["workflow"] == "wf-parent-3"
        flaky = by_id["wf-parent.2"].data["output"]
        assert flaky["$opaque"] == "pickle" and "ok after a retry" in flaky["scan"]["strings"]
        recv = by_id["wf-parent.7"]
        assert recv.kind == "recv" and recv.data["message"]["topic"] == "greeting"
        assert "hello" in recv.data["message"]["value"]["scan"]["strings"]
        event = by_id["wf-parent.5"]
        assert event.kind == "setEvent" and event.data["event"]["key"] == "progress"
        sleep = by_id["wf-parent.6"]
        assert sleep.kind == "sleep" and isinstance(sleep.data["output"], float)  # portable_json
        assert source.record("wf-parent-3.1") == by_id["wf-parent-3.1"]
        children, total = source.child_counts("wf-parent")  # type: ignore[attr-defined]
        assert total == len(entries) and children["wf-parent.3"] == 2


def test_a_fork_copies_its_first_steps_and_the_failure_is_a_pickled_error(
    dbos_sqlite: Path,
) -> None:
    with open_source(dbos_sqlite) as source:
        (fork,) = [r for r in source.runs() if r.origin == "wf-parent"]
        entries = list(source.records(fork.run_id))
        copied = [e.entry_id for e in entries if e.summary.get("copied_from") == "wf-parent"]
        assert copied == [f"{fork.run_id}.1", f"{fork.run_id}.2"]
        assert source.verify().ok  # copied steps started before the fork: legitimate
        (size,) = source.sizes("wf-parent")
        assert {"steps", "inputs", "outputs", "events", "notifications"} <= {
            k.kind for k in size.by_kind
        }
        report = source.verify("wf-failing")
        assert report.ok
        step, result = source.records("wf-failing")
        assert step.data["function_name"] == "add"
        assert (result.entry_id, result.kind) == ("wf-failing.result", "error")
        raised = result.data["error"]
        assert (
            raised["$opaque"] == "pickle" and "builtins.RuntimeError" in raised["scan"]["globals"]
        )
        assert "the workflow fails" in raised["scan"]["strings"]
        assert source.record("wf-failing.result") == result
        assert source.verify("wf-parent-3").ok  # a nested child, asked for by name


def by_id_kind(entries: list[Entry], entry_id: str) -> str:
    return next(e.kind for e in entries if e.entry_id == entry_id)


def test_dbos_lists_in_the_order_asked_from_its_sql(dbos_sqlite: Path, tmp_path: Path) -> None:
    store = copy_of(dbos_sqlite, tmp_path / "dbos.sqlite")
    with open_source(store) as source:
        ids = [info.run_id for info in source.runs()]
    late, tied, tying = ids[:3]
    change(store, "UPDATE workflow_status SET created_at = ? WHERE workflow_uuid = ?", 10**16, late)
    change(  # a tie, broken by id
        store,
        "UPDATE workflow_status SET created_at = (SELECT created_at FROM workflow_status"
        " WHERE workflow_uuid = ?) WHERE workflow_uuid = ?",
        tied,
        tying,
    )
    with open_source(store) as source:
        every = list(source.runs())
        oldest = sorted(every, key=lambda i: (i.created_at, i.run_id))
        for newest_first, expected in ((False, oldest), (True, oldest[::-1])):
            given = list(source.runs_by_created(newest_first=newest_first))  # type: ignore[attr-defined]
            assert given == expected
    for reverse, expected in (([], oldest[::-1]), (["--reverse"], oldest)):
        done = wfctl("runs", "--store", store, "--json", *reverse)
        assert done.code == 0, done
        assert [r["run_id"] for r in done.json()["runs"]] == [i.run_id for i in expected]
    assert (expected[0].run_id, expected[0].created_at) == (late, "")  # no time: the oldest


def test_a_time_is_read_to_its_millisecond_in_integers() -> None:
    low, high = EPOCH_MS_RANGE
    assert epoch_ms(high) == "9999-12-31T23:59:59.999+00:00"  # through a float: .998
    assert epoch_ms(low) == "0001-01-01T00:00:00.000+00:00"
    assert epoch_ms(high + 1) == epoch_ms(low - 1) == epoch_ms("soon") == epoch_ms(None) == ""
    assert epoch_ms(1_700_000_000_123) == "2023-11-14T22:13:20.123+00:00"
