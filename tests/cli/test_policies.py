"""Retries, backoff and durable sleep through the installed ``wfctl``: ``runs`` shows a run
sleeping or backing off, a pause or Ctrl-C does not wait for either, ``log`` shows attempts."""

from __future__ import annotations

import json
import re
import signal
import subprocess
import time
from datetime import datetime
from pathlib import Path
from typing import Any

from tests.cli.conftest import SAMPLES, WORKFLOWS, base_env, invoke, wfctl, wfctl_executable
from tests.cli.test_time_format import TOKYO, local_form


def _start(store: Path, run_id: str, mode: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [
            wfctl_executable(), "run", str(WORKFLOWS / "waits.py"), "--input", json.dumps(mode),
            "--run-id", run_id, "--store", str(store), "--json",
        ],
        env=base_env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )  # fmt: skip


def _wait_until_waiting(store: Path, run_id: str, process: subprocess.Popen[str]) -> Any:
    """Poll ``wfctl runs`` until the run says what it waits for (cross-process, bounded)."""
    end = time.monotonic() + 60
    while True:
        assert process.poll() is None, process.communicate()
        runs = invoke("runs", "--store", store, "--json").json()["runs"] if store.exists() else []
        found = [r for r in runs if r["run_id"] == run_id and r["waiting"]]
        if found:
            return found[0]
        assert time.monotonic() < end, "the run never reported waiting"
        time.sleep(0.02)


def test_a_sleeping_run_is_listed_as_sleeping_and_pauses_at_once(store: Path) -> None:
    process = _start(store, "sleeper", "sleep")
    run = _wait_until_waiting(store, "sleeper", process)
    assert run["status"] == "running" and run["waiting"].startswith("sleeping until ")
    shown = wfctl("runs", "--store", store)
    assert "sleeping until" in shown.stdout
    assert wfctl("pause", "sleeper", "--store", store).code == 0
    stdout, stderr = process.communicate(timeout=60)  # not an hour: the sleep is not "running"
    assert process.returncode == 130, stderr
    assert json.loads(stdout)["status"] == "interrupted"
    log = invoke("log", "sleeper", "--store", store, "--json").json()
    assert [c["kind"] for c in log["checkpoints"]] == ["root", "step", "pause"]
    assert log["checkpoints"][1]["steps"][0]["key"] == "sleep#0"


def test_ctrl_c_during_backoff_pauses_at_once_and_log_shows_the_attempt(store: Path) -> None:
    process = _start(store, "backing-off", "backoff")
    run = _wait_until_waiting(store, "backing-off", process)
    assert run["waiting"].startswith("backing off unreachable#0: attempt 2 at ")
    # People read the note's time and the lock holder's as the tables show times: local.
    stamp = run["waiting"].rpartition(" at ")[2]
    tokyo = {"TZ": "Asia/Tokyo", "COLUMNS": "200"}
    listed = wfctl("runs", "--store", store, env=tokyo)
    note = f"backing off unreachable#0: attempt 2 at {local_form(stamp, TOKYO)}"
    assert note in listed.stdout and "+00:00" not in listed.stdout, listed.stdout
    # (cancel asks a running run's driver to stop; resume is refused by the lock)
    locked = wfctl("resume", "backing-off", "--store", store, env=tokyo)
    assert locked.code == 2 and " is locked by pid " in locked.error_line()
    assert re.search(r" since [A-Z][a-z]{2} \d\d \d\d:\d\d:\d\d", locked.error_line())
    assert "+00:00" not in locked.stderr
    process.send_signal(signal.SIGINT)
    stdout, stderr = process.communicate(timeout=60)
    assert process.returncode == 130, stderr
    assert json.loads(stdout)["status"] == "interrupted"
    log = invoke("log", "backing-off", "--store", store, "--json").json()
    [attempt] = [a for c in log["checkpoints"] for a in c["attempts"]]
    assert attempt["key"] == "unreachable#0" and attempt["attempt"] == 1
    assert attempt["error"] == "ConnectionError: service down"
    failed_at, retry_at = (datetime.fromisoformat(attempt[k]) for k in ("failed_at", "retry_at"))
    assert attempt["retry_at"].endswith("Z") and (retry_at - failed_at).total_seconds() == 3600
    shown = wfctl("log", "backing-off", "--store", store)
    assert "unreachable#0: attempt 1 failed: ConnectionError: service down" in shown.stdout


def test_flaky_service_sample_recovers_and_reports_its_retries(store: Path) -> None:
    done = wfctl("run", SAMPLES / "flaky_service.py", "--store", store, "--json")
    assert done.code == 0, done.stderr
    doc = done.json()
    assert doc["outputs"] == [{"symbol": "WFC", "price": 42, "attempts": 3}]
    retries = [(r["key"], r["next_attempt"], r["max_attempts"]) for r in doc["retries"]]
    assert retries == [("fetch_quote#0", 2, 5), ("fetch_quote#0", 3, 5)]
    log = invoke("log", doc["run_id"], "--store", store, "--json").json()
    assert [a["attempt"] for c in log["checkpoints"] for a in c["attempts"]] == [1, 2]
    assert wfctl("verify-lineage", "--store", store).code == 0


def test_a_replay_serves_or_reruns_a_sleep_without_calling_it_a_difference(store: Path) -> None:
    target = WORKFLOWS / "waits.py"
    done = wfctl("run", target, "--input", '"nap"', "--run-id", "nap", "--store", store, "--json")
    assert done.code == 0, done.stderr
    assert done.json()["step_counts"] == {"executed": 2, "cached": 0, "changed": 0}
    for checkpoint, status in (("nap.0", "same"), ("nap.1", "cached")):
        replayed = wfctl("replay", "-c", checkpoint, "--store", store, "--json")
        assert replayed.code == 0, replayed.stdout + replayed.stderr
        rows = {row["key"]: row["status"] for row in replayed.json()["steps"]}
        assert rows["sleep#0"] == status, rows
