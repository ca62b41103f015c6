"""Deleting more than one run asks first on a terminal, and needs --yes without one."""

from __future__ import annotations

import os
import pty
import subprocess
from pathlib import Path

import pytest

from tests.cli.conftest import WORKFLOWS, base_env, run_id_of, wfctl
from tests.conftest import wfctl_executable

GREET = WORKFLOWS / "greet.py"


def _runs(store: Path, count: int) -> list[str]:
    return [run_id_of(wfctl("run", GREET, "--store", store, "--json")) for _ in range(count)]


def _listed(store: Path) -> list[str]:
    return sorted(r["run_id"] for r in wfctl("runs", "--store", store, "--json").json()["runs"])


@pytest.mark.parametrize("command", ["gc", "rm"])
def test_without_a_terminal_more_than_one_run_needs_yes(command: str, store: Path) -> None:
    ids = _runs(store, 2)
    args = ["gc", "--older-than", "0s"] if command == "gc" else ["rm", *ids]
    refused = wfctl(*args, "--store", store, "--json")
    assert refused.code == 2 and refused.stdout == "", refused
    line = refused.error_line()
    assert "would" in line and "2 runs" in line and "give --yes" in line, line
    assert _listed(store) == sorted(ids)  # nothing deleted

    done = wfctl(*args, "--yes", "--store", store, "--json")
    assert done.code == 0, done.stderr
    assert _listed(store) == []


def test_one_run_and_a_dry_run_need_no_question(store: Path) -> None:
    _runs(store, 1)
    assert wfctl("gc", "--older-than", "0s", "--dry-run", "--store", store).code == 0
    assert wfctl("gc", "--older-than", "0s", "--store", store).code == 0
    assert _listed(store) == []
    (again,) = _runs(store, 1)
    assert wfctl("rm", again, "--store", store).code == 0
    assert _listed(store) == []


def _on_a_terminal(args: list[str], answer: bytes) -> tuple[int, str]:
    """Run ``wfctl args`` with stdin and stderr on a terminal; answer its question."""
    leader, follower = pty.openpty()
    process = subprocess.Popen(
        [wfctl_executable(), *args],
        env=base_env(),
        stdin=follower,
        stderr=follower,
        stdout=subprocess.DEVNULL,
    )
    os.close(follower)
    said = b""
    try:
        while b"delete them?" not in said:
            chunk = os.read(leader, 4096)
            if not chunk:
                break
            said += chunk
        os.write(leader, answer)
        code = process.wait(timeout=120)
        while True:
            try:
                chunk = os.read(leader, 4096)
            except OSError:
                break
            if not chunk:
                break
            said += chunk
    finally:
        os.close(leader)
        if process.poll() is None:
            process.kill()
    return code, said.decode(errors="replace")


@pytest.mark.parametrize("command", ["gc", "rm"])
def test_on_a_terminal_the_runs_are_listed_and_asked_about(command: str, store: Path) -> None:
    ids = _runs(store, 2)
    args = ["gc", "--older-than", "0s"] if command == "gc" else ["rm", *ids]
    code, said = _on_a_terminal([*args, "--store", str(store)], b"n\n")
    assert code == 0, said
    assert all(run_id in said for run_id in ids), said  # what would go, before the question
    assert "nothing was" in said and _listed(store) == sorted(ids)

    code, said = _on_a_terminal([*args, "--store", str(store)], b"y\n")
    assert code == 0, said
    assert _listed(store) == []
