"""The inspecting commands on a directory written by the real agent-framework: ``--store DIR``
(detected) or ``--store agent-framework://DIR`` is read through its source; ``verify-lineage
--agent-framework DIR`` is an alias. Exit codes, the one stderr line, ``--json`` against the
schemas, and a hostile pickle that no command unpickles."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.cli.conftest import wfctl
from tests.cli.test_json_documents import _check
from tests.sources.af_stores import af_store, cosmos_copy
from tests.sources.test_agent_framework_source import THING, hostile_copy, run_af
from wfctl.sources.testing import directory_digest

__all__ = ["af_store"]  # the session's agent-framework store, a fixture of these tests

#: How a pickle names the builtin ``open`` (``io.open``, ``_io.open`` from Python 3.12).
OPEN = f"{open.__module__}.open"


@pytest.fixture(scope="module")
def af_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    directory = tmp_path_factory.mktemp("af-cli")
    run_af(directory, ("fan", 3), ("review", 2))
    return directory


def _json(*args: str | Path, code: int = 0) -> Any:
    done = wfctl(*args, "--json", timeout=60)
    assert done.code == code, done.stderr
    assert done.stderr == ""
    return done.json()


def test_verify_lineage_of_a_detected_directory_is_the_alias_s_report(af_dir: Path) -> None:
    alias = wfctl("verify-lineage", "--agent-framework", af_dir, "--json")
    for store in (str(af_dir), f"agent-framework://{af_dir}"):
        done = wfctl("verify-lineage", "--store", store, "--json")
        assert (done.code, done.stdout) == (alias.code, alias.stdout)
        assert done.code == 1  # fan's parallel steps fork its history
        text = wfctl("verify-lineage", "--store", store)
        assert text.code == 1 and "BROKEN" in text.stdout
    one = _json("verify-lineage", "--store", af_dir, "-w", "rev*")
    assert [r["workflow"] for r in one["runs"]] == ["review"] and one["ok"] is True
    none = wfctl("verify-lineage", "--store", af_dir, "-w", "nope*")
    assert none.code == 2 and none.stdout == ""
    assert none.error_line() == (
        f"wfctl: error: no workflow matched --workflow 'nope*' in {af_dir}; nothing was verified"
    )
    refused = wfctl("verify-lineage", "--store", af_dir, "--since", "1d")
    assert refused.code == 2 and "filter them with --workflow only" in refused.error_line()
    ids = wfctl("verify-lineage", "r1", "--store", af_dir)
    assert ids.code == 2 and "give no run ids" in ids.error_line()


def test_runs_log_show_export_read_the_source(af_dir: Path) -> None:
    listed = _json("runs", "--store", af_dir)
    _check(listed, "source-runs")
    assert listed["source"] == "agent-framework"
    assert {r["workflow"]: r["status"] for r in listed["runs"]} == {
        "fan": "completed",
        "review": "paused",
    }
    only = _json("runs", "--store", af_dir, "--status", "paused")
    assert [r["workflow"] for r in only["runs"]] == ["review"]
    assert (only["matching_run_count"], only["total_run_count"]) == (1, 2)
    table = wfctl("runs", "--store", af_dir)
    assert table.code == 0 and "review" in table.stdout and "paused" in table.stdout

    log = _json("log", "fan", "--store", af_dir)
    _check(log, "source-log")
    records = log["records"]
    assert [r["order"] for r in records] == list(range(len(records)))
    assert any(r["depth"] > 0 for r in records)  # the fork is shown as a branch
    text = wfctl("log", "fan", "--store", af_dir)
    assert text.code == 0 and "└─" in text.stdout

    first = records[-1]["entry_id"]
    shown = _json("show", first, "--store", f"agent-framework://{af_dir}")
    _check(shown, "source-show")
    assert shown["record"]["entry_id"] == first
    assert wfctl("show", first, "--store", af_dir).code == 0

    exported = _json("export", "review", "--store", af_dir)
    _check(exported, "source-export")
    assert exported["run"]["status"] == "paused"
    text_export = json.dumps(exported)
    assert '"__pickled__"' not in text_export
    assert f'"$opaque": "pickle", "type": "{THING}"' in text_export  # the step's result
    assert (
        wfctl("export", "review", "--store", af_dir).stdout
        == wfctl("export", "review", "--store", af_dir, "--json").stdout
    )


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["log", "nope"], "nope"),
        (["show", "nope"], "nope"),
        (["export", "nope"], "nope"),
        (["log", "fan", "--follow"], "--follow"),
        (["show", "x", "--toml"], "--toml"),
        (["export", "fan", "--format", "toml"], "--format"),
        (["runs", "--since", "1d"], "--workflow and --status only"),
    ],
)
def test_bad_input_is_one_line(af_dir: Path, args: list[str], says: str) -> None:
    json_too = "--format" not in args  # --json without --output writes JSON whatever --format
    for extra in ([], ["--json"]) if json_too else ([],):
        done = wfctl(*args, *extra, "--store", af_dir)
        assert done.code == 2 and done.stdout == "", done
        assert says in done.error_line()


def test_no_command_unpickles_a_hostile_pickle(af_dir: Path, tmp_path: Path) -> None:
    hostile = tmp_path / "af"
    target = tmp_path / "planted"
    hostile_copy(af_dir, hostile, target)
    ids = [r["entry_id"] for r in _json("log", "review", "--store", hostile)["records"]]
    for args in (
        ["runs"],
        ["log", "review"],
        ["log", "review", "-v"],
        ["log", "fan"],
        ["show", ids[0]],
        ["show", ids[0][:8]],
        ["export", "review"],
        ["du"],
        ["du", "review"],
        ["verify-lineage"],
    ):
        for extra in ([], ["--json"]):
            done = wfctl(*args, *extra, "--store", hostile, timeout=60)
            assert done.code in (0, 1), done
            assert done.stderr == ""
            if args[0] in ("log", "show", "export"):  # the marker, read as data
                assert OPEN in done.stdout
    shown = _json("show", ids[0], "--store", hostile)["record"]["data"]
    marker = shown["pending_request_info_events"]["planted"]
    assert marker["scan"]["globals"] == [OPEN]
    assert marker["reading"] == {"$type": OPEN, "$args": [str(target), "w"]}
    assert wfctl("verify-lineage", "--agent-framework", hostile).code == 1
    assert not target.exists()


@pytest.mark.parametrize("args", [["gc"], ["rm", "fan"], ["cancel", "fan"], ["pause", "fan"]])
def test_commands_for_wfctl_runs_refuse_another_engine_s_store(
    af_dir: Path, args: list[str]
) -> None:
    before = directory_digest(af_dir)
    for extra in ([], ["--json"]):
        done = wfctl(*args, *extra, "--store", af_dir)
        assert done.code == 2 and done.stdout == "", done
        assert done.error_line() == (
            f"wfctl: error: store '{af_dir}' is an agent-framework store: this command works on "
            "wfctl stores only (runs, log, show, export, du and verify-lineage read it)"
        )
    assert directory_digest(af_dir) == before


def test_runs_log_show_du_and_verify_of_a_store_with_every_kind_of_run(
    af_store: Path, tmp_path: Path
) -> None:
    """Graph and functional runs written by agent-framework: chains by id, their states and
    facts, their checkpoints' messages, requests and cached steps; a Cosmos DB export the
    same."""
    listed = _json("runs", "--store", af_store)
    _check(listed, "source-runs")
    runs = {(r["workflow"], r["status"]): r for r in listed["runs"]}
    assert sorted(runs) == [
        ("approval", "completed"),
        ("approval", "paused"),
        ("fan", "completed"),
        ("review", "completed"),
        ("review", "paused"),
        ("skip", "completed"),
    ]
    assert len(listed["runs"]) == 7  # fan ran twice
    assert runs["approval", "paused"]["details"] == {"iterations": 2, "pending_requests": 1}
    table = wfctl("runs", "--store", af_store, "--status", "paused")
    assert table.code == 0 and "pending requests 1" in table.stdout

    answered = runs["approval", "completed"]["run_id"]
    log = _json("log", answered[:8], "--store", af_store)
    _check(log, "source-log")
    assert log["run_id"] == answered
    assert [r["summary"]["iteration"] for r in log["records"]] == [0, 1, 2, 2, 3]
    text = wfctl("log", answered[:8], "--store", af_store)
    assert text.code == 0 and text.stderr == ""
    assert text.stdout.startswith(f"{answered} (agent-framework): 5 record(s)\n")  # whole
    for line in (
        "iteration: 2",
        "ran: upper",
        'message: internal:upper → upper: "hello"',
        'message: internal:approver → approver [response]: "yes"',
        '{"text": "HELLO"} (from approver)',
    ):
        assert line in text.stdout
    skip = wfctl("log", "skip", "--store", af_store)  # the workflow's one run
    assert skip.code == 0 and "iteration: 2" in skip.stdout
    paused = runs["review", "paused"]["run_id"]
    review = wfctl("log", paused[:8], "--store", af_store)
    assert review.code == 0 and "cached: make[" in review.stdout

    many = wfctl("log", "fan", "--store", af_store)
    assert many.code == 2 and many.stdout == ""
    assert many.error_line().startswith("wfctl: error: run 'fan' not found; did you mean ")
    request = log["records"][2]["entry_id"]
    shown = _json("show", request[:10], "--store", af_store)
    _check(shown, "source-show")
    assert shown["record"]["entry_id"] == request and shown["record"]["run_id"] == answered

    usage = _json("du", answered[:8], "--store", af_store)
    (run,) = usage["runs"]
    assert {k["kind"] for k in run["kinds"]} == {"checkpoint", "state", "messages", "requests"}

    verified = wfctl("verify-lineage", "--store", af_store, "--json")
    assert verified.code == 1 and verified.stderr == ""
    broken = {v["run_id"] for v in verified.json()["runs"] if not v["ok"]}
    assert broken == {
        r["run_id"]
        for r in listed["runs"]
        if r["workflow"] in ("fan", "skip")
        or (r["workflow"], r["status"]) == ("review", "completed")
    }  # the forks, the skipped checkpoint, the new root after answers alone

    cosmos = tmp_path / "cosmos"
    cosmos_copy(af_store, cosmos)
    exported = _json("runs", "--store", f"agent-framework://{cosmos}")
    assert [(r["run_id"], r["status"], r["details"]) for r in exported["runs"]] == [
        (r["run_id"], r["status"], r["details"]) for r in listed["runs"]
    ]
    again = wfctl("verify-lineage", "--store", cosmos, "--json")
    assert again.code == 1 and [v["ok"] for v in again.json()["runs"]] == [
        v["ok"] for v in verified.json()["runs"]
    ]
