"""``wfctl du`` through the installed executable, on a wfctl file store and on a directory the
real agent-framework wrote: the bytes it reports are the bytes the store holds (the files
summed here), largest first, ``--json`` against its schema, exit codes and the one stderr line.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from tests.cli.conftest import WORKFLOWS, wfctl
from tests.cli.test_json_documents import _check
from tests.sources.test_agent_framework_source import run_af
from wfctl.sources.testing import directory_digest

#: Inputs of three sizes: three runs whose sizes order them.
INPUTS = {"small": 10, "middle": 20_000, "large": 200_000}


def _json(*args: str | Path, code: int = 0) -> Any:
    done = wfctl(*args, "--json")
    assert done.code == code, done.stderr
    assert done.stderr == ""
    document = done.json()
    _check(document, "du")
    return document


def _files_bytes(directory: Path) -> int:
    """Every regular file under ``directory``, summed (what the store takes on disk)."""
    total = 0
    for root, _, files in os.walk(directory):
        for name in files:
            path = Path(root, name)
            if path.is_file() and not path.is_symlink():
                total += path.stat().st_size
    return total


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, str]]:
    """A file store with three runs of the echo workflow, of three sizes; their run ids."""
    directory = tmp_path_factory.mktemp("du") / "store"
    ids = {}
    for name, size in INPUTS.items():
        given = directory.parent / f"{name}.json"
        given.write_text(json.dumps("x" * size))
        done = wfctl(
            "run", WORKFLOWS / "echo.py", "--input-file", given, "--store", directory, "--json"
        )
        assert done.code == 0, done.stderr
        ids[name] = done.json()["run_id"]
    return directory, ids


def _run_dir(store: Path, run_id: str) -> Path:
    return store / "runs" / run_id


def test_du_counts_what_each_run_holds_largest_first(store: tuple[Path, dict[str, str]]) -> None:
    directory, ids = store
    before = directory_digest(directory)
    document = _json("du", "--store", directory)
    assert directory_digest(directory) == before  # read, never written (no lock, no cache)
    assert document["source"] == "wfctl-file"
    assert [run["run_id"] for run in document["runs"]] == [
        ids["large"],
        ids["middle"],
        ids["small"],
    ]
    for run in document["runs"]:
        run_dir = _run_dir(directory, run["run_id"])
        assert run["size_bytes"] == _files_bytes(run_dir)
        journal = (run_dir / "journal.jsonl").read_bytes()
        assert run["record_count"] == journal.count(b"\n")
        kinds = {k["kind"]: k for k in run["kinds"]}
        assert sum(k["size_bytes"] for k in kinds.values()) + run["record_count"] == len(journal)
        assert set(kinds) == {"root", "completed"}
        sizes = [k["size_bytes"] for k in run["kinds"]]
        assert sizes == sorted(sizes, reverse=True)
        assert (run["workflow"], run["status"], run["problem"]) == ("echo", "completed", None)
        assert run["channels"] == []
    assert document["size_bytes"] == sum(run["size_bytes"] for run in document["runs"])
    assert document["record_count"] == 6 and document["problem_count"] == 0
    assert document["store_size_bytes"] == _files_bytes(directory)
    assert (document["run_count"], document["matching_run_count"]) == (3, 3)
    assert document["total_run_count"] == 3
    assert {k["kind"]: k["record_count"] for k in document["kinds"]} == {
        "root": 3,
        "completed": 3,
    }


def test_sort_reverse_limit_and_filters(store: tuple[Path, dict[str, str]]) -> None:
    directory, ids = store
    every = _json("du", "--store", directory)
    smallest = _json("du", "--store", directory, "--reverse", "--limit", "1")
    assert [run["run_id"] for run in smallest["runs"]] == [ids["small"]]
    assert smallest["size_bytes"] == every["size_bytes"]  # the totals count every match
    assert (smallest["run_count"], smallest["matching_run_count"]) == (1, 3)
    by_name = _json("du", "--store", directory, "--sort", "name")
    assert [run["run_id"] for run in by_name["runs"]] == sorted(ids.values())
    chosen = _json("du", ids["small"], ids["middle"], "--store", directory)
    assert [run["run_id"] for run in chosen["runs"]] == [ids["middle"], ids["small"]]
    assert chosen["total_run_count"] == 3
    none = _json("du", "--store", directory, "--workflow", "nope*")
    assert (none["runs"], none["size_bytes"], none["matching_run_count"]) == ([], 0, 0)
    echo = _json("du", "--store", directory, "--workflow", "ech*", "--status", "completed")
    assert echo["matching_run_count"] == 3
    paused = _json("du", "--store", directory, "--status", "paused")
    assert paused["runs"] == []
    # the time filters of `wfctl runs`: the runs were made moments ago
    recent = _json("du", "--store", directory, "--since", "1h")
    assert recent["matching_run_count"] == 3
    older = _json("du", "--store", directory, "--until", "1h")
    assert (older["runs"], older["matching_run_count"]) == ([], 0)


def test_the_table_for_people(store: tuple[Path, dict[str, str]]) -> None:
    directory, ids = store
    done = wfctl("du", "--store", directory)
    assert done.code == 0 and done.stderr == ""
    text = done.stdout
    assert text.index(ids["large"]) < text.index(ids["middle"]) < text.index(ids["small"])
    assert "kB" in text and "3 matching run(s)" in text and "on disk" in text
    assert "completed" in text and "root" in text  # the totals by kind
    channels = wfctl("du", "--store", directory, "--by", "channel")
    assert "no channels: the wfctl-file source names none" in channels.stdout


def test_bad_input_is_one_line(store: tuple[Path, dict[str, str]], tmp_path: Path) -> None:
    directory, _ = store
    unknown = wfctl("du", "20991231-000000-deadbeef", "--store", directory, "--json")
    assert unknown.code == 2 and unknown.stdout == ""
    assert unknown.error_line() == "wfctl: error: run '20991231-000000-deadbeef' not found"
    malformed = wfctl("du", "../etc", "--store", directory)
    assert malformed.code == 2 and malformed.stdout == ""
    malformed.error_line()
    missing = wfctl("du", "--store", tmp_path / "missing")
    assert missing.code == 2 and missing.stdout == ""
    assert "does not exist" in missing.error_line()
    empty = wfctl("du", "--json", cwd=tmp_path)  # the default store, not made: no runs
    assert empty.code == 0 and empty.json()["runs"] == []
    assert not (tmp_path / ".wfctl").exists()


def test_a_run_that_cannot_be_counted_whole_is_named_and_exits_1(tmp_path: Path) -> None:
    directory = tmp_path / "store"
    done = wfctl("run", WORKFLOWS / "typed.py", "--store", directory)
    assert done.code == 0, done.stderr
    (run_dir,) = (directory / "runs").iterdir()
    journal = run_dir / "journal.jsonl"
    lines = journal.read_bytes().split(b"\n")
    lines[1] = lines[1][:-20] + b"x" * 20  # a record edited: its checksum no longer holds
    journal.write_bytes(b"\n".join(lines))
    document = _json("du", "--store", directory, code=1)
    (run,) = document["runs"]
    assert run["problem"] and document["problem_count"] == 1
    assert run["record_count"] < 4  # not the records from the one that fails on
    assert run["size_bytes"] == _files_bytes(run_dir)  # the bytes are the files', whole
    text = wfctl("du", "--store", directory)
    assert text.code == 1 and "could not be counted whole" in text.stdout


def test_an_agent_framework_directory(tmp_path: Path) -> None:
    directory = tmp_path / "af"
    directory.mkdir()
    run_af(directory, ("fan", 3), ("review", 2), ("fan", 1))
    by_workflow: dict[str, list[int]] = {}
    for file in directory.glob("*.json"):
        name = json.loads(file.read_text())["workflow_name"]
        by_workflow.setdefault(name, []).append(file.stat().st_size)
    before = directory_digest(directory)
    for store in (str(directory), f"agent-framework://{directory}"):
        document = _json("du", "--store", store)
        assert document["source"] == "agent-framework"
        runs: dict[str, list[int]] = {}  # by workflow: fan ran twice, two runs
        for run in document["runs"]:
            counted = runs.setdefault(run["workflow"], [0, 0, 0])
            counted[0] += run["size_bytes"]
            counted[1] += run["record_count"]
            counted[2] += 1
        assert runs == {
            name: [sum(sizes), len(sizes), 2 if name == "fan" else 1]
            for name, sizes in by_workflow.items()
        }
        ordered = [run["size_bytes"] for run in document["runs"]]
        assert ordered == sorted(ordered, reverse=True)
        assert document["store_size_bytes"] == _files_bytes(directory)
    paused = _json("du", "--store", directory, "--status", "paused")
    assert [run["workflow"] for run in paused["runs"]] == ["review"]
    kinds = {kind["kind"]: kind for kind in paused["runs"][0]["kinds"]}
    assert set(kinds) == {"checkpoint", "state", "requests", "step_cache"}
    assert kinds["checkpoint"]["record_count"] == paused["runs"][0]["record_count"]
    unknown = wfctl("du", "nope", "--store", directory)
    assert unknown.code == 2 and unknown.error_line() == "wfctl: error: run 'nope' not found"
    assert directory_digest(directory) == before
