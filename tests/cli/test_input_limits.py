"""Hostile or broken input data is one clear refusal (exit 2), never an internal error or a hang.

Covers ``--input``, ``--input-file`` (JSON and TOML), ``--response`` and ``--responses`` files:
nesting past the depth limit, integers past Python's 4300-digit limit, ``NaN``/``Infinity``,
floats that overflow, repeated keys, and a file with no end (``/dev/zero``). Each case runs the
installed ``wfctl`` and checks the one-line message and that nothing was stored.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.cli.conftest import WORKFLOWS, invoke, run_id_of, wfctl

# the documented limit (docs/decisions/0127-depth-limits-are-counted-never-left-to-the.md,
# wfctl._drive._inputs.MAX_DEPTH)
MAX_DEPTH = 200

GREET = WORKFLOWS / "greet.py"
REVIEW = WORKFLOWS / "review.py"
HUGE_INT = "1" * 5000
DEEP = "[" * 100_000 + "]" * 100_000
#: Deep enough for a RecursionError, short enough for one command-line argument (128 KiB).
DEEP_ARG = "[" * 20_000 + "]" * 20_000


def _nested(levels: int) -> str:
    return "[" * levels + "]" * levels


def _assert_refused(store: Path, *args: str | Path, says: str) -> None:
    out = wfctl("run", GREET, *args, "--store", store, "--json", timeout=60)
    assert out.code == 2, (out.stdout, out.stderr)
    assert out.stdout == ""
    assert says in out.error_line()
    assert "internal error" not in out.stderr
    assert not (store / "runs").exists() or not any((store / "runs").iterdir())


@pytest.mark.parametrize(
    ("content", "suffix", "says"),
    [
        (DEEP, ".json", f"nests more than {MAX_DEPTH} levels deep (the limit)"),
        (_nested(MAX_DEPTH + 1), ".json", f"nests more than {MAX_DEPTH} levels deep"),
        ("x = " + DEEP, ".toml", f"nests more than {MAX_DEPTH} levels deep"),
        (HUGE_INT, ".json", "an integer has more than 4300 digits (the limit)"),
        ("x = " + HUGE_INT, ".toml", "an integer has more than 4300 digits (the limit)"),
        ("NaN", ".json", "NaN is not JSON"),
        ("[1e999]", ".json", "the number 1e999 is too large for a float"),
        ("x = 1e999", ".toml", "the number 1e999 is too large for a float"),
        ('{"who": "a", "who": "b"}', ".json", "the key 'who' appears twice in one object"),
    ],
    ids=[
        "deep",
        "depth+1",
        "deep-toml",
        "int",
        "int-toml",
        "nan",
        "overflow",
        "overflow-toml",
        "repeated-key",
    ],
)
def test_hostile_input_files_are_refused(
    store: Path, tmp_path: Path, content: str, suffix: str, says: str
) -> None:
    path = tmp_path / f"input{suffix}"
    path.write_text(content, encoding="utf-8")
    _assert_refused(store, "--input-file", path, says=says)


def test_an_endless_input_file_is_refused_at_the_size_limit(store: Path) -> None:
    _assert_refused(store, "--input-file", "/dev/zero", says="is larger than the 16 MiB limit")


def test_an_input_file_over_the_size_limit_is_refused(store: Path, tmp_path: Path) -> None:
    path = tmp_path / "big.json"
    path.write_bytes(b'"a"' + b" " * (16 * 1024 * 1024))  # valid JSON, one byte too many
    _assert_refused(store, "--input-file", path, says="is larger than the 16 MiB limit")


@pytest.mark.parametrize(
    ("value", "says"),
    [
        ("NaN", "--input is not valid JSON: NaN is not JSON"),
        ("[Infinity]", "--input is not valid JSON: Infinity is not JSON"),
        ("-Infinity", "--input is not valid JSON: -Infinity is not JSON"),
        ("1e400", "--input: the number 1e400 is too large for a float"),
        (HUGE_INT, "--input: an integer has more than 4300 digits"),
        (_nested(MAX_DEPTH + 1), f"--input nests more than {MAX_DEPTH} levels deep"),
        (DEEP_ARG, f"--input nests more than {MAX_DEPTH} levels deep"),
    ],
    ids=["nan", "infinity", "-infinity", "overflow", "int", "depth+1", "deep"],
)
def test_hostile_input_values_are_refused(store: Path, value: str, says: str) -> None:
    _assert_refused(store, "--input", value, says=says)


def test_input_at_the_depth_limit_is_stored_and_read_back(store: Path) -> None:
    value = _nested(MAX_DEPTH)
    out = wfctl("run", WORKFLOWS / "echo.py", "--input", value, "--store", store, "--json")
    assert out.code == 0, out.stderr
    assert json.dumps(out.json()["outputs"][0], separators=(",", ":")) == value
    run_id = run_id_of(out)
    shown = invoke("show", f"{run_id}.0", "--store", store, "--json").json()["record"]
    assert json.dumps(shown["data"]["input"], separators=(",", ":")) == value
    assert invoke("verify-lineage", run_id, "--store", store).code == 0


def _paused_review(store: Path) -> tuple[str, list[str]]:
    out = wfctl("run", REVIEW, "--input", '"dogs"', "--store", store, "--json")
    assert out.code == 3, out.stderr
    run_id = run_id_of(out)
    return run_id, _kinds(store, run_id)


def _kinds(store: Path, run_id: str) -> list[str]:
    log = invoke("log", run_id, "--store", store, "--json").json()
    return [c["kind"] for c in log["checkpoints"]]


@pytest.mark.parametrize(
    ("name", "content", "says"),
    [
        ("deep.json", '{"1/request#0": ' + DEEP + "}", "nests more than"),
        ("deep.toml", '"1/request#0" = ' + DEEP, "nests more than"),
        ("int.json", '{"1/request#0": ' + HUGE_INT + "}", "more than 4300 digits"),
        ("int.toml", '"1/request#0" = ' + HUGE_INT, "more than 4300 digits"),
        ("nan.json", '{"1/request#0": NaN}', "NaN is not JSON"),
        ("twice.json", '{"1/request#0": 1, "1/request#0": 2}', "appears twice"),
    ],
    ids=["deep-json", "deep-toml", "int-json", "int-toml", "nan-json", "repeated-key"],
)
def test_hostile_answers_files_are_refused(
    store: Path, tmp_path: Path, name: str, content: str, says: str
) -> None:
    run_id, before = _paused_review(store)
    path = tmp_path / name
    path.write_text(content, encoding="utf-8")
    out = wfctl("resume", run_id, "--responses", path, "--store", store, "--json", timeout=60)
    assert out.code == 2, (out.stdout, out.stderr)
    assert out.stdout == ""
    line = out.error_line()
    assert line.startswith(f"wfctl: error: answers file {str(path)!r}") and says in line
    assert _kinds(store, run_id) == before  # nothing recorded


@pytest.mark.parametrize(
    ("value", "says"),
    [
        (DEEP_ARG, "--response 1/request#0 nests more than"),
        (HUGE_INT, "--response 1/request#0: an integer has more than 4300 digits"),
        ("1e999", "--response 1/request#0: the number 1e999 is too large for a float"),
    ],
    ids=["deep", "int", "overflow"],
)
def test_hostile_response_values_are_refused(store: Path, value: str, says: str) -> None:
    run_id, before = _paused_review(store)
    out = wfctl("resume", run_id, "--response", f"1/request#0={value}", "--store", store)
    assert out.code == 2, (out.stdout, out.stderr)
    assert says in out.error_line()
    assert _kinds(store, run_id) == before
