"""Contention with real processes: one run, one executor; many runs, one store, nothing lost.

- Two processes resume the same paused run at the same signal: exactly one proceeds (it holds
  a step until released); the other fails at once with ``RunLockedError`` naming the holder's
  pid. Through the library, and through ``wfctl resume`` (exit 2, one line on stderr).
- Two processes start a run with the same explicit id: one run, one root.
- 8 processes x 5 runs against one store at once: every run completes with the right output,
  ``list_runs`` lists all 40 and ``verify_lineage`` passes on each.
- A resumer that read the head just before another process resumed the run fails
  (``RunStateError``: that pause was answered already) instead of restoring a new run.

Cross-process synchronisation is by marker files (``go``, ``holding-<pid>``, ``release``),
never by sleeping for a guessed time.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import wfctl_executable
from tests.harness import harness_workload as W
from tests.harness.checks import assert_lineage_ok, completed_output, read_state
from wfctl import FileCheckpointStorage, RunLockedError, RunStateError

REPO = Path(__file__).resolve().parents[2]
ENV = {**os.environ, "PYTHONPATH": str(REPO)}

pytestmark = pytest.mark.skipif(os.name != "posix", reason="uses flock and real processes")


def spawn(procs: list[subprocess.Popen[str]], *args: str, **env: str) -> subprocess.Popen[str]:
    proc = subprocess.Popen(
        [*args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=REPO,
        env={**ENV, **env},
    )
    procs.append(proc)
    return proc


def child(procs: list[subprocess.Popen[str]], *args: str) -> subprocess.Popen[str]:
    return spawn(procs, sys.executable, "-m", "tests.harness.contend_child", *args)


def wait_until(predicate: Any, what: str, procs: list[subprocess.Popen[str]]) -> None:
    """Poll for a cross-process condition (bounded), failing early if a child died oddly."""
    end = time.monotonic() + 60
    while not predicate():
        for proc in procs:
            if proc.poll() not in (None, 0, 2):
                raise AssertionError(f"child {proc.args} died: {proc.communicate()}")
        assert time.monotonic() < end, f"timed out waiting for {what}"
        time.sleep(0.005)


def holders(signals: Path) -> list[int]:
    return [int(p.name.split("-")[1]) for p in signals.glob("holding-*")]


def paused_run(store: Path, run_id: str) -> str:
    """Start a run of the pipeline that pauses at its request; return the pause checkpoint."""
    storage = FileCheckpointStorage(store)
    result = asyncio.run(
        W.pipeline.build(checkpoint_storage=storage).run(W.spec_for(5), run_id=run_id)
    )
    assert result.status == "paused"
    storage.close()
    return result.checkpoint_id


def ledger_labels(signals: Path) -> list[str]:
    return [
        line.split()[1]
        for path in sorted(signals.glob("ledger-*.txt"))
        for line in path.read_text().splitlines()
    ]


@pytest.mark.parametrize("round_", range(3))
def test_two_resumers_at_once_exactly_one_proceeds(
    tmp_path: Path, children: list[subprocess.Popen[str]], round_: int
) -> None:
    store, signals = tmp_path / "store", tmp_path / "signals"
    signals.mkdir()
    paused_run(store, "contended")
    a = child(children, "resume-hold", str(store), "contended", str(signals))
    b = child(children, "resume-hold", str(store), "contended", str(signals))
    (signals / "go").write_text("go")
    # The winner holds the run (inside step g0); the loser is refused while it holds it.
    wait_until(
        lambda: holders(signals) and (a.poll() is not None or b.poll() is not None),
        "one holder and one refusal",
        children,
    )
    (winner_pid,) = holders(signals)
    loser, winner = (a, b) if winner_pid == b.pid else (b, a)
    out, err = loser.communicate(timeout=30)
    assert loser.returncode == 2, (out, err)
    refusal = json.loads(out)
    # Refused by the lock the winner holds, or, when the winner's resume record landed
    # between the loser's look at the head and its reading of the run, because the pause it
    # meant to answer was answered already: either way it ran nothing.
    if refusal["error"] == "RunLockedError":
        assert f"pid {winner_pid}" in refusal["message"]
    else:
        assert refusal["error"] == "RunStateError", refusal
        assert "was answered already (the run is at contended." in refusal["message"], refusal
    (signals / "release").write_text("go")
    out, err = winner.communicate(timeout=60)
    assert winner.returncode == 0, err
    (done,) = json.loads(out)["results"]
    output = W.reference(W.spec_for(5))[1]
    assert done["status"] == "completed" and done["outputs"] == [output]
    state = read_state(store, "contended")
    assert [c.kind for c in state.journal.checkpoints].count("resume") == 1  # type: ignore[union-attr]
    assert completed_output(state) == output
    assert sorted(ledger_labels(signals)) == sorted(["g0", "g1", "g2", "g3", "final"])
    assert_lineage_ok(store, ["contended"])


def test_wfctl_resume_refuses_a_run_another_process_is_executing(
    tmp_path: Path, children: list[subprocess.Popen[str]]
) -> None:
    store, signals = tmp_path / "store", tmp_path / "signals"
    signals.mkdir()
    paused_run(store, "contended")
    command = [wfctl_executable(), "resume", "contended", "--store", str(store)]
    command += ["--response", "approve=yes"]
    first = spawn(children, *command, WFCTL_HARNESS_HOLD=f"g0={signals}")
    wait_until(lambda: holders(signals), "the first resume to hold the run", children)
    second = spawn(children, *command)
    out, err = second.communicate(timeout=60)
    assert second.returncode == 2, (out, err)
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err, err
    assert "locked" in err and f"pid {first.pid}" in err, err
    (signals / "release").write_text("go")
    out, err = first.communicate(timeout=60)
    assert first.returncode == 0, err
    state = read_state(store, "contended")
    assert completed_output(state) == W.reference(W.spec_for(5))[1]
    assert_lineage_ok(store, ["contended"])


def test_two_processes_starting_one_run_id_make_one_run(
    tmp_path: Path, children: list[subprocess.Popen[str]]
) -> None:
    store, signals = tmp_path / "store", tmp_path / "signals"
    signals.mkdir()
    a = child(children, "start-hold", str(store), "same-id", str(signals))
    b = child(children, "start-hold", str(store), "same-id", str(signals))
    (signals / "go").write_text("go")
    wait_until(
        lambda: holders(signals) and (a.poll() is not None or b.poll() is not None),
        "one holder and one refusal",
        children,
    )
    (winner_pid,) = holders(signals)
    loser, winner = (a, b) if winner_pid == b.pid else (b, a)
    out, _ = loser.communicate(timeout=30)
    assert loser.returncode == 2 and json.loads(out)["error"] == "RunLockedError"
    (signals / "release").write_text("go")
    out, err = winner.communicate(timeout=60)
    assert winner.returncode == 0, err
    state = read_state(store, "same-id")
    assert [c.kind for c in state.journal.checkpoints].count("root") == 1  # type: ignore[union-attr]
    assert completed_output(state) == W.reference(W.spec_for(7, seq=2, pause=False))[1]


def test_many_processes_many_runs_one_store(
    tmp_path: Path, children: list[subprocess.Popen[str]]
) -> None:
    store, signals = tmp_path / "store", tmp_path / "signals"
    signals.mkdir()
    procs = [child(children, "many", str(store), "5", str(signals)) for _ in range(8)]
    (signals / "go").write_text("go")
    run_ids = []
    for proc in procs:
        out, err = proc.communicate(timeout=120)
        assert proc.returncode == 0, err
        reply = json.loads(out)
        for i, done in enumerate(reply["results"]):
            spec = W.spec_for(reply["pid"] + i, seq=3, pause=False)
            assert done["status"] == "completed" and done["outputs"] == [W.reference(spec)[1]]
            run_ids.append(done["run_id"])
    assert len(set(run_ids)) == 40
    summaries = asyncio.run(FileCheckpointStorage(store).list_runs())
    assert sorted(s.run_id for s in summaries) == sorted(run_ids)
    assert {s.status for s in summaries} == {"completed"}
    for run_id in run_ids:
        state = read_state(store, run_id)
        assert sorted(state.committed) == sorted(W.labels(W.spec_for(0, seq=3, pause=False)))
        assert set(state.committed.values()) == {1}
    assert_lineage_ok(store, run_ids)


def test_a_resumer_with_a_stale_head_does_not_silently_start_a_new_run(
    tmp_path: Path, children: list[subprocess.Popen[str]]
) -> None:
    """What ``wfctl resume RUN`` does (read the head, load the code, ``run(checkpoint_id=head)``),
    with another resumer getting in between the read and the run: a deterministic interleaving
    of the race two simultaneous ``wfctl resume`` commands run into."""
    store, signals = tmp_path / "store", tmp_path / "signals"
    signals.mkdir()
    head = paused_run(store, "contended")  # 1. this process reads the head (the pause)
    other = child(children, "resume-hold", str(store), "contended", str(signals))
    (signals / "go").write_text("go")  # 2. another process resumes the run and holds it
    wait_until(lambda: holders(signals), "the other resumer to hold the run", children)
    storage = FileCheckpointStorage(store)
    wf = W.pipeline.build(checkpoint_storage=storage)
    try:
        with pytest.raises((RunLockedError, RunStateError)):  # 3. this process resumes
            asyncio.run(wf.run(checkpoint_id=head, responses={"approve": "yes"}))
        assert [s.run_id for s in asyncio.run(storage.list_runs())] == ["contended"]
    finally:
        (signals / "release").write_text("go")
        other.communicate(timeout=60)
