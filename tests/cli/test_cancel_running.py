"""``wfctl cancel`` of a running run, through the installed executable, on the file store.

The run is a real ``wfctl run`` (or ``wfctl worker``) process stopped at a file gate
(``workflows/gated.py``), with a drain timeout far longer than any test, so only the gate lets
it reach its next step boundary. ``wfctl cancel`` runs in another process; the tests wait for
the request's marker in the store and for the gate's ``started`` file, never for a time.
"""

from __future__ import annotations

import getpass
import json
import signal
import socket
import subprocess
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, cast

import pytest

from tests.cli.conftest import WORKFLOWS, base_env, wfctl
from tests.cli.test_interrupt import _start, _wait_for
from tests.cli.test_json_documents import _check as check_schema
from tests.conftest import wfctl_executable

#: Longer than any test: the drain never cancels the gated step, the gate decides.
_NO_DRAIN = ("--drain-timeout", "3600")
#: The processes the tests start, killed after each test that left one running (it failed).
_STARTED: list[subprocess.Popen[str]] = []


@pytest.fixture(autouse=True)
def _reap() -> Iterator[None]:
    yield
    while _STARTED:
        process = _STARTED.pop()
        if process.poll() is None:
            process.kill()
        process.communicate()


def started(process: subprocess.Popen[str]) -> subprocess.Popen[str]:
    """Return ``process``, killed after the test if it is still running then."""
    _STARTED.append(process)
    return process


def spawn(*args: str | Path) -> subprocess.Popen[str]:
    """Start the installed ``wfctl`` with ``args``, its output piped (see :func:`started`)."""
    return started(
        subprocess.Popen(
            [wfctl_executable(), *map(str, args)],
            env=base_env(),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
    )


def gated(
    store: Path | str,
    tmp_path: Path,
    run_id: str,
    *,
    once: bool = False,
    drain: tuple[str, ...] = _NO_DRAIN,
) -> tuple[subprocess.Popen[str], Path]:
    """Start ``wfctl run --json`` of the gated workflow; return once its first step runs.

    ``once``: the run completes after the gated step (no step boundary follows it).
    ``drain``: its drain timeout option (by default, longer than any test).
    """
    gate = tmp_path / f"gate-{run_id}"
    gate.mkdir()
    if once:
        (gate / "once").touch()
    process = started(_start(cast(Path, store), gate, run_id, *drain))
    _wait_for(gate / "started", process)
    return process, gate


def cancelling(
    store: Path | str, run_id: str, *args: str, asked: Callable[[], bool] | None = None
) -> subprocess.Popen[str]:
    """Start ``wfctl cancel RUN --json`` (it waits for the run's driver); return once its
    request is in the store (``asked`` says so; by default, a file store's pause marker), or
    once it succeeded: a driver that answers at once (``--drain-timeout 0``) may end the run,
    and withdraw the request with it, before this looks."""
    process = spawn("cancel", run_id, "--store", store, "--json", *args)
    marker = Path(store) / "runs" / run_id / "pause"
    asked = asked or marker.exists
    end = time.monotonic() + 60
    while not asked():  # another process's write: nothing to wait on but the store
        if process.poll() is not None:
            assert process.returncode == 0, process.communicate()
            return process
        assert time.monotonic() < end, f"the request for {run_id} never reached {store}"
        time.sleep(0.01)
    return process


def refused(process: subprocess.Popen[str], code: int) -> str:
    """Wait for a process that prints nothing on stdout; check its code; return its one line."""
    out, err = process.communicate(timeout=120)
    assert process.returncode == code and out == "", err
    return _one_line(err)


def _asker(pid: int) -> str:
    return f"{getpass.getuser()}@{socket.gethostname()} (pid {pid})"


def _status(store: Path | str, run_id: str) -> str:
    runs = wfctl("runs", "--store", store, "--json").json()["runs"]
    [run] = [r for r in runs if r["run_id"] == run_id]
    status: str = run["status"]
    return status


def _one_line(stderr: str) -> str:
    assert "Traceback" not in stderr, stderr
    lines = stderr.strip().splitlines()
    assert len(lines) == 1, stderr
    return lines[0]


def check_cancelled_by(
    store: Path | str, run_id: str, driver: subprocess.Popen[str], pid: int
) -> None:
    """The driver exited 1 with one line naming who cancelled it; the chain is one lineage."""
    out, err = driver.communicate(timeout=120)
    assert driver.returncode == 1, err
    line = _one_line(err)
    assert line.startswith(f"wfctl: run {run_id!r} was cancelled by {_asker(pid)} at "), line
    assert line.endswith(": superseded"), line
    doc = json.loads(out)
    check_schema(doc, "run")
    assert (doc["status"], doc["resume_command"]) == ("cancelled", None)
    assert _status(store, run_id) == "cancelled"
    verified = wfctl("verify-lineage", run_id, "--store", store, "--json")
    assert verified.code == 0, verified.stdout
    log = wfctl("log", run_id, "--store", store, "--json").json()
    head = log["checkpoints"][-1]
    assert head["kind"] == "cancelled"
    record = wfctl("show", head["checkpoint_id"], "--store", store, "--json").json()["record"]
    assert record["data"]["status"] == "running" and record["data"]["by"] == _asker(pid)


def test_cancel_waits_until_the_driver_has_recorded_cancelled(tmp_path: Path) -> None:
    store = tmp_path / "store"
    driver, gate = gated(store, tmp_path, "live")
    canceller = cancelling(store, "live", "--reason", "superseded")
    assert canceller.poll() is None  # the gated step is running: nothing recorded yet
    assert _status(store, "live") == "running"
    (gate / "gate").touch()
    out, err = canceller.communicate(timeout=120)
    assert canceller.returncode == 0, err
    doc = json.loads(out)
    check_schema(doc, "cancel")
    assert (doc["schema"], doc["status"], doc["previous_status"]) == (
        "wfctl/cancel@1",
        "cancelled",
        "running",
    )
    assert doc["requested_by"] == _asker(canceller.pid) and doc["reason"] == "superseded"
    assert doc["head_checkpoint_id"] == "live.2" and doc["cancelled_at"].endswith("Z")
    check_cancelled_by(store, "live", driver, canceller.pid)
    assert not (store / "runs" / "live" / "pause").exists()  # the request is withdrawn
    assert wfctl("resume", "live", "--store", store).code == 2  # ended for good


def test_no_wait_returns_at_once_with_the_request_recorded(tmp_path: Path) -> None:
    store = tmp_path / "store"
    driver, gate = gated(store, tmp_path, "live")
    people = wfctl("cancel", "live", "--no-wait", "--store", store)
    assert people.code == 0 and "asked to cancel at its next step boundary" in people.stdout
    asked = wfctl(
        "cancel", "live", "--no-wait", "--reason", "superseded", "--store", store, "--json"
    )
    # Both returned while the gate is shut: the run cannot have reached its step boundary.
    assert asked.code == 0, asked.stderr
    doc: dict[str, Any] = asked.json()
    check_schema(doc, "cancel")
    assert (doc["status"], doc["previous_status"], doc["head_checkpoint_id"]) == (
        "running",
        "running",
        None,
    )
    assert doc["cancelled_at"] is None and doc["reason"] == "superseded"
    marker = json.loads((store / "runs" / "live" / "pause").read_text(encoding="utf-8"))
    assert marker["cancel"] == {
        "by": doc["requested_by"],
        "at": marker["cancel"]["at"],
        "reason": "superseded",
    }
    assert _status(store, "live") == "running"
    paused = wfctl("pause", "live", "--store", store)  # it would be cancelled all the same
    assert paused.code == 2 and paused.error_line() == (
        f"wfctl: error: run 'live': is being cancelled (asked by {doc['requested_by']} at "
        f"{marker['cancel']['at']}): it ends cancelled at its next step boundary, not paused"
    )
    (gate / "gate").touch()
    pid = int(doc["requested_by"].rsplit("pid ", 1)[1].rstrip(")"))  # the last to ask
    check_cancelled_by(store, "live", driver, pid)
    log = wfctl("log", "live", "--store", store)
    assert f"cancelled while running by {_asker(pid)}: superseded" in log.stdout


def test_ctrl_c_of_a_waiting_cancel_leaves_the_request(tmp_path: Path) -> None:
    store = tmp_path / "store"
    driver, gate = gated(store, tmp_path, "live")
    canceller = cancelling(store, "live", "--reason", "superseded")
    canceller.send_signal(signal.SIGINT)
    assert refused(canceller, 130) == (
        "wfctl: interrupted: the cancel request stays: the run ends cancelled at its next step "
        "boundary ('wfctl runs' shows it)"
    )
    assert _status(store, "live") == "running"
    (gate / "gate").touch()
    check_cancelled_by(store, "live", driver, canceller.pid)


def test_a_run_that_completes_before_its_step_boundary_is_not_cancelled(tmp_path: Path) -> None:
    store = tmp_path / "store"
    driver, gate = gated(store, tmp_path, "once", once=True)
    canceller = cancelling(store, "once")
    (gate / "gate").touch()  # its gated step returns: the body ends, no boundary follows
    assert refused(canceller, 2) == (
        "wfctl: error: run 'once': completed (once.2) before it reached a step boundary; "
        "nothing was cancelled"
    )
    driver.communicate(timeout=120)
    assert driver.returncode == 0
    assert _status(store, "once") == "completed"
    assert not (store / "runs" / "once" / "pause").exists()


def test_a_worker_driven_run_is_cancelled_at_its_step_boundary(tmp_path: Path) -> None:
    store, gate = tmp_path / "store", tmp_path / "gate"
    gate.mkdir()
    submitted = wfctl(
        "submit",
        WORKFLOWS / "gated.py",
        "--input",
        json.dumps(str(gate)),
        "--run-id",
        "queued",
        "--store",
        store,
    )
    assert submitted.code == 0, submitted.stderr
    worker = spawn("worker", "--store", store, "--json", "--workflows", WORKFLOWS, *_NO_DRAIN)
    _wait_for(gate / "started", worker)
    canceller = cancelling(store, "queued", "--reason", "superseded")
    (gate / "gate").touch()
    out, err = canceller.communicate(timeout=120)
    assert canceller.returncode == 0, err
    assert json.loads(out)["requested_by"] == _asker(canceller.pid)
    assert worker.stdout is not None
    taken, ended = (json.loads(worker.stdout.readline()) for _ in range(2))
    check_schema(ended, "worker-event")
    assert (taken["event"], ended["event"], ended["status"]) == ("taken", "ended", "cancelled")
    assert f"was cancelled by {_asker(canceller.pid)}" in ended["reason"]
    worker.send_signal(signal.SIGTERM)
    worker.communicate(timeout=120)
    assert worker.returncode == 0
    assert _status(store, "queued") == "cancelled"
    assert wfctl("verify-lineage", "queued", "--store", store).code == 0


def test_a_replay_s_new_run_can_be_cancelled(tmp_path: Path) -> None:
    store = tmp_path / "store"
    driver, gate = gated(store, tmp_path, "source")
    (gate / "gate").touch()
    driver.communicate(timeout=120)
    assert driver.returncode == 0
    for name in ("gate", "started"):  # the replay executes the gated step again
        (gate / name).unlink()
    replay = spawn("replay", "--checkpoint", "source.0", "--store", store, "--json")
    _wait_for(gate / "started", replay)
    runs = wfctl("runs", "--store", store, "--json").json()["runs"]
    [new] = [r["run_id"] for r in runs if r["status"] == "running"]
    canceller = cancelling(store, new, "--reason", "superseded")
    (gate / "gate").touch()
    out, err = canceller.communicate(timeout=120)
    assert canceller.returncode == 0, err
    out, err = replay.communicate(timeout=120)
    assert replay.returncode == 1, err
    doc = json.loads(out)
    check_schema(doc, "replay")
    assert doc["replay_status"] == "cancelled"
    assert doc["error"].startswith(f"run {new!r} was cancelled by {_asker(canceller.pid)} at ")
    assert _status(store, new) == "cancelled"
