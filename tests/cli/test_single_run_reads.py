"""Single-run commands read their run only, never the whole store.

``log``, ``export``, ``pause`` and ``show`` name one run: their cost must not grow with the
number of runs in the store. These tests make listing the store's runs fail (the one place
that reads the ``runs`` directory, ``StoreLayout.run_ids``, patched: an internal, the seam that
says "the store was scanned"), then run each command in-process and check its result.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.cli.conftest import WORKFLOWS, invoke, run_id_of
from wfctl._inspect._log import run_log
from wfctl._storage._layout import StoreLayout

GREET = WORKFLOWS / "greet.py"


@pytest.fixture
def three_runs(store: Path, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Three completed runs; afterwards any scan of the store's runs fails the test."""
    runs = [run_id_of(invoke("run", GREET, "--store", store, "--json")) for _ in range(3)]

    def scanned(self: StoreLayout) -> list[tuple[str, bool]]:
        raise AssertionError("a single-run command listed every run of the store")

    monkeypatch.setattr(StoreLayout, "run_entries", scanned)  # what run_ids reads too
    return runs


def test_log_export_and_show_read_only_their_run(store: Path, three_runs: list[str]) -> None:
    run_id = three_runs[1]
    log = invoke("log", run_id, "--store", store, "--json")
    assert log.code == 0, log.stderr
    assert log.json()["run"]["run_id"] == run_id
    assert log.json()["run"]["status"] == "completed"
    exported = invoke("export", run_id, "--store", store, "--json")
    assert exported.code == 0, exported.stderr
    assert exported.json()["run"]["head_checkpoint_id"] == f"{run_id}.2"
    assert [c["id"] for c in json.loads(exported.stdout)["checkpoints"]] == [
        f"{run_id}.{seq}" for seq in range(3)
    ]
    shown = invoke("show", f"{run_id}.1", "--store", store, "--json")
    assert shown.code == 0 and shown.json()["record"]["id"] == f"{run_id}.1"


def test_pause_reads_only_its_run(
    store: Path, three_runs: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    done = invoke("pause", three_runs[0], "--store", store)
    assert done.code == 2
    assert "is completed, not running" in done.error_line()
    assert not (store / "runs" / three_runs[0] / "pause").exists()
    # A name that is no run's id is looked for as the start of one (and for the ids close to
    # it) among the runs' names: only then are the store's runs listed (names, no journal).
    monkeypatch.undo()
    missing = invoke("pause", "no-such-run", "--store", store)
    assert missing.code == 2 and "no-such-run" in missing.error_line()


REVIEW = WORKFLOWS / "review.py"


def test_log_streams_its_entries_each_verified_before_it_is_shown(store: Path) -> None:
    run_id = run_id_of(invoke("run", REVIEW, "--store", store, "--json"))
    invoke("resume", run_id, "-r", "0/request#0=yes", "-r", "1/request#0=3", "--store", store)
    log = run_log(store, run_id)
    assert isinstance(log.entries, Iterator)  # read as rendered, never held whole
    entries = [entry.to_json() for entry in log.entries]
    assert [e["kind"] for e in entries] == ["root", "step", "pause", "resume", "completed"]
    # the streamed --json document is the one to_json() describes, byte for byte
    streamed = "".join(run_log(store, run_id).json_text())
    assert (
        streamed
        == json.dumps(run_log(store, run_id).to_json(), indent=2, ensure_ascii=False) + "\n"
    )
    assert invoke("log", run_id, "--store", store, "--json").stdout == streamed
    # a record edited in the middle: named once the entries before it are shown, never after
    journal = store / "runs" / run_id / "journal.jsonl"
    lines = journal.read_bytes().split(b"\n")
    lines[2] = lines[2].replace(b'"pause"', b'"paus3"')
    journal.write_bytes(b"\n".join(lines))
    for args in ((), ("--json",)):
        done = invoke("log", run_id, "--store", store, *args)
        assert done.code == 2 and f"{run_id}.1" in done.stdout and f"{run_id}.2" not in done.stdout
        assert "journal.jsonl:3" in done.error_line()
