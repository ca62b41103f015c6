"""Every table stays readable at 60 and 80 columns: columns fold or go, none is cut or emptied."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest

from tests.cli.conftest import REPO, SAMPLES, Invocation, run_id_of, wfctl

FIXTURES = REPO / "tests" / "fixtures"
#: Characters that start and end a line of a boxed table (its left and right edges).
_EDGES = set("┏┃┡│└┓┩┘")


def _store(tmp_path: Path) -> Path:
    """A store with healthy runs, two corrupt ones and a run of a sample with long step keys."""
    store = tmp_path / "store"
    shutil.copytree(FIXTURES / "healthy", store)
    for run in (FIXTURES / "tampered" / "runs").iterdir():
        shutil.copytree(run, store / "runs" / run.name)
    return store


def _terminal(width: int) -> dict[str, str]:
    """The environment of a terminal ``width`` columns wide (rich's ``TTY_COMPATIBLE``): in a
    pipe, text is never wrapped (decision 0167), so the fitting is a terminal's."""
    return {"COLUMNS": str(width), "TTY_COMPATIBLE": "1", "TERM": "xterm"}  # not "dumb": 80


def _fits(outcome: Invocation, width: int, *, tables: bool = True) -> list[str]:
    """Assert every line fits, nothing was cut short (…) and every boxed table row is whole.

    ``tables=False`` for a tree (``log``), whose lines start with the same characters.
    """
    shown = re.sub(r"\x1b\[[0-9;?]*[a-zA-Z]", "", outcome.stdout)  # a terminal's bold
    lines = shown.splitlines()
    assert lines, outcome.stderr
    for line in lines:
        assert len(line) <= width, f"{len(line)} > {width}: {line!r}\n{outcome.stdout}"
        if tables and line[:1] in _EDGES:
            assert line.rstrip()[-1:] in _EDGES, f"row cut at the edge: {line!r}"
    assert "…" not in outcome.stdout, outcome.stdout
    return lines


@pytest.mark.parametrize("width", [60, 80])
def test_store_tables_fit_and_keep_their_essential_columns(tmp_path: Path, width: int) -> None:
    store = _store(tmp_path)
    env = _terminal(width)
    runs = wfctl("runs", "--store", store, env=env)
    assert runs.code == 0, runs.stderr
    lines = _fits(runs, width)
    header = next(line for line in lines if "run" in line and "status" in line)
    assert "notes" in header
    for run_id, status in (("tampered-edit", "corrupt"), ("paused", "paused")):
        assert any(run_id in line and status in line for line in lines), runs.stdout
    assert "checksum" in runs.stdout and "request#0" in runs.stdout

    verified = wfctl("verify-lineage", "--store", store, env=env)
    assert verified.code == 1
    lines = _fits(verified, width)
    header = next(line for line in lines if "verdict" in line)
    assert "run" in header and "problems" in header
    assert any("tampered-edit" in line and "BROKEN" in line and "3" in line for line in lines)

    gc = wfctl("gc", "--dry-run", "--older-than", "1s", "--store", store, env=env)
    assert gc.code == 0, gc.stderr
    lines = _fits(gc, width)
    assert any("completed" in line and "pipeline" in line for line in lines), gc.stdout

    for command in (("log", "retried", "-v"), ("show", "retried.1")):
        shown = wfctl(*command, "--store", store, env=env)
        assert shown.code == 0, shown.stderr
        _fits(shown, width, tables=False)


@pytest.mark.parametrize("width", [60, 80])
def test_replay_report_and_requests_fit(tmp_path: Path, width: int) -> None:
    store = tmp_path / "store"
    env = _terminal(width)
    run_id = run_id_of(wfctl("run", SAMPLES / "file_pipeline.py", "--store", store, "--json"))
    replay = wfctl("replay", "-c", f"{run_id}.3", "--store", store, env=env)
    assert replay.code == 0, replay.stdout + replay.stderr
    lines = _fits(replay, width)
    # Step keys are what people type: whole, on one line, beside their status (which of them
    # checkpoint .3 holds depends on group commit: cached or same).
    assert any(
        "count_words@durable.txt" in line and ("cached" in line or "same" in line) for line in lines
    ), replay.stdout

    paused = wfctl("run", SAMPLES / "human_review.py", "--store", store, env=env)
    assert paused.code == 3, paused.stderr
    table = [line for line in paused.stdout.splitlines() if not line.startswith("  wfctl ")]
    _fits(Invocation(paused.code, "\n".join(table), paused.stderr), width)
    assert any("request#0" in line and "str" in line for line in table), paused.stdout
