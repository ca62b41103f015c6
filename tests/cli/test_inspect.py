"""Read commands: ``runs``, ``log``, ``show``, ``export``, and ``gc``."""

from __future__ import annotations

import json
import tomllib
from pathlib import Path

import pytest

from tests.cli.conftest import WORKFLOWS, invoke, run_id_of, wfctl

GREET = WORKFLOWS / "greet.py"
REVIEW = WORKFLOWS / "review.py"
FLAKY = WORKFLOWS / "flaky.py"


def test_runs_lists_and_filters(store: Path, tmp_path: Path) -> None:
    done = run_id_of(invoke("run", GREET, "--store", store, "--json"))
    paused = run_id_of(invoke("run", REVIEW, "--store", store, "--json"))
    (tmp_path / "d").mkdir()
    failed = run_id_of(
        invoke("run", FLAKY, "--input", json.dumps(str(tmp_path / "d")), "--store", store, "--json")
    )
    runs = wfctl("runs", "--store", store, "--json").json()["runs"]
    assert [r["run_id"] for r in runs] == [failed, paused, done]  # newest first
    by_id = {r["run_id"]: r for r in runs}
    assert by_id[done]["status"] == "completed" and by_id[done]["pending_request_ids"] == []
    assert by_id[paused]["status"] == "paused"
    assert by_id[paused]["pending_request_ids"] == ["0/request#0", "1/request#0"]
    assert by_id[failed]["status"] == "failed"
    assert set(runs[0]) == {
        "run_id", "workflow", "status", "head_checkpoint_id", "head_seq", "created_at",
        "updated_at", "origin_run_id", "origin_checkpoint_id", "pending_request_ids", "problem",
        "waiting",
    }  # fmt: skip
    only_paused = invoke("runs", "--status", "paused", "--store", store, "--json").json()
    assert [r["run_id"] for r in only_paused["runs"]] == [paused]
    only_greet = invoke("runs", "-w", "greet", "--store", store, "--json").json()
    assert [r["run_id"] for r in only_greet["runs"]] == [done]

    people = wfctl("runs", "--store", store)
    assert people.code == 0
    for run_id in (done, paused, failed):
        assert run_id in people.stdout
    # The notes column folds to fit 120 columns: the requests may be on two lines of the cell.
    assert "waiting: 0/request#0," in people.stdout and "1/request#0" in people.stdout
    assert "completed" in people.stdout and "failed" in people.stdout


def test_log_shows_the_chain_as_a_timeline(store: Path) -> None:
    run_id = run_id_of(invoke("run", REVIEW, "--store", store, "--json"))
    invoke("resume", run_id, "-r", "0/request#0=yes", "-r", "1/request#0=3", "--store", store)
    done = wfctl("log", run_id, "--store", store, "--json")
    assert done.code == 0
    doc = done.json()
    assert doc["run"]["status"] == "completed"
    entries = doc["checkpoints"]
    assert [e["kind"] for e in entries] == ["root", "step", "pause", "resume", "completed"]
    assert [e["seq"] for e in entries] == [0, 1, 2, 3, 4]
    assert entries[1]["steps"][0]["key"] == "prepare#0"
    assert isinstance(entries[1]["steps"][0]["duration_s"], float)
    assert entries[2]["request_ids"] == ["0/request#0", "1/request#0"]
    assert entries[3]["answers"] == {"0/request#0": "yes", "1/request#0": 3}
    assert entries[4]["served_keys"] == [] and entries[4]["served_count"] == 1  # a count, not keys
    assert set(entries[0]) == {
        "checkpoint_id", "seq", "kind", "created_at", "steps", "served_keys", "served_count",
        "request_ids",
        "answers", "error", "detail", "attempts", "failures",
    }  # fmt: skip

    people = wfctl("log", run_id, "--store", store)
    assert people.code == 0
    out = people.stdout
    assert f"run {run_id} · review · completed" in out
    assert "✓ prepare#0 (" in out and " ms)" in out
    assert "? request 0/request#0" in out
    assert "→ answer 1/request#0 = 3" in out
    assert "↺ cached: 1 call" in out


def test_log_names_the_error_of_a_failed_run(store: Path, tmp_path: Path) -> None:
    (tmp_path / "d").mkdir()
    run_id = run_id_of(
        invoke("run", FLAKY, "--input", json.dumps(str(tmp_path / "d")), "--store", store, "--json")
    )
    doc = invoke("log", run_id, "--store", store, "--json").json()
    assert doc["checkpoints"][-1]["error"] == "RuntimeError: the fix is not in yet"
    assert "✗ RuntimeError: the fix is not in yet" in invoke("log", run_id, "--store", store).stdout


def test_show_as_json_toml_and_for_people(store: Path) -> None:
    run_id = run_id_of(invoke("run", GREET, "--input", '"ada"', "--store", store, "--json"))
    as_json = wfctl("show", f"{run_id}.0", "--store", store, "--json")
    assert as_json.code == 0
    document = as_json.json()
    assert document["schema"] == "wfctl/show@1" and document["checkpoint_id"] == f"{run_id}.0"
    record = document["record"]  # as stored
    assert record["id"] == f"{run_id}.0" and record["kind"] == "root" and record["prev"] is None
    assert record["data"]["input"] == "ada"
    as_toml = wfctl("show", f"{run_id}.1", "--store", store, "--toml")
    assert as_toml.code == 0
    parsed = tomllib.loads(as_toml.stdout)
    assert parsed["id"] == f"{run_id}.1" and parsed["prev"] == f"{run_id}.0"
    assert "origin" not in parsed  # TOML has no null: left out
    people = wfctl("show", f"{run_id}.0", "--store", store)
    assert f"{run_id}.0 · root · greet" in people.stdout
    assert '"input": "ada"' in people.stdout


@pytest.mark.parametrize("fmt", ["json", "toml"])
def test_export_to_stdout_and_to_a_file(fmt: str, store: Path, tmp_path: Path) -> None:
    run_id = run_id_of(invoke("run", GREET, "--store", store, "--json"))
    done = wfctl("export", run_id, "--format", fmt, "--store", store)
    assert done.code == 0
    load = json.loads if fmt == "json" else tomllib.loads
    document = load(done.stdout)
    assert document["run"]["run_id"] == run_id and document["run"]["status"] == "completed"
    assert [c["seq"] for c in document["checkpoints"]] == [0, 1, 2]
    assert all("crc" not in c for c in document["checkpoints"])

    target = tmp_path / f"run.{fmt}"
    written = wfctl("export", run_id, "--format", fmt, "--output", target, "--store", store)
    assert written.code == 0 and written.stdout == ""
    assert "wrote 3 checkpoint(s)" in written.stderr
    assert load(target.read_text(encoding="utf-8")) == document
    summary = invoke(
        "export", run_id, "--format", fmt, "--output", target, "--store", store, "--json"
    )
    assert summary.json() == {
        "schema": "wfctl/export-result@1", "run_id": run_id, "format": fmt,
        "checkpoint_count": 3, "output_file": str(target),
    }  # fmt: skip


def test_export_json_flag_means_json_and_bad_output_is_an_input_error(
    store: Path, tmp_path: Path
) -> None:
    run_id = run_id_of(invoke("run", GREET, "--store", store, "--json"))
    done = invoke("export", run_id, "--format", "toml", "--json", "--store", store)
    assert json.loads(done.stdout)["run"]["run_id"] == run_id
    bad = invoke("export", run_id, "--output", tmp_path / "no" / "dir" / "x.json", "--store", store)
    assert bad.code == 2 and "cannot write" in bad.error_line()


def test_gc_removes_only_finished_runs_nothing_needs(store: Path, tmp_path: Path) -> None:
    old = run_id_of(invoke("run", GREET, "--store", store, "--json"))
    paused = run_id_of(invoke("run", REVIEW, "--store", store, "--json"))
    (tmp_path / "d").mkdir()
    failed = run_id_of(
        invoke("run", FLAKY, "--input", json.dumps(str(tmp_path / "d")), "--store", store, "--json")
    )
    source = run_id_of(invoke("run", GREET, "--input", '"x"', "--store", store, "--json"))
    replayed = invoke("replay", "-c", f"{source}.1", "--store", store, "--json").json()
    replay_run = replayed["replay_run_id"]

    fresh = invoke("gc", "--store", store, "--json").json()  # default: older than 7 days
    assert fresh["removed"] == [] and fresh["older_than"] == "7d"

    kept_newest = invoke("gc", "--keep", "1", "--dry-run", "--store", store, "--json").json()
    assert kept_newest["dry_run"] is True
    # The newest greet run is the replay; its origin (the source) must stay with it.
    assert [i["run_id"] for i in kept_newest["removed"]] == [old]
    reasons = {i["run_id"]: i["reason"] for i in kept_newest["kept"]}
    assert reasons[source] == f"origin of run {replay_run}"
    assert reasons[paused] == "paused"
    assert reasons[failed] == "failed (use --include-failed)"
    assert (store / "runs" / old).exists()  # a dry run removes nothing

    people = wfctl("gc", "--keep", "1", "--dry-run", "--store", store)
    assert "would remove 1 run(s)" in people.stdout and old in people.stdout
    assert "origin of run" in people.stdout

    everything = wfctl(
        "gc", "--older-than", "0", "--include-failed", "--yes", "--store", store, "--json"
    )
    assert everything.code == 0
    assert sorted(i["run_id"] for i in everything.json()["removed"]) == sorted(
        [old, failed, source, replay_run]
    )
    left = invoke("runs", "--store", store, "--json").json()["runs"]
    assert [r["run_id"] for r in left] == [paused]
    assert invoke("verify-lineage", "--store", store).code == 0


def test_gc_rejects_a_bad_age(store: Path) -> None:
    done = wfctl("gc", "--older-than", "soon", "--store", store)
    assert done.code == 2 and "invalid age 'soon'" in done.error_line()


def test_a_step_failure_the_workflow_caught_is_logged_and_replays_identical(
    store: Path,
) -> None:
    run_id = run_id_of(wfctl("run", WORKFLOWS / "caught.py", "--store", store, "--json"))
    log = wfctl("log", run_id, "--store", store)
    assert log.code == 0
    assert "✗ lookup#0 failed: LookupError: no such user: ada" in log.stdout
    replayed = wfctl("replay", "-c", f"{run_id}.0", "--store", store)
    assert replayed.code == 0, replayed.stdout  # was 1: DIFFERS, with a failed row
    assert "identical" in replayed.stdout
    assert "0 cached, 2 same, 0 changed, 0 new, 0 not reached, 0 failed" in replayed.stdout
