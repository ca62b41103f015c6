"""``wfctl cancel`` and ``wfctl rm`` through the installed executable.

A running run is a real ``wfctl run`` process holding the run's lock, stopped at a file gate
(``workflows/gated.py``); the tests wait for its ``started`` marker, never for a time.
"""

from __future__ import annotations

import json
import signal
import subprocess
from pathlib import Path
from typing import Any

from tests.cli.conftest import WORKFLOWS, Invocation, failed_long_run, invoke, run_id_of, wfctl
from tests.cli.test_interrupt import _start, _wait_for
from tests.conftest import traced_peak

GREET = WORKFLOWS / "greet.py"
REVIEW = WORKFLOWS / "review.py"
FLAKY = WORKFLOWS / "flaky.py"


def start_gated(store: Path, tmp_path: Path, run_id: str) -> tuple[subprocess.Popen[str], Path]:
    """Start ``wfctl run`` of the gated workflow; return once its first step runs (lock held).

    Returns the process and the gate directory (write ``gate`` in it to let the run go on).
    """
    gate = tmp_path / f"gate-{run_id}"
    gate.mkdir()
    process = _start(store, gate, run_id)
    _wait_for(gate / "started", process)
    return process, gate


def _runs(store: Path) -> dict[str, Any]:
    return {r["run_id"]: r for r in invoke("runs", "--store", store, "--json").json()["runs"]}


def test_cancel_ends_a_paused_run_for_good(store: Path) -> None:
    run_id = run_id_of(invoke("run", REVIEW, "--store", store, "--json"))
    template = store / "runs" / run_id / "answers.toml"
    assert template.exists()
    done = wfctl("cancel", run_id, "--reason", "superseded", "--store", store, "--json")
    assert done.code == 0, done.stderr
    doc = done.json()
    assert doc["schema"] == "wfctl/cancel@1"
    assert (doc["run_id"], doc["status"], doc["previous_status"]) == (
        run_id,
        "cancelled",
        "paused",
    )
    assert doc["head_checkpoint_id"] == f"{run_id}.3" and doc["reason"] == "superseded"
    assert doc["cancelled_at"].endswith("Z")
    assert not template.exists()  # nothing is left to answer

    record = wfctl("show", f"{run_id}.3", "--store", store, "--json").json()["record"]
    assert record["kind"] == "cancelled" and record["prev"] == f"{run_id}.2"
    assert record["data"] == {"status": "paused", "reason": "superseded"}
    assert _runs(store)[run_id]["status"] == "cancelled"
    verified = wfctl("verify-lineage", run_id, "--store", store, "--json")
    assert verified.code == 0, verified.stdout
    log = wfctl("log", run_id, "--store", store)
    assert "cancelled while paused: superseded" in log.stdout

    resumed = wfctl("resume", run_id, "-r", "0/request#0=yes", "--store", store)
    assert resumed.code == 2
    line = resumed.error_line()
    assert f"was cancelled ({run_id}.3) and cannot be resumed" in line
    assert f"wfctl replay --checkpoint {run_id}.2 --store {store}" in line
    again = wfctl("cancel", run_id, "--store", store)
    assert again.code == 2 and "was cancelled already" in again.error_line()
    assert len(wfctl("log", run_id, "--store", store, "--json").json()["checkpoints"]) == 4

    people = wfctl(
        "cancel", run_id_of(invoke("run", REVIEW, "--store", store, "--json")), "--store", store
    )
    assert (
        people.code == 0 and "cancelled at" in people.stdout and "(it was paused)" in people.stdout
    )

    # Finished now: gc collects it like a completed run.
    swept = invoke("gc", "--older-than", "0", "--yes", "--store", store, "--json").json()
    assert run_id in [item["run_id"] for item in swept["removed"]]


def test_cancel_refuses_completed_and_unknown_runs_and_rm_a_running_one(
    store: Path, tmp_path: Path
) -> None:
    completed = run_id_of(invoke("run", GREET, "--store", store, "--json"))
    refused = wfctl("cancel", completed, "--store", store)
    assert refused.code == 2 and "has completed" in refused.error_line()
    missing = wfctl("cancel", "nobody", "--store", store)
    assert missing.code == 2 and "run 'nobody' not found" in missing.error_line()
    assert not (store / "runs" / "nobody").exists()  # looking did not create it

    (tmp_path / "flaky").mkdir()
    failing = invoke("run", FLAKY, "--input", json.dumps(str(tmp_path / "flaky")), "--store", store)
    failed = next(r for r in _runs(store).values() if r["status"] == "failed")["run_id"]
    assert failing.code == 1
    cancelled = wfctl("cancel", failed, "--store", store, "--json")
    assert cancelled.code == 0 and cancelled.json()["previous_status"] == "failed"
    assert wfctl("verify-lineage", failed, "--store", store).code == 0

    process, gate = start_gated(store, tmp_path, "held")
    try:
        for force in ((), ("--force",)):
            removal = wfctl("rm", "held", completed, *force, "--yes", "--store", store)
            line = removal.error_line()
            assert removal.code == 2 and "is locked by" in line
            assert line.endswith(
                "it is running; cancel it first (wfctl cancel held), or let it end"
            )
        assert {"held", completed} <= set(_runs(store))  # all or nothing: none removed
    finally:
        (gate / "gate").write_text("", encoding="utf-8")
        process.communicate(timeout=60)
    assert process.returncode == 0


def test_a_killed_run_can_be_cancelled(store: Path, tmp_path: Path) -> None:
    process, _ = start_gated(store, tmp_path, "killed")
    process.send_signal(signal.SIGKILL)
    process.communicate(timeout=60)
    assert _runs(store)["killed"]["status"] == "interrupted"
    done = wfctl("cancel", "killed", "--store", store, "--json")
    assert done.code == 0, done.stderr
    assert done.json()["previous_status"] == "interrupted"
    assert done.json()["reason"] is None
    assert _runs(store)["killed"]["status"] == "cancelled"
    assert wfctl("verify-lineage", "killed", "--store", store).code == 0
    assert wfctl("resume", "killed", "--store", store).code == 2


def test_rm_deletes_whole_runs_and_refuses_to_orphan_a_restored_run(store: Path) -> None:
    origin = run_id_of(invoke("run", GREET, "--store", store, "--json"))
    other = run_id_of(invoke("run", GREET, "--store", store, "--json"))
    assert invoke("replay", "--checkpoint", f"{origin}.1", "--store", store).code == 0
    restored = next(r for r in _runs(store).values() if r["origin_run_id"] == origin)["run_id"]

    refused = wfctl("rm", other, origin, "--store", store)
    assert refused.code == 2
    line = refused.error_line()
    assert f"run '{origin}': is the origin of run '{restored}' ({origin}.1)" in line
    assert "--force" in line
    assert set(_runs(store)) == {origin, other, restored}  # all or nothing
    unknown = wfctl("rm", other, "nobody", "--store", store)
    assert unknown.code == 2 and "run 'nobody' not found" in unknown.error_line()
    assert other in _runs(store)

    listed = _runs(store)[other]
    removed = wfctl("rm", other, "--store", store, "--json")
    assert removed.code == 0, removed.stderr
    assert removed.json() == {
        "schema": "wfctl/rm@1",
        "run_count": 1,
        "runs": [listed],  # the run object of `runs`, as it was
        "dangling_origins": [],
    }
    assert (listed["workflow"], listed["status"]) == ("greet", "completed")
    assert removed.stderr == ""
    assert not (store / "runs" / other).exists()

    forced = wfctl("rm", origin, "--force", "--store", store, "--json")
    assert forced.code == 0
    assert forced.json()["dangling_origins"] == [
        {"run_id": restored, "origin_run_id": origin, "origin_checkpoint_id": f"{origin}.1"}
    ]
    assert f"run {restored} was restored from {origin}.1, which is gone now" in forced.stderr
    assert set(_runs(store)) == {restored}
    broken = wfctl("verify-lineage", restored, "--store", store)
    assert broken.code == 1 and "is gone" in broken.stdout

    # A run and the runs restored from it go together without --force.
    base = run_id_of(invoke("run", GREET, "--store", store, "--json"))
    assert invoke("replay", "--checkpoint", f"{base}.1", "--store", store).code == 0
    branch = next(r for r in _runs(store).values() if r["origin_run_id"] == base)["run_id"]
    together = wfctl("rm", base, branch, "--yes", "--store", store)
    assert together.code == 0, together.stderr
    assert f"removed run {base} (greet, completed)" in together.stdout
    assert set(_runs(store)) == {restored}


def test_rm_removes_a_corrupt_run_that_nothing_else_can_clean(store: Path) -> None:
    run_id = run_id_of(invoke("run", GREET, "--store", store, "--json"))
    with (store / "runs" / run_id / "journal.jsonl").open("a", encoding="utf-8") as journal:
        journal.write("not a record\n")
    listed = _runs(store)[run_id]
    assert listed["status"] == "corrupt"
    kept = invoke("gc", "--older-than", "0", "--store", store, "--json").json()
    assert kept["removed"] == []  # gc never removes a corrupt run; rm is how to
    removed = wfctl("rm", run_id, "--store", store, "--json")
    assert removed.code == 0, removed.stderr
    assert removed.json()["runs"] == [listed]
    assert _runs(store) == {}


def _cancel_peak(tmp_path: Path, steps: int) -> int:
    """Fail a run of ``steps`` steps and return the peak of cancelling it."""
    store, _ = failed_long_run(tmp_path, steps)
    outcomes: list[Invocation] = []
    peak = traced_peak(lambda: outcomes.append(invoke("cancel", "r", "--store", store, "--json")))
    assert outcomes[0].code == 0, outcomes[0].stderr
    assert outcomes[0].json()["head_checkpoint_id"] == f"r.{steps + 2}"
    return peak


def test_cancel_holds_no_step_checkpoint_of_the_run(tmp_path: Path) -> None:
    # ``wfctl cancel`` read the whole chain to find its root and head: 1.28 KB per step of
    # this run. It now keeps only its records that are not steps, decoding the others one at
    # a time: 0.51 KB, which is the journal's bytes and lines, read in one piece to verify it
    # at these sizes (a longer one is read in chunks of 1 MiB). Deterministic: tracemalloc
    # counts bytes. Bound: 0.6 KB.
    small, large = _cancel_peak(tmp_path, 500), _cancel_peak(tmp_path, 3_000)
    assert (large - small) / 2_500 < 600, (small, large)
