"""The inspecting commands on DBOS SQLite system databases the real DBOS wrote: ``--store FILE``
(detected) or ``--store dbos+sqlite://FILE``. Exit codes, the one stderr line, ``--json``
against the schemas; a pickle whose unpickling would create a file, never unpickled; damaged
rows named in one line each, never a traceback."""

from __future__ import annotations

import base64
import subprocess
import sys
from pathlib import Path

from tests.cli.conftest import wfctl
from tests.cli.test_json_documents import _check
from tests.dbos.stores import change, copy_of
from tests.langgraph.tampered import plant
from tests.langgraph.test_cli import _json
from wfctl.sources.testing import directory_digest


def test_every_command_reads_the_store_and_writes_nothing(dbos_sqlite: Path) -> None:
    before = directory_digest(dbos_sqlite.parent)
    for store in (str(dbos_sqlite), f"dbos+sqlite://{dbos_sqlite}"):
        listed = _json("runs", "--store", store)
        _check(listed, "source-runs")
        assert listed["source"] == "dbos-sqlite"
        statuses = {r["run_id"]: r["status"] for r in listed["runs"]}
        assert statuses["wf-parent"] == "completed" and statuses["wf-pending"] == "unknown"
        parent = next(r for r in listed["runs"] if r["run_id"] == "wf-parent")
        assert parent["details"]["dbos_status"] == "SUCCESS"
        failed = _json("runs", "--store", store, "--status", "failed")
        assert [r["run_id"] for r in failed["runs"]] == ["wf-failing"]
    log = _json("log", "wf-parent", "--store", dbos_sqlite)
    _check(log, "source-log")
    depths = {r["entry_id"]: r["depth"] for r in log["records"]}
    assert depths["wf-parent-3.1"] == 1
    shown = _json("show", "wf-parent.7", "--store", dbos_sqlite)
    _check(shown, "source-show")
    assert shown["record"]["data"]["message"]["topic"] == "greeting"
    exported = _json("export", "wf-parent", "--store", dbos_sqlite)
    _check(exported, "source-export")
    assert len(exported["records"]) == exported["run"]["record_count"] == 11
    assert _json("verify-lineage", "--store", dbos_sqlite)["ok"] is True
    used = _json("du", "--store", dbos_sqlite)
    assert used["source"] == "dbos-sqlite"
    wide = wfctl("runs", "--store", dbos_sqlite, env={"COLUMNS": "250"})
    assert wide.code == 0 and "dbos status PENDING, recovery attempts 1" in wide.stdout
    text = wfctl("log", "wf-parent", "--store", dbos_sqlite)
    assert text.code == 0 and "received greeting" in text.stdout
    refused = wfctl("rm", "wf-parent", "--store", dbos_sqlite)
    assert refused.code == 2 and "a dbos-sqlite store" in refused.error_line()
    assert directory_digest(dbos_sqlite.parent) == before


def test_no_command_unpickles_a_value(dbos_sqlite: Path, tmp_path: Path) -> None:
    planted = tmp_path / "planted"
    hostile, _ = plant(planted, tmp_path / "modules")
    # the pickle does what it says: unpickled (in another process) it creates the file
    probe = tmp_path / "probe"
    probe_pickle, _ = plant(probe, tmp_path / "modules")
    code = "import pickle, sys; pickle.loads(sys.stdin.buffer.read())"
    subprocess.run([sys.executable, "-c", code], input=probe_pickle, check=True)
    assert probe.exists()
    store = copy_of(dbos_sqlite, tmp_path / "hostile.sqlite")
    encoded = base64.b64encode(hostile).decode()
    change(
        store,
        "UPDATE operation_outputs SET output = ? WHERE workflow_uuid = 'wf-parent'"
        " AND serialization = 'py_pickle'",
        encoded,
    )
    change(
        store, "UPDATE workflow_output SET error = ? WHERE workflow_uuid = 'wf-failing'", encoded
    )
    change(store, "UPDATE notifications SET message = ?", encoded)
    for args in (
        ["runs"],
        ["log", "wf-parent", "-v"],
        ["show", "wf-parent.1"],
        ["show", "wf-parent.7"],
        ["show", "wf-failing.result"],
        ["log", "wf-failing", "-v"],
        ["export", "wf-parent"],
        ["du"],
        ["verify-lineage"],
    ):
        for extra in ([], ["--json"]):
            done = wfctl(*args, *extra, "--store", store, timeout=60)
            assert done.code == 0, done
            assert "Traceback" not in done.stderr
    assert not planted.exists()
    output = _json("show", "wf-parent.1", "--store", store)["record"]["data"]["output"]
    assert output["$opaque"] == "pickle"
    assert output["scan"]["globals"] == [f"{open.__module__}.open"]  # what it would call
    assert str(planted) in output["scan"]["strings"]
    raised = _json("show", "wf-failing.result", "--store", store)["record"]["data"]["error"]
    assert raised["$opaque"] == "pickle" and str(planted) in raised["scan"]["strings"]
    assert not planted.exists()


def _broken(store: Path, code: int = 1) -> list[str]:
    """The problems verify-lineage names (exit ``code``), each one line, no traceback."""
    report = _json("verify-lineage", "--store", store, code=code)
    text = wfctl("verify-lineage", "--store", store)
    assert text.code == code and "Traceback" not in text.stderr
    return [p for run in report["runs"] for p in run["problems"]]


def test_a_deleted_step_is_a_gap(dbos_sqlite: Path, tmp_path: Path) -> None:
    store = copy_of(dbos_sqlite, tmp_path / "gap.sqlite")
    change(
        store, "DELETE FROM operation_outputs WHERE workflow_uuid = 'wf-parent' AND function_id = 2"
    )
    assert _broken(store) == ["workflow wf-parent: no step 2 (steps are 1..N)"]


def test_a_child_without_its_parent_is_a_run_named_so(dbos_sqlite: Path, tmp_path: Path) -> None:
    store = copy_of(dbos_sqlite, tmp_path / "orphan.sqlite")
    change(store, "DELETE FROM workflow_status WHERE workflow_uuid = 'wf-parent'")
    listed = {r["run_id"]: r for r in _json("runs", "--store", store)["runs"]}
    assert listed["wf-parent-3"]["problem"] == ("its parent workflow wf-parent is not in the store")
    problems = _broken(store)
    assert "workflow wf-parent-3: its parent workflow wf-parent is not in the store" in problems


def test_a_child_naming_another_parent_breaks_the_lineage(
    dbos_sqlite: Path, tmp_path: Path
) -> None:
    store = copy_of(dbos_sqlite, tmp_path / "stray.sqlite")
    change(
        store,
        "UPDATE workflow_status SET parent_workflow_id = 'wf-failing' WHERE workflow_uuid = 'wf-parent-3'",
    )
    problems = _broken(store)
    assert (
        "workflow wf-parent step 3 (child): its child workflow wf-parent-3 names wf-failing"
        " parent, not wf-parent" in problems
    )


def test_an_unknown_serialization_is_named_not_decoded(dbos_sqlite: Path, tmp_path: Path) -> None:
    store = copy_of(dbos_sqlite, tmp_path / "unknown.sqlite")
    change(
        store,
        "UPDATE operation_outputs SET serialization = 'msgpack_v9' WHERE workflow_uuid = 'wf-parent' AND function_id = 1",
    )
    said = "serialization 'msgpack_v9' is not one wfctl knows: not decoded"
    shown = _json("show", "wf-parent.1", "--store", store)["record"]
    assert shown["data"]["output"]["$undecodable"] == "msgpack_v9"
    assert shown["summary"]["problems"] == [f"output: {said}"]
    assert _broken(store) == [f"workflow wf-parent step 1 (add): output: {said}"]


def test_a_newer_system_database_is_read_and_named(dbos_sqlite: Path, tmp_path: Path) -> None:
    store = copy_of(dbos_sqlite, tmp_path / "newer.sqlite")
    change(store, "INSERT INTO dbos_migrations (version) VALUES (126)")
    said = (
        "DBOS system database version 126 is newer than wfctl reads (up to 125): shown as"
        " stored, it may be misread"
    )
    listed = _json("runs", "--store", store)["runs"]
    assert {r["problem"] for r in listed} == {said}
    assert _json("log", "wf-parent", "--store", store)["records"]
    assert set(_broken(store)) == {f"workflow {r['run_id']}: {said}" for r in listed}


def test_a_missing_event_row_and_notification_are_named(dbos_sqlite: Path, tmp_path: Path) -> None:
    store = copy_of(dbos_sqlite, tmp_path / "unsent.sqlite")
    change(store, "DELETE FROM workflow_events_history WHERE workflow_uuid = 'wf-parent'")
    change(store, "DELETE FROM notifications WHERE destination_uuid = 'wf-parent'")
    change(store, "DELETE FROM workflow_output WHERE workflow_uuid = 'wf-failing'")
    assert sorted(_broken(store)) == [
        "workflow wf-failing: ERROR but it has no workflow_output row",
        "workflow wf-parent step 5 (DBOS.setEvent): set an event, but has no"
        " workflow_events_history row",
        "workflow wf-parent step 7 (DBOS.recv): received a message, but no notification it"
        " consumed",
    ]


def test_a_file_that_is_not_dbos_is_refused_in_one_line(tmp_path: Path) -> None:
    empty = tmp_path / "empty.sqlite"
    change(empty, "CREATE TABLE other (x)")
    done = wfctl("runs", "--store", f"dbos+sqlite://{empty}")
    assert done.code == 2 and done.stdout == ""
    assert "not a DBOS system database" in done.error_line()
    missing = wfctl("runs", "--store", "dbos+sqlite://")
    assert missing.code == 2 and "names no file" in missing.error_line()
