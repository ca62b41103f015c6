"""Stopping a real ``wfctl run`` process: the drain timeout, SIGTERM and SIGHUP.

- A pause (``wfctl pause``, Ctrl-C) while one step runs must cancel that step once the drain
  timeout passes, like it does for many parallel steps. The step here never finishes, so a
  broken timeout makes ``communicate`` time out instead of passing slowly.
- SIGTERM (what systemd, Docker and Kubernetes send) and SIGHUP pause the run like the first
  Ctrl-C: the running step finishes (the test opens its gate), the pause checkpoint is written
  and wfctl exits 130.

Readiness is gated on marker files the workflow (or wfctl) writes, polled with a deadline.
"""

from __future__ import annotations

import json
import signal
import subprocess
from pathlib import Path

import pytest

from tests.cli.conftest import WORKFLOWS, invoke, wfctl
from tests.cli.test_interrupt import _start, _status, _wait_for

BLOCKED = WORKFLOWS / "blocked.py"


def _kinds(store: Path, run_id: str) -> list[str]:
    log = invoke("log", run_id, "--store", store, "--json").json()
    return [c["kind"] for c in log["checkpoints"]]


@pytest.mark.parametrize("how", ["wfctl pause", "SIGINT", "SIGTERM"])
def test_the_drain_timeout_cancels_a_single_running_step(
    store: Path, tmp_path: Path, how: str
) -> None:
    gate_dir = tmp_path / "gate"
    gate_dir.mkdir()
    process = _start(store, gate_dir, "one-step", "--drain-timeout", "0.2", target=BLOCKED)
    _wait_for(gate_dir / "started", process)
    if how == "wfctl pause":
        assert wfctl("pause", "one-step", "--store", store).code == 0
    else:
        process.send_signal(getattr(signal, how))
    try:
        stdout, stderr = process.communicate(timeout=60)
    except subprocess.TimeoutExpired:
        process.kill()
        raise AssertionError("the drain timeout did not cancel the running step") from None
    assert process.returncode == 130, stderr
    doc = json.loads(stdout)
    assert doc["status"] == "interrupted"
    assert doc["head_checkpoint_id"] == "one-step.1"
    assert "Traceback" not in stderr
    # The cancelled step's result is not recorded: the pause follows the root directly.
    assert _kinds(store, "one-step") == ["root", "pause"]
    assert _status(store, "one-step") == "interrupted"
    assert not (store / "runs" / "one-step" / "pause").exists()


@pytest.mark.parametrize("signame", ["SIGTERM", "SIGHUP"])
def test_sigterm_and_sighup_pause_at_the_next_step_boundary(
    store: Path, tmp_path: Path, signame: str
) -> None:
    gate_dir = tmp_path / "gate"
    gate_dir.mkdir()
    run_id = f"stopped-by-{signame.lower()}"
    process = _start(store, gate_dir, run_id)
    _wait_for(gate_dir / "started", process)
    process.send_signal(getattr(signal, signame))
    _wait_for(store / "runs" / run_id / "pause", process)  # the pause was asked for
    (gate_dir / "gate").write_text("", encoding="utf-8")  # the running step may finish
    stdout, stderr = process.communicate(timeout=60)
    assert process.returncode == 130, stderr
    doc = json.loads(stdout)
    assert doc["status"] == "interrupted"
    assert doc["resume_command"].startswith(f"wfctl resume {run_id}")
    assert f"{signame}: pausing {run_id} at the next step boundary" in stderr
    assert "Traceback" not in stderr
    # The step in flight finished and was recorded before the pause: it does not run again.
    assert _kinds(store, run_id) == ["root", "step", "pause"]
    assert _status(store, run_id) == "interrupted"
    resumed = wfctl("resume", run_id, "--store", store, "--json")
    assert resumed.code == 0, resumed.stderr
    assert resumed.json()["outputs"] == ["THROUGH THE GATE"]
    assert resumed.json()["step_counts"] == {"executed": 1, "cached": 1, "changed": 0}
