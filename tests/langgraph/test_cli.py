"""The inspecting commands on LangGraph SQLite files the real LangGraph wrote: ``--store FILE``
(detected) or ``--store langgraph+sqlite://FILE``. Exit codes, the one stderr line, ``--json``
against the schemas; hostile rows that no command unpickles or imports from; damaged rows named
in one line each, never a traceback."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.cli.conftest import wfctl
from tests.cli.test_json_documents import _check
from tests.langgraph.tampered import (
    damaged,
    hostile_copy,
    with_newer_format,
    with_truncated_checkpoint,
    with_two_loop_children,
    with_unknown_ext,
    without_task_path,
    without_writes,
)
from wfctl.sources.testing import directory_digest


def _json(*args: str | Path, code: int = 0, **options: Any) -> Any:
    done = wfctl(*args, "--json", timeout=60, **options)
    assert done.code == code, done
    assert "Traceback" not in done.stderr
    return done.json()


def test_runs_lists_a_thread_per_run_with_its_state(sqlite_store: Path) -> None:
    before = directory_digest(sqlite_store.parent)
    for store in (str(sqlite_store), f"langgraph+sqlite://{sqlite_store}"):
        listed = _json("runs", "--store", store)
        _check(listed, "source-runs")
        assert listed["source"] == "langgraph-sqlite"
        assert {r["run_id"]: r["status"] for r in listed["runs"]} == {
            "paused": "paused",
            "done": "unknown",  # its head is the update_state fork, not run since
            "failed": "failed",
            "nested": "completed",
            "functional": "completed",
        }
        paused = _json("runs", "--store", store, "--status", "paused")
        assert [r["run_id"] for r in paused["runs"]] == ["paused"]
    text = wfctl("runs", "--store", sqlite_store)
    assert text.code == 0 and "langgraph-sqlite runs" in text.stdout
    assert directory_digest(sqlite_store.parent) == before


def test_log_shows_the_tree_subgraphs_nested_and_what_each_checkpoint_ran(
    sqlite_store: Path,
) -> None:
    nested = _json("log", "nested", "--store", sqlite_store)
    _check(nested, "source-log")
    records = nested["records"]
    namespaces = [r["summary"]["checkpoint_ns"] for r in records]
    first_sub = next(i for i, ns in enumerate(namespaces) if ns)
    spawner = records[first_sub]["parent_ids"][0]
    assert namespaces[0] == "" and namespaces[-1] == ""  # the root's last step after the subgraph
    assert records[first_sub - 1]["entry_id"] == spawner  # right after the checkpoint that ran it
    assert records[first_sub]["depth"] > records[first_sub - 1]["depth"]
    paused = wfctl("log", "paused", "--store", sqlite_store)
    assert paused.code == 0
    assert 'interrupt: {"question": "go on?", "n": 2}' in paused.stdout
    done = wfctl("log", "done", "--store", sqlite_store)
    assert "resume: yes" in done.stdout and "update" in done.stdout and "└─" in done.stdout
    failed = wfctl("log", "failed", "--store", sqlite_store)
    assert "error: ValueError('n is too big: 201')" in failed.stdout
    functional = wfctl("log", "functional", "--store", sqlite_store)
    assert "task: doubles[0] -> 6" in functional.stdout
    assert "task: doubles[1] -> 8" in functional.stdout
    verbose = wfctl("log", "paused", "--store", sqlite_store, "-v")
    assert verbose.code == 0 and '"channel_values"' in verbose.stdout
    assert '"channel_values"' not in paused.stdout


def test_show_takes_an_id_or_a_unique_prefix(sqlite_store: Path) -> None:
    log = _json("log", "failed", "--store", sqlite_store)
    head = log["records"][-1]
    shown = _json("show", head["entry_id"][:20], "--store", sqlite_store)
    _check(shown, "source-show")
    assert shown["record"] == {k: v for k, v in head.items() if k != "depth"}
    data = shown["record"]["data"]
    assert data["checkpoint"]["channel_values"]["n"] == 201
    assert data["metadata"]["source"] == "loop"
    assert [w["channel"] for w in data["pending_writes"]] == ["__error__"]
    prefix = head["entry_id"][:4]
    ambiguous = wfctl("show", prefix, "--store", sqlite_store)
    assert ambiguous.code == 2 and ambiguous.stdout == ""
    assert f"checkpoint id '{prefix}' is ambiguous" in ambiguous.error_line()
    missing = wfctl("show", "ffff", "--store", sqlite_store)
    assert missing.code == 2 and "ffff" in missing.error_line()


def test_export_is_the_thread_decoded(sqlite_store: Path) -> None:
    exported = _json("export", "functional", "--store", sqlite_store)
    _check(exported, "source-export")
    assert exported["run"]["status"] == "completed"
    results = [t["result"] for r in exported["records"] for t in r["summary"]["tasks"]]
    assert results == [6, 8]


def test_verify_lineage_passes_forks_and_fails_two_loop_children(
    sqlite_store: Path, tmp_path: Path
) -> None:
    report = _json("verify-lineage", "--store", sqlite_store)
    assert report["ok"] is True and report["run_count"] == 5
    broken = tmp_path / "two.sqlite"
    parent, first, second = with_two_loop_children(sqlite_store, broken, "paused")
    failing = _json("verify-lineage", "--store", broken, code=1)
    (verdict,) = [r for r in failing["runs"] if not r["ok"]]
    assert verdict["run_id"] == "paused"
    (problem,) = [p for p in verdict["problems"] if "loop children" in p]
    assert "thread paused" in problem and parent in problem
    assert first in problem and second in problem
    text = wfctl("verify-lineage", "--store", broken)
    assert text.code == 1 and "Traceback" not in text.stderr


def test_no_command_unpickles_or_imports_what_a_row_names(
    sqlite_store: Path, tmp_path: Path
) -> None:
    planted = tmp_path / "planted"
    modules = tmp_path / "modules"
    store = hostile_copy(sqlite_store, tmp_path / "hostile.sqlite", planted, modules)
    env = {"PYTHONPATH": str(modules)}
    head = _json("runs", "--store", store, cwd=modules, env=env)["runs"]
    heads = {r["run_id"]: r["head_id"] for r in head}
    for args in (
        ["runs"],
        ["log", "paused"],
        ["log", "paused", "-v"],
        ["log", "done"],
        ["show", heads["done"]],
        ["show", heads["paused"]],
        ["export", "paused"],
        ["export", "done"],
        ["verify-lineage"],
    ):
        for extra in ([], ["--json"]):
            done = wfctl(*args, *extra, "--store", store, cwd=modules, env=env, timeout=60)
            assert done.code in (0, 1), done
            assert "Traceback" not in done.stderr
    assert not planted.exists()
    assert not planted.with_suffix(".imported").exists()
    shown = _json("show", heads["done"], "--store", store)["record"]["data"]["checkpoint"]
    assert shown["$opaque"] == "pickle" and shown["bytes"] > 0
    writes = _json("show", heads["paused"], "--store", store)["record"]["data"]["pending_writes"]
    log = _json("log", "paused", "--store", store)["records"]
    values = [w["value"] for r in log for w in r["data"]["pending_writes"]]
    assert any(v.get("$opaque") == "pickle" and v["bytes"] > 0 for v in values)
    assert {"$type": "lg_planted_module.Thing", "$args": "x"} in values
    assert writes  # the head's interrupt, decoded
    assert not planted.exists()


def test_a_damaged_row_is_named_in_one_line(sqlite_store: Path, tmp_path: Path) -> None:
    truncated = tmp_path / "truncated.sqlite"
    cut = with_truncated_checkpoint(sqlite_store, truncated, "paused")
    listed = {r["run_id"]: r for r in _json("runs", "--store", truncated)["runs"]}
    assert listed["paused"]["status"] == "unreadable"
    assert listed["paused"]["problem"] == "checkpoint cannot be decoded: truncated msgpack"
    report = _json("verify-lineage", "--store", truncated, code=1)
    (problem,) = next(r for r in report["runs"] if r["run_id"] == "paused")["problems"]
    assert problem == f"checkpoint {cut}: checkpoint cannot be decoded: truncated msgpack"
    shown = _json("show", cut, "--store", truncated)["record"]
    assert shown["data"]["checkpoint"]["$undecodable"] == "msgpack"

    newer = tmp_path / "newer.sqlite"
    head = with_newer_format(sqlite_store, newer, "failed", 99)
    listed = {r["run_id"]: r for r in _json("runs", "--store", newer)["runs"]}
    assert "checkpoint format v99 is newer than wfctl reads" in listed["failed"]["problem"]
    report = _json("verify-lineage", "--store", newer, code=1)
    (problem,) = next(r for r in report["runs"] if r["run_id"] == "failed")["problems"]
    assert problem.startswith(f"checkpoint {head}: checkpoint format v99 is newer")

    unknown = tmp_path / "unknown.sqlite"
    with_unknown_ext(sqlite_store, unknown, "paused")
    log = _json("log", "paused", "--store", unknown)["records"]
    values = [w["value"] for r in log for w in r["data"]["pending_writes"] if w["channel"] == "log"]
    assert values and all(v == {"$opaque": "ext", "code": 42, "bytes": 3} for v in values)

    bare = tmp_path / "bare.sqlite"
    without_writes(sqlite_store, bare)
    for store in (str(bare), f"langgraph+sqlite://{bare}"):
        for args in (["runs"], ["log", "paused"], ["verify-lineage"]):
            done = wfctl(*args, "--store", store)
            assert done.code == 2 and done.stdout == ""
            assert done.error_line() == (
                f"wfctl: error: store '{bare}' has no writes table: "
                "not a LangGraph checkpoint database"
            )


@pytest.mark.parametrize(
    ("store", "says"),
    [
        ("langgraph+sqlite://", "names no file"),
        ("langgraph+sqlite:///no/such/file.sqlite", "does not exist or is not a file"),
    ],
)
def test_a_location_that_is_no_langgraph_file_is_one_line(store: str, says: str) -> None:
    done = wfctl("runs", "--store", store)
    assert done.code == 2 and says in done.error_line()


@pytest.mark.parametrize("args", [["cancel", "paused"], ["pause", "paused"]])
def test_commands_for_wfctl_runs_refuse_a_langgraph_store(
    sqlite_store: Path, args: list[str]
) -> None:
    before = directory_digest(sqlite_store.parent)
    done = wfctl(*args, "--store", sqlite_store)
    assert done.code == 2 and done.stdout == "", done
    assert done.error_line() == (
        f"wfctl: error: store '{sqlite_store}' is a langgraph-sqlite store: this command works "
        "on wfctl stores only (runs, log, show, export, du and verify-lineage read it; "
        "gc --prune-history and rm change it)"
    )
    assert directory_digest(sqlite_store.parent) == before


def test_options_for_wfctl_journals_are_refused(sqlite_store: Path) -> None:
    done = wfctl("log", "paused", "--follow", "--store", sqlite_store)
    assert done.code == 2 and done.stdout == ""
    assert "reads wfctl stores only, not a langgraph-sqlite source" in done.error_line()


def test_a_file_of_an_older_saver_without_task_paths_is_read(
    sqlite_store: Path, tmp_path: Path
) -> None:
    older = tmp_path / "older.sqlite"
    without_task_path(sqlite_store, older)
    log = _json("log", "failed", "--store", older)["records"]
    assert [r["summary"]["nodes"] for r in log] == [[]] * len(log)  # no task path: no names
    assert log[-1]["summary"]["errors"] == ["ValueError('n is too big: 201')"]
    assert {w["task_path"] for r in log for w in r["data"]["pending_writes"]} == {""}
    assert _json("verify-lineage", "--store", older)["ok"] is True


@pytest.mark.parametrize("cut", [True, False])
def test_a_file_sqlite_cannot_read_is_one_line(
    sqlite_store: Path, tmp_path: Path, cut: bool
) -> None:
    broken = damaged(sqlite_store, tmp_path / "broken.sqlite", cut=cut)
    for args in (
        ["runs"],
        ["log", "paused"],
        ["show", "1f"],
        ["export", "paused"],
        ["verify-lineage"],
    ):
        done = wfctl(*args, "--store", broken)
        assert done.code == 2 and done.stdout == "", done
        assert done.error_line() == (
            f"wfctl: error: store '{broken}' cannot be read: database disk image is malformed"
        )
