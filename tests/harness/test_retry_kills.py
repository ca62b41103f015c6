"""Crash harness, retry-limit case: SIGKILL real processes in a retrying step's attempts and
backoffs, resume in new ones, and count the attempts that really ran.

The step (``harness_workload.charge``) always fails, under ``Retry(attempts=3)``, and appends a
line to an fsynced ledger at the start of each attempt. Each process is forked by
``crash_child``'s server and SIGKILLs itself at its planned point: inside an attempt (after
its ledger line) or in a backoff (once the failed attempt is durable). Whatever the kills, the
ledger holds exactly three attempts, the run ends ``failed``, and every resume after a kill
is recorded as a ``recover``. On the file store and on PostgreSQL; one plan resumes through
the installed ``wfctl resume``, as a user would.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import assert_one_chain, wfctl_executable
from tests.harness import harness_workload as W
from tests.harness.test_crash_points import REPO, Server
from tests.postgres.conftest import pg_server, pg_url
from wfctl._records._payloads import ResumePayload
from wfctl.storage import open_storage

__all__ = ["pg_server", "pg_url"]  # the fixtures the PostgreSQL variants use

pytestmark = pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork and SIGKILL")

#: Where each process dies, one plan per scenario; then processes resume until the run ends.
PLANS = {
    "every-attempt": ["in-attempt", "in-attempt", "in-attempt"],
    "every-backoff": ["in-backoff", "in-backoff"],
    "mixed": ["in-attempt", "in-backoff", "in-attempt"],
    "backoff-then-attempt": ["in-backoff", "in-attempt"],
}


def run_plan(server: Server, store: str, folder: Path, plan: list[str], *, cli: bool) -> Any:
    """Run the payment workflow, killing the processes as ``plan`` says and resuming until
    it ends; return the last living process's outcome and how many ran."""
    for attempt in range(len(plan) + 3):
        kill = plan[attempt] if attempt < len(plan) else None
        cmd = {
            "workload": "payment",
            "store": store,
            "ledger": str(folder / "ledger.txt"),
            "run_id": "pay",
            "attempt": attempt,
            "fresh": attempt == 0,
            "kill": {"kind": kill} if kill else None,
        }
        if cli and kill is None:
            return cli_resume(store, folder), attempt + 1
        reply = server.attempt(cmd)
        error = folder / f"attempt-{attempt}.error"
        assert not error.exists(), error.read_text()
        if kill is not None:
            assert reply["signal"] == signal.SIGKILL, (attempt, reply)
            continue
        assert reply["code"] == 0, (attempt, reply)
        outcome = json.loads((folder / f"attempt-{attempt}.json").read_text())
        if outcome["status"] != "running":
            return outcome, attempt + 1
    raise AssertionError("the run never ended")


def cli_resume(store: str, folder: Path) -> dict[str, Any]:
    """``wfctl resume pay --store STORE --json``: the run fails (exit 1)."""
    done = subprocess.run(
        [wfctl_executable(), "resume", "pay", "--store", store, "--json"],
        capture_output=True,
        text=True,
        cwd=REPO,  # the root names its workflow as tests.harness.harness_workload:payment
        env={**os.environ, "PYTHONPATH": str(REPO), W.LEDGER_ENV: str(folder / "ledger.txt")},
        timeout=120,
    )
    assert done.returncode == 1, done.stderr
    assert len(done.stderr.strip().splitlines()) <= 1, done.stderr
    report = json.loads(done.stdout)
    return {"status": report["status"], "error": report["error"].partition(":")[0]}


def attempts_run(folder: Path) -> int:
    """How many attempts of the charge really started, from the ledger."""
    path = folder / "ledger.txt"
    return len(path.read_text().splitlines()) if path.exists() else 0


async def resume_reasons(store: str) -> list[str]:
    storage = open_storage(store)
    try:
        chain = await storage.list_checkpoints(run_id="pay")
    finally:
        await storage.aclose()
    assert_one_chain(chain)
    assert chain[-1].kind == "failed"
    return [ResumePayload.of(c).reason for c in chain if c.kind == "resume"]


def check_plan(server: Server, store: str, folder: Path, name: str, *, cli: bool = False) -> None:
    plan = PLANS[name]
    outcome, processes = run_plan(server, store, folder, plan, cli=cli)
    assert attempts_run(folder) == W.CHARGE_RETRY.attempts, name
    # Each kill ended one attempt. Killed in its last one, the run fails on resume without
    # running it again; else the resume runs the last attempt, which fails as the others did.
    spent = len(plan) == W.CHARGE_RETRY.attempts
    expected = "AttemptsExhaustedError" if spent else "ConnectionError"
    assert outcome == {"status": "failed", "error": expected}, (name, outcome)
    assert processes == len(plan) + 1
    assert asyncio.run(resume_reasons(store)) == ["recover"] * len(plan)


@pytest.fixture(scope="module")
def server() -> Any:
    running = Server()
    yield running
    running.close()


@pytest.mark.parametrize("name", list(PLANS))
def test_kills_never_add_attempts_on_the_file_store(
    server: Server, tmp_path: Path, name: str
) -> None:
    (tmp_path / "store").mkdir(mode=0o700)
    check_plan(server, str(tmp_path / "store"), tmp_path, name, cli=name == "every-backoff")


#: Two plans cover both kill points and both endings on PostgreSQL (each process there pays
#: for its connections); ``-m slow`` runs the others too.
PG_PLANS = [
    *(pytest.param(name) for name in ("mixed", "backoff-then-attempt")),
    *(pytest.param(name, marks=pytest.mark.slow) for name in ("every-attempt", "every-backoff")),
]


@pytest.mark.parametrize("name", PG_PLANS)
def test_kills_never_add_attempts_on_postgres(
    server: Server, tmp_path: Path, pg_url: str, name: str
) -> None:
    check_plan(server, pg_url, tmp_path, name)
