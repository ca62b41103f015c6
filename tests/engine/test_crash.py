"""Crash recovery with real processes: SIGKILL mid-step and mid-commit, then resume elsewhere."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pytest

from tests.conftest import arun, assert_one_chain
from wfctl import FileCheckpointStorage, RunLockedError, step, workflow

CHILD = Path(__file__).with_name("crash_child.py")
N, K = 6, 3


def _child(store: Path, run_id: str, mode: str, durability: str = "full") -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, str(CHILD), str(store), run_id, mode, str(N), str(K)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "CRASH_CHILD_DURABILITY": durability},
    )


def _wait_for(path: Path, proc: subprocess.Popen[str], deadline: float = 30.0) -> None:
    """Poll for a marker file another process writes (cross-process sync, bounded)."""
    end = time.monotonic() + deadline
    while not path.exists():
        assert proc.poll() is None, proc.stderr.read() if proc.stderr else ""
        assert time.monotonic() < end, f"{path} never appeared"
        time.sleep(0.01)


def _resume(store: Path, run_id: str) -> dict[str, object]:
    done = subprocess.run(
        [sys.executable, str(CHILD), str(store), run_id, "resume", str(N), str(K)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    result: dict[str, object] = json.loads(done.stdout)
    return result


def _check_recovered(store: Path, run_id: str) -> Counter[str]:
    result = _resume(store, run_id)
    assert result == {"status": "completed", "outputs": [[f"done:{i}" for i in range(N)]]}
    chain = arun(FileCheckpointStorage(store).list_checkpoints(run_id=run_id))
    assert_one_chain(chain)
    assert [c.kind for c in chain].count("root") == 1
    return Counter((store / "ledger.txt").read_text().split())


@pytest.mark.parametrize("durability", ["full", "batch", "none"])
def test_sigkill_mid_step_resumes_without_rerunning_committed_steps(
    tmp_path: Path, durability: str
) -> None:
    # batch (16 steps by default) and none have synced none of the steps before K when the
    # process dies: each was still written before its await returned, so none is lost.
    proc = _child(tmp_path, "crash-mid-step", "run-block", durability)
    _wait_for(tmp_path / "ready", proc)
    proc.send_signal(signal.SIGKILL)
    proc.communicate(timeout=30)
    assert proc.returncode == -signal.SIGKILL
    journal = arun(FileCheckpointStorage(tmp_path).read_run("crash-mid-step"))
    recorded = [s["key"] for c in journal.checkpoints for s in c.data.get("steps", [])]
    assert recorded == [f"work#{i}" for i in range(K)]  # every step that returned, no other
    runs = _check_recovered(tmp_path, "crash-mid-step")
    assert runs == {**{f"work:{i}": 1 for i in range(N)}, f"work:{K}": 2}  # in flight: twice


def test_sigkill_mid_commit_leaves_a_torn_tail_that_resume_discards(tmp_path: Path) -> None:
    proc = _child(tmp_path, "crash-mid-commit", "run-torn")
    proc.communicate(timeout=30)
    assert proc.returncode == -signal.SIGKILL
    journal = arun(FileCheckpointStorage(tmp_path).read_run("crash-mid-commit"))
    assert journal.torn_tail > 0 and not journal.problems
    runs = _check_recovered(tmp_path, "crash-mid-commit")
    assert runs == {**{f"work:{i}": 1 for i in range(N)}, f"work:{K}": 2}
    after = arun(FileCheckpointStorage(tmp_path).read_run("crash-mid-commit"))
    assert after.torn_tail == 0 and not after.problems


def test_a_second_process_cannot_resume_a_running_run(tmp_path: Path) -> None:
    proc = _child(tmp_path, "held", "run-gate")
    try:
        _wait_for(tmp_path / "ready", proc)

        @step
        async def work(i: int) -> str:
            raise AssertionError("must not run")

        @workflow(name="ledgered")
        async def ledgered(n: int) -> list[str]:
            return [await work(i) for i in range(n)]

        storage = FileCheckpointStorage(tmp_path)
        head = arun(storage.get_latest(run_id="held"))
        assert head is not None
        with pytest.raises(RunLockedError, match=rf"pid {proc.pid}"):
            arun(
                ledgered.build(checkpoint_storage=storage).run(
                    checkpoint_id=head.checkpoint_id, allow_changed=True
                )
            )
    finally:
        (tmp_path / "gate").write_text("go")
        out, err = proc.communicate(timeout=30)
    assert proc.returncode == 0, err
    assert json.loads(out)["status"] == "completed"
    assert os.path.exists(tmp_path / "ledger.txt")
