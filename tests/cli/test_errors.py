"""Every error is one line on stderr with its exit code, and no traceback unless ``--debug``."""

from __future__ import annotations

import json
import subprocess
import sys
import zlib
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.cli.conftest import WORKFLOWS, invoke, run_id_of, wfctl

GREET = WORKFLOWS / "greet.py"
REVIEW = WORKFLOWS / "review.py"


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["frobnicate"], "No such command 'frobnicate'"),
        (["run"], "'wfctl run' needs its argument TARGET"),
        (["runs", "--status", "sideways"], "--status 'sideways' is not one of completed, failed"),
        (["runs", "--status", "pasued"], "; did you mean 'paused'?"),
        (["runs", "--status", "Paused"], "; did you mean 'paused'?"),
        (["runs", "--limit", "-1"], "--limit must be 0 or more, not -1"),
        (["log", "r", "--limit", "x"], "--limit must be a whole number, not 'x'"),
        (["log", "--bogus", "x"], "'wfctl log' has no option --bogus"),
        (["runs", "--stauts", "x"], "'wfctl runs' has no option --stauts; did you mean --status?"),
        (["replay"], "'wfctl replay' needs the option --checkpoint"),
        (["gc", "--keep", "-1"], "--keep must be 0 or more, not -1"),
        (["export", "r", "--format", "yaml"], "--format 'yaml' is not one of json, toml"),
        (["show", "r.0", "--json", "--toml"], "give --json or --toml, not both"),
    ],
)
def test_usage_errors_exit_2_with_one_line(args: list[str], message: str) -> None:
    done = invoke(*args)
    assert done.code == 2
    line = done.error_line()
    assert message in line
    assert "--help" in line
    # wfctl's own sentences: never the wording of the libraries under the command line
    for borrowed in ("Value error", "Input should", "No such option", "Missing argument"):
        assert borrowed not in line, line


def test_usage_error_through_the_installed_command() -> None:
    done = wfctl("run")
    assert done.code == 2
    assert done.error_line() == (
        "wfctl: error: 'wfctl run' needs its argument TARGET (see 'wfctl run --help')"
    )


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["log", "nope"], "run 'nope' not found"),
        (["log", "../etc"], "invalid run id '../etc'"),
        (["show", "nope.3"], "checkpoint 'nope.3' not found"),
        (["show", "no-dot"], "expected <run_id>.<seq>"),
        (["export", "nope"], "run 'nope' not found"),
        (["resume", "nope"], "run 'nope' not found"),
        (["replay", "--checkpoint", "nope.0"], "checkpoint 'nope.0' not found"),
        (["pause", "nope"], "run 'nope' not found"),
        (["verify-lineage", "nope"], "run 'nope' not found"),
    ],
)
def test_unknown_ids_exit_2(args: list[str], message: str, store: Path) -> None:
    invoke("run", GREET, "--store", store)  # a store that exists, without those ids
    done = invoke(*args, "--store", store)
    assert done.code == 2, done.stdout
    assert message in done.error_line()


def test_unknown_ids_through_the_installed_command(store: Path) -> None:
    store.mkdir()  # a store that exists, without those ids
    for args in (["log", "nope"], ["show", "nope.1"], ["replay", "-c", "nope.1"]):
        done = wfctl(*args, "--store", store)
        assert done.code == 2
        assert "not found" in done.error_line()


def test_a_checkpoint_id_with_a_leading_zero_is_refused(store: Path) -> None:
    # It named checkpoint g.1, and a replay from it recorded the origin g.01, which no
    # checkpoint has.
    assert wfctl("run", GREET, "--run-id", "g", "--store", store).code == 0
    for command, typed, canonical in (
        (["replay", "--json", "-c"], "g.01", "g.1"),
        (["show"], "g.01", "g.1"),
        (["show", "--json"], "g.00", "g.0"),
    ):
        done = wfctl(*command, typed, "--store", store)
        assert done.code == 2 and done.stdout == "", command
        assert done.error_line() == (
            f"wfctl: error: invalid checkpoint id '{typed}': write the seq without leading "
            f"zeros ({canonical})"
        )
    runs = wfctl("runs", "--store", store, "--json").json()["runs"]
    assert [r["run_id"] for r in runs] == ["g"]  # the replay started no run
    assert wfctl("show", "g.1", "--store", store).code == 0


def _flip_a_byte(journal: Path, line: int) -> None:
    lines = journal.read_bytes().split(b"\n")
    target = bytearray(lines[line])
    position = target.index(b'"ts":"') + 8  # inside the timestamp: still valid JSON
    target[position] = target[position] ^ 0x01
    lines[line] = bytes(target)
    journal.write_bytes(b"\n".join(lines))


@pytest.fixture
def corrupt_run(store: Path) -> str:
    """A completed run whose second record has one flipped byte."""
    run_id = run_id_of(invoke("run", GREET, "--store", store, "--json"))
    _flip_a_byte(store / "runs" / run_id / "journal.jsonl", 1)
    return run_id


def test_corrupt_journal_is_named_and_exits_2(store: Path, corrupt_run: str) -> None:
    for args in (
        ["log", corrupt_run],
        ["show", f"{corrupt_run}.0"],
        ["export", corrupt_run],
        ["resume", corrupt_run],
        ["replay", "--checkpoint", f"{corrupt_run}.0"],
    ):
        done = wfctl(*args, "--store", store)
        assert done.code == 2, (args, done.stderr)
        line = done.error_line()
        assert "corrupt checkpoint data in" in line and "journal.jsonl:2" in line, line
        assert "checksum" in line


def test_corrupt_journal_is_a_finding_for_verify_lineage(store: Path, corrupt_run: str) -> None:
    healthy = run_id_of(invoke("run", GREET, "--store", store, "--json"))
    done = wfctl("verify-lineage", "--store", store, "--json")
    assert done.code == 1
    verdicts = {v["run_id"]: v for v in done.json()["runs"]}
    assert verdicts[healthy]["ok"] is True
    assert verdicts[corrupt_run]["ok"] is False
    assert any("checksum" in p for p in verdicts[corrupt_run]["problems"])
    people = wfctl("verify-lineage", corrupt_run, "--store", store)
    assert people.code == 1
    assert "BROKEN" in people.stdout and "checksum" in people.stdout
    assert "1 run(s) checked, 1 broken" in people.stdout


def test_a_record_edited_with_its_checksum_is_broken_for_verify_lineage_as_for_log(
    store: Path,
) -> None:
    run_id = run_id_of(invoke("run", GREET, "--store", store, "--json"))
    journal = store / "runs" / run_id / "journal.jsonl"
    lines = journal.read_bytes().split(b"\n")
    record = json.loads(lines[1])
    assert record["kind"] == "step"
    record["data"]["steps"] = "x"
    del record["crc"]
    body = json.dumps(record, separators=(",", ":")).encode()
    lines[1] = b'%s,"crc":"%08x"}' % (body[:-1], zlib.crc32(body))  # a checksum that holds
    journal.write_bytes(b"\n".join(lines))
    where = f"{run_id}.1"
    log = wfctl("log", run_id, "--store", store)
    assert log.code == 2 and where in log.error_line() and "without a steps list" in log.stderr
    for args in (["export", run_id], ["show", where]):  # they exited 0 with the record
        done = wfctl(*args, "--store", store)
        assert done.code == 2, (args, done.stdout)
        assert "without a steps list" in done.error_line()
    done = wfctl("verify-lineage", "--store", store, "--json")
    assert done.code == 1  # was 0: the run was called ok while log refused it
    [verdict] = done.json()["runs"]
    assert verdict["ok"] is False
    assert verdict["problems"] == [
        f"{where} ({journal}:2): its step data does not read: step checkpoint without a steps list"
    ]


@pytest.fixture
def locked_run(store: Path) -> Iterator[str]:
    """A paused run whose lock another process holds until the test ends."""
    run_id = run_id_of(invoke("run", REVIEW, "--store", store, "--json"))
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import sys\n"
            "from wfctl import FileCheckpointStorage\n"
            "lock = FileCheckpointStorage(sys.argv[1]).lock_run(sys.argv[2])\n"
            "print('locked', flush=True)\n"
            "sys.stdin.read()\n",
            str(store),
            run_id,
        ],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert holder.stdout is not None and holder.stdin is not None
    assert holder.stdout.readline().strip() == "locked"
    try:
        yield run_id
    finally:
        holder.stdin.close()
        holder.wait(timeout=30)
        holder.stdout.close()


def test_locked_run_exits_2_naming_the_holder(store: Path, locked_run: str) -> None:
    done = wfctl("resume", locked_run, "-r", "0/request#0=y", "--store", store)
    assert done.code == 2
    line = done.error_line()
    assert f"run '{locked_run}' is locked by" in line and "pid" in line


def test_debug_shows_the_traceback(store: Path) -> None:
    store.mkdir()
    done = wfctl("log", "nope", "--store", store, "--debug")
    assert done.code == 2
    assert "Traceback" in done.stderr
    assert done.stderr.strip().splitlines()[-1] == "wfctl: error: run 'nope' not found"


@pytest.mark.parametrize(
    ("target", "message"),
    [
        ("missing.py", "no such file 'missing.py'"),
        ("two.py", "2 workflows in two.py (alpha, beta); name one"),
        ("two.py:gamma", "two.py has no attribute 'gamma' (workflows in it: alpha, beta)"),
        ("two.py:one", "'one' is a @step, not a @workflow"),
        ("two.py:not_a_workflow", "plain async function; decorate it with @wfctl.workflow"),
        ("two.py:NUMBER", "'NUMBER' is a int, not a workflow"),
        ("no_such_module_xyz:wf", "no module named 'no_such_module_xyz'"),
        ("syntax.py", "syntax error in"),
        ("raises.py", "raised ZeroDivisionError"),
        ("empty.py", "no workflow in empty.py"),
    ],
)
def test_load_errors_exit_2(target: str, message: str, tmp_path: Path, store: Path) -> None:
    (tmp_path / "two.py").write_text((WORKFLOWS / "two.py").read_text(), encoding="utf-8")
    (tmp_path / "syntax.py").write_text("def broken(:\n", encoding="utf-8")
    (tmp_path / "raises.py").write_text("x = 1 / 0\n", encoding="utf-8")
    (tmp_path / "empty.py").write_text("VALUE = 1\n", encoding="utf-8")
    done = wfctl("run", target, "--store", store, cwd=tmp_path)
    assert done.code == 2
    line = done.error_line()
    assert line.startswith(f"wfctl: error: cannot load '{target}': ")
    assert message in line
    assert not (store / "runs").exists()  # nothing was written
