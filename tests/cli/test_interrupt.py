"""Ctrl-C and ``wfctl pause`` against a real ``wfctl run`` process.

The workflow's first step writes a ``started`` marker and waits for a ``gate`` file; the test
polls for the marker (with a deadline: the only way to synchronise with another process), then
interrupts, then opens the gate.
"""

from __future__ import annotations

import json
import shlex
import signal
import subprocess
import time
from pathlib import Path

from tests.cli.conftest import WORKFLOWS, base_env, invoke, wfctl, wfctl_executable

GATED = WORKFLOWS / "gated.py"


def _start(
    store: Path, gate_dir: Path, run_id: str, *extra: str, target: Path = GATED
) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [
            wfctl_executable(),
            "run",
            str(target),
            "--input",
            json.dumps(str(gate_dir)),
            "--run-id",
            run_id,
            "--store",
            str(store),
            "--json",
            *extra,
        ],
        env=base_env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def _wait_for(path: Path, process: subprocess.Popen[str], deadline: float = 60.0) -> None:
    _wait_for_any(path.parent, path.name, process, deadline)


def _wait_for_any(
    folder: Path, pattern: str, process: subprocess.Popen[str], deadline: float = 60.0
) -> Path:
    """Poll until a file matching ``pattern`` exists in ``folder``; return it."""
    end = time.monotonic() + deadline
    path = folder / pattern
    while not (found := sorted(folder.glob(pattern))):
        if process.poll() is not None:
            raise AssertionError(f"wfctl exited early: {process.communicate()}")
        if time.monotonic() > end:
            process.kill()
            raise AssertionError(f"{path} did not appear")
        time.sleep(0.01)
    return found[0]


def _status(store: Path, run_id: str) -> str:
    runs = invoke("runs", "--store", store, "--json").json()["runs"]
    [run] = [r for r in runs if r["run_id"] == run_id]
    status: str = run["status"]
    return status


def test_first_ctrl_c_pauses_at_the_next_step_boundary(store: Path, tmp_path: Path) -> None:
    gate_dir = tmp_path / "gate"
    gate_dir.mkdir()
    process = _start(store, gate_dir, "interrupted-once")
    _wait_for(gate_dir / "started", process)
    process.send_signal(signal.SIGINT)
    # The handler files a pause request; then the running step may finish (the gate opens),
    # and the next step boundary pauses the run.
    _wait_for(store / "runs" / "interrupted-once" / "pause", process)
    (gate_dir / "gate").write_text("", encoding="utf-8")
    stdout, stderr = process.communicate(timeout=60)
    assert process.returncode == 130, stderr
    doc = json.loads(stdout)
    assert doc["status"] == "interrupted"
    assert doc["resume_command"].startswith("wfctl resume interrupted-once")
    assert "pausing interrupted-once at the next step boundary" in stderr
    assert "Traceback" not in stderr
    assert _status(store, "interrupted-once") == "interrupted"
    log = invoke("log", "interrupted-once", "--store", store, "--json").json()
    assert [c["kind"] for c in log["checkpoints"]] == ["root", "step", "pause"]
    assert log["checkpoints"][1]["steps"][0]["key"] == "wait_for_gate#0"
    assert not (store / "runs" / "interrupted-once" / "pause").exists()

    resumed = wfctl("resume", "interrupted-once", "--store", store, "--json")
    assert resumed.code == 0, resumed.stderr
    assert resumed.json()["outputs"] == ["THROUGH THE GATE"]
    assert resumed.json()["step_counts"] == {"executed": 1, "cached": 1, "changed": 0}


def test_second_ctrl_c_aborts_and_the_run_stays_resumable(store: Path, tmp_path: Path) -> None:
    gate_dir = tmp_path / "gate"
    gate_dir.mkdir()
    process = _start(store, gate_dir, "interrupted-twice")
    _wait_for(gate_dir / "started", process)
    process.send_signal(signal.SIGINT)
    _wait_for(store / "runs" / "interrupted-twice" / "pause", process)
    process.send_signal(signal.SIGINT)
    stdout, stderr = process.communicate(timeout=60)
    assert process.returncode == 130, stderr
    assert json.loads(stdout)["status"] == "aborted"
    assert "aborting interrupted-twice" in stderr and "Traceback" not in stderr
    assert _status(store, "interrupted-twice") == "interrupted"
    assert not (store / "runs" / "interrupted-twice" / "pause").exists()

    (gate_dir / "gate").write_text("", encoding="utf-8")
    resumed = wfctl("resume", "interrupted-twice", "--store", store, "--json")
    assert resumed.code == 0, resumed.stderr
    assert resumed.json()["outputs"] == ["THROUGH THE GATE"]


def test_pause_from_another_terminal(store: Path, tmp_path: Path) -> None:
    gate_dir = tmp_path / "gate"
    gate_dir.mkdir()
    process = _start(store, gate_dir, "paused-remotely")
    _wait_for(gate_dir / "started", process)
    assert _status(store, "paused-remotely") == "running"
    asked = wfctl("pause", "paused-remotely", "--store", store, "--json")
    assert asked.code == 0, asked.stderr
    assert asked.json()["pause_requested"] is True
    assert asked.json()["run"]["status"] == "running"
    resume = f"wfctl resume paused-remotely --store {store}"
    assert asked.json()["resume_command"] == resume
    again = wfctl("pause", "paused-remotely", "--store", store)
    assert again.code == 0
    assert "asked run paused-remotely to pause at its next step boundary" in again.stdout
    assert again.stdout.strip().endswith(f"Resume it with: {resume}")  # names its store
    (gate_dir / "gate").write_text("", encoding="utf-8")
    stdout, stderr = process.communicate(timeout=60)
    # Paused with no request pending: interrupted (130), not waiting for answers (3).
    assert process.returncode == 130, stderr
    assert json.loads(stdout)["status"] == "interrupted"
    assert _status(store, "paused-remotely") == "interrupted"

    not_running = wfctl("pause", "paused-remotely", "--store", store)
    assert not_running.code == 2
    assert "is interrupted, not running" in not_running.error_line()
    missing = invoke("pause", "nobody", "--store", store)
    assert missing.code == 2 and "not found" in missing.error_line()
    assert wfctl(*shlex.split(resume)[1:]).code == 0  # the printed command, as printed


def test_ctrl_c_during_a_replay_pauses_the_replay_run(store: Path, tmp_path: Path) -> None:
    gate_dir = tmp_path / "gate"
    gate_dir.mkdir()
    (gate_dir / "gate").write_text("", encoding="utf-8")
    assert (
        wfctl(
            "run", GATED, "--input", json.dumps(str(gate_dir)), "--run-id", "src", "--store", store
        ).code
        == 0
    )
    (gate_dir / "gate").unlink()
    (gate_dir / "started").unlink()
    process = subprocess.Popen(
        [wfctl_executable(), "replay", "-c", "src.0", "--store", str(store)],
        env=base_env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    _wait_for(gate_dir / "started", process)
    process.send_signal(signal.SIGINT)
    _wait_for_any(store / "runs", "*/pause", process)
    (gate_dir / "gate").write_text("", encoding="utf-8")
    _, stderr = process.communicate(timeout=60)
    assert process.returncode == 130, stderr
    last = stderr.strip().splitlines()[-1]
    assert last.startswith("wfctl: interrupted: replay run ") and "wfctl resume" in last
    replay_run = last.split("replay run ")[1].split()[0]
    assert _status(store, replay_run) == "interrupted"
    assert wfctl("resume", replay_run, "--store", store).code == 0
