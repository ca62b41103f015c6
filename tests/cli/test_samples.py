"""Every sample workflow runs with ``wfctl run`` out of the box (SPEC §7)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from tests.cli.conftest import SAMPLES, invoke, wfctl


def test_concurrent_branches_run_and_replay_shuffled(store: Path) -> None:
    done = wfctl("run", SAMPLES / "concurrent_branches.py", "--store", store, "--json")
    assert done.code == 0, done.stderr
    doc = done.json()
    assert doc["outputs"] == [["result:A", "result:B"]]
    # Report 000: a replay that serves the predecessor from the record must not swap results.
    for checkpoint in (f"{doc['run_id']}.0", f"{doc['run_id']}.1"):
        replayed = wfctl("replay", "-c", checkpoint, "--shuffle", "7", "--store", store, "--json")
        assert replayed.code == 0, replayed.stdout + replayed.stderr
        assert replayed.json()["replay_outputs"] == [["result:A", "result:B"]]


def test_parallel_steps_keep_one_chain(store: Path) -> None:
    done = wfctl(
        "run", SAMPLES / "parallel_steps.py", "--input", '{"value": 1, "fan_out": 8}',
        "--store", store, "--json",
    )  # fmt: skip
    assert done.code == 0, done.stderr
    assert done.json()["outputs"] == [[2, 3, *(10 + i for i in range(8))]]
    lineage = wfctl("verify-lineage", "--store", store, "--json")
    assert lineage.code == 0 and lineage.json()["ok"] is True


def test_fan_out(store: Path) -> None:
    done = wfctl("run", SAMPLES / "fan_out.py", "--store", store, "--json")
    assert done.code == 0, done.stderr
    assert done.json()["outputs"] == [{"count": 100, "sum_of_squares": 328350}]
    assert done.json()["step_counts"]["executed"] == 101


def test_file_pipeline(store: Path, tmp_path: Path) -> None:
    output = tmp_path / "out"
    done = wfctl(
        "run", SAMPLES / "file_pipeline.py", "--input", json.dumps({"output": str(output)}),
        "--store", store, "--json",
    )  # fmt: skip
    assert done.code == 0, done.stderr
    [summary] = done.json()["outputs"]
    assert (summary["files"], summary["lines"], summary["words"]) == (3, 8, 88)
    assert json.loads((output / "summary.json").read_text(encoding="utf-8"))["words"] == 88


def test_human_review_pauses_and_resumes(store: Path) -> None:
    paused = wfctl("run", SAMPLES / "human_review.py", "--input", '"cats"', "--store", store)
    assert paused.code == 3, paused.stderr
    assert "request#0" in paused.stdout and "answers template:" in paused.stdout
    runs = invoke("runs", "--store", store, "--json").json()["runs"]
    [run] = runs
    assert run["status"] == "paused" and run["pending_request_ids"] == ["request#0"]
    done = wfctl("resume", run["run_id"], "--response", "request#0=yes", "--store", store, "--json")
    assert done.code == 0, done.stderr
    [result] = done.json()["outputs"]
    assert result["status"] == "published"


def test_af_review_loop_runs_as_a_script_and_with_wfctl(store: Path, tmp_path: Path) -> None:
    script = subprocess.run(
        [sys.executable, SAMPLES / "af_review_loop.py"],
        cwd=tmp_path, capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert script.returncode == 0, script.stderr
    approved = {
        "status": "approved",
        "topic": "durable workflows",
        "text": "Durable workflows matter. Here is an example (add an example).",
        "reviews": ["add an example", "PASS"],
    }
    assert script.stdout.splitlines() == ["approval requested: approval", str(approved)]
    assert list(tmp_path.iterdir()) == [], "the script keeps its checkpoints in memory"
    target = f"{SAMPLES / 'af_review_loop.py'}:af_review_loop"
    paused = wfctl("run", target, "--run-id", "loop-1", "--store", store, "--json")
    assert paused.code == 3, paused.stderr
    assert [r["request_id"] for r in paused.json()["requests"]] == ["approval"]
    done = wfctl("resume", "loop-1", "--response", "approval=yes", "--store", store, "--json")
    assert done.code == 0, done.stderr
    assert done.json()["outputs"] == [approved]
    assert done.json()["step_counts"] == {"executed": 0, "cached": 4, "changed": 0}
