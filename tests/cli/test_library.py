"""The library side of the CLI, called directly: loader, answers, ages, progress, exit codes.

These import internals (``wfctl._drive._loader`` and friends) on purpose: they are the functions the
commands call, tested here without a command line around them.
"""

from __future__ import annotations

import sys
import tomllib
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from tests.cli.conftest import WORKFLOWS, wfctl
from wfctl import (
    CheckpointCorruptError,
    ReplayDivergenceError,
    RunLockedError,
    WfctlError,
    WorkflowLoadError,
)
from wfctl._drive._answers import PendingRequest, parse_responses, template_text
from wfctl._drive._loader import load_workflow, module_name_for_file
from wfctl._engine._events import (
    WorkflowEvent,
    event_of,
)  # the engine's own event factory, to feed the display
from wfctl._exit import exit_code_for_error, exit_code_for_status
from wfctl._inspect._gc import parse_age
from wfctl._inspect._query import parse_time
from wfctl._render import RunProgress


def test_load_a_file_target_records_its_absolute_path() -> None:
    workflow = load_workflow(str(WORKFLOWS / "greet.py"))
    assert workflow.name == "greet"
    assert workflow.target == f"{WORKFLOWS / 'greet.py'}:greet"
    named = load_workflow(f"{WORKFLOWS / 'two.py'}:beta")
    assert named.name == "beta" and named.target == f"{WORKFLOWS / 'two.py'}:beta"


def test_file_module_names_never_shadow_other_modules(tmp_path: Path) -> None:
    assert module_name_for_file(tmp_path / "my_flow.py") == "my_flow"
    assert module_name_for_file(tmp_path / "json.py") == "wfctl_target_json"
    assert module_name_for_file(tmp_path / "pytest.py") == "wfctl_target_pytest"
    assert module_name_for_file(tmp_path / "my-flow.py") == "wfctl_target_my_flow"


def test_load_errors_are_workflow_load_errors(tmp_path: Path) -> None:
    with pytest.raises(WorkflowLoadError, match="no workflow target given"):
        load_workflow("  ")
    with pytest.raises(WorkflowLoadError, match="is not a file"):
        load_workflow(str(tmp_path) + "/")
    with pytest.raises(WorkflowLoadError, match="neither a file nor a module name"):
        load_workflow("not a module:x")


def test_sys_exit_at_import_is_a_load_error_and_ctrl_c_stays_ctrl_c(tmp_path: Path) -> None:
    leaves = tmp_path / "wfctl_test_leaves.py"
    leaves.write_text("import sys\n\nsys.exit(3)\n", encoding="utf-8")
    with pytest.raises(WorkflowLoadError, match=r"raised SystemExit\(3\)$") as caught:
        load_workflow(str(leaves))
    assert isinstance(caught.value.__cause__, SystemExit)
    assert "wfctl_test_leaves" not in sys.modules  # the half-run module is not left behind
    # Ctrl-C while a module runs is the user's, not the module's failure: it is not converted.
    stopped = tmp_path / "wfctl_test_stopped.py"
    stopped.write_text("raise KeyboardInterrupt\n", encoding="utf-8")
    with pytest.raises(KeyboardInterrupt):
        load_workflow(str(stopped))
    assert "wfctl_test_stopped" not in sys.modules


def test_module_targets_run_and_resume_from_the_same_directory(tmp_path: Path) -> None:
    package = tmp_path / "pkgdemo"
    package.mkdir()
    (package / "__init__.py").write_text("", encoding="utf-8")
    (package / "flows.py").write_text(
        (WORKFLOWS / "review.py").read_text(encoding="utf-8"), encoding="utf-8"
    )
    store = tmp_path / "store"
    paused = wfctl("run", "pkgdemo.flows:review", "--store", store, "--json", cwd=tmp_path)
    assert paused.code == 3, paused.stderr
    run_id = paused.json()["run_id"]
    done = wfctl(
        "resume", run_id, "-r", "0/request#0=ok", "-r", "1/request#0=2",
        "--store", store, "--json", cwd=tmp_path,
    )  # fmt: skip
    assert done.code == 0, done.stderr
    elsewhere = wfctl("show", f"{run_id}.0", "--store", store, "--json")
    assert elsewhere.json()["record"]["data"]["target"] == "pkgdemo.flows:review"


def test_answers_template_round_trips() -> None:
    requests = [
        PendingRequest("0/request#0", {"text": "draft", "n": [1, 2]}, "str"),
        PendingRequest("approve", None, None),
    ]
    text = template_text("r1", requests, Path("/s/runs/r1/answers.toml"))
    # The store is not the default one here, so the command names it.
    assert "#   wfctl resume r1 --store /s --responses /s/runs/r1/answers.toml" in text
    assert "# approve (expects: any)" in text and '#     "text": "draft",' in text
    assert tomllib.loads(text) == {"0/request#0": "", "approve": ""}


def test_parse_responses(tmp_path: Path) -> None:
    types = {"name": "str", "count": "int"}
    pairs = ["name=007", "count=7", 'data={"a": [1]}', "flag=true", "eq=a=b"]
    assert parse_responses(pairs, None, types) == {
        "name": "007",  # a str request keeps the raw text
        "count": 7,
        "data": {"a": [1]},
        "flag": True,
        "eq": "a=b",
    }
    # Not JSON: kept as text (the engine converts it to int, or refuses it).
    assert parse_responses(["count=007x"], None, types) == {"count": "007x"}
    answers = tmp_path / "a.toml"
    answers.write_text('name = "x"\nskipped = ""\ncount = 3\n', encoding="utf-8")
    # A key the file leaves "" is not answered there: a pair may answer it.
    assert parse_responses(["skipped=4"], answers, types) == {"name": "x", "count": 3, "skipped": 4}
    with pytest.raises(WfctlError, match="KEY=VALUE"):
        parse_responses(["=1"], None, types)
    listed = tmp_path / "a.json"
    listed.write_text("[1, 2]", encoding="utf-8")
    with pytest.raises(WfctlError, match="must hold a table"):
        parse_responses([], listed, types)


def test_parse_responses_refuses_a_request_answered_twice(tmp_path: Path) -> None:
    types = {"name": "str", "count": "int"}
    with pytest.raises(WfctlError, match=r"^request 'count' is answered twice \(--response\)"):
        parse_responses(["count=7", "name=a", "count=8"], None, types)
    with pytest.raises(WfctlError, match="request 'name' is answered twice"):
        parse_responses(["name=a", " name =a"], None, types)  # the same answer, the same key
    answers = tmp_path / "a.toml"
    answers.write_text('name = "x"\ncount = 3\n', encoding="utf-8")
    with pytest.raises(WfctlError) as raised:
        parse_responses(["count=3"], answers, types)
    assert str(raised.value) == (
        f"request 'count' is answered twice (--responses {str(answers)!r} and --response): "
        "answer it once"
    )


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("0", timedelta(0)),
        ("30s", timedelta(seconds=30)),
        ("90m", timedelta(minutes=90)),
        ("12h", timedelta(hours=12)),
        ("7d", timedelta(days=7)),
        ("1w2d", timedelta(days=9)),
        ("1.5h", timedelta(minutes=90)),
    ],
)
def test_parse_age(text: str, expected: timedelta) -> None:
    assert parse_age(text) == expected


@pytest.mark.parametrize("text", ["", "7", "d7", "7x", "7d junk", "-1d"])
def test_parse_age_rejects(text: str) -> None:
    with pytest.raises(WfctlError, match="invalid age"):
        parse_age(text)


@pytest.mark.parametrize("text", ["99999999999d", "1000000000d", "9" * 400 + "s"])
def test_parse_age_refuses_an_age_out_of_range(text: str) -> None:
    with pytest.raises(WfctlError, match=r"out of range \(at most 999999999 days\)"):
        parse_age(text)


def test_parse_time_refuses_a_moment_out_of_range() -> None:
    now = datetime(2026, 1, 1, tzinfo=UTC)
    assert parse_time("700000d", now) == now - timedelta(days=700000)  # the year 110
    with pytest.raises(WfctlError, match="'3000000d': out of range"):
        parse_time("3000000d", now)
    # Converting local time probes a day around it: the first day fails in every zone.
    with pytest.raises(WfctlError, match="'0001-01-01': out of range as a local time"):
        parse_time("0001-01-01", now)
    assert parse_time("0001-01-01T00:00Z", now) == datetime(1, 1, 1, tzinfo=UTC)


def test_exit_code_table() -> None:
    assert exit_code_for_error(CheckpointCorruptError("f", "bad")) == 2
    assert exit_code_for_error(RunLockedError("r", "pid 1")) == 2
    assert exit_code_for_error(ReplayDivergenceError("k", "a", ["b"])) == 1
    assert exit_code_for_error(WfctlError("config")) == 2
    assert exit_code_for_error(FileNotFoundError("x")) == 2
    assert exit_code_for_error(KeyboardInterrupt()) == 130
    assert exit_code_for_error(ZeroDivisionError()) == 1
    assert [exit_code_for_status(s) for s in ("completed", "failed", "paused")] == [0, 1, 3]
    assert exit_code_for_status("interrupted") == exit_code_for_status("aborted") == 130


def _frame(progress: RunProgress, events: list[WorkflowEvent]) -> str:
    """Feed ``events`` to an undrawn progress display; return the frame it would draw."""
    with progress:
        for event in events:
            progress.on_event(event)
    from rich.console import Console  # noqa: TID251  # the test reads the renderer's frame

    console = Console(width=80, record=True, color_system=None)
    console.print(progress._renderable())
    return console.export_text()


def test_progress_counts_events() -> None:
    progress = RunProgress(enabled=False)  # not drawn: feed events, read the frame it would draw
    events = [
        event_of("run_started", "r1"),
        event_of("step_started", "r1", "a#0"),
        event_of("step_started", "r1", "b#0"),
        event_of("step_cached", "r1", "c#0"),
        event_of("step_completed", "r1", "a#0"),
    ]
    frame = _frame(progress, events)
    assert "running 1 · cached 1 · done 1" in frame
    assert "▸ b#0" in frame and "a#0" not in frame


def test_progress_shows_a_step_backing_off_and_a_sleep() -> None:
    progress = RunProgress(enabled=False)
    retrying = {"attempt": 2, "attempts": 5, "delay": 3600.0, "error": "Flaky: no"}
    events = [
        event_of("run_started", "r1"),
        event_of("step_started", "r1", "call#0"),
        event_of("step_retrying", "r1", "call#0", retrying),
        event_of("sleeping", "r1", "sleep#0", {"seconds": 7200.0}),
    ]
    frame = _frame(progress, events)
    assert "▸ call#0 attempt 2/5 in 3" in frame  # 3600s, give or take the time it takes
    assert "◷ sleep#0 sleeping, 7" in frame
