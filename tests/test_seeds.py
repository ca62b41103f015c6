"""Both upstream reproductions, ported by their import line only, print the right answer."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

SEEDS = Path(__file__).parent / "seeds"


def _run(script: str) -> str:
    done = subprocess.run(
        [sys.executable, str(SEEDS / script)], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_report_000_replay_keeps_each_branch_result() -> None:
    out = _run("seed_000_replay_swap.py").splitlines()
    assert out == [
        "initial: [['result:A', 'result:B']]",
        "replayed: [['result:A', 'result:B']]",
        "executed shared inputs: ['B', 'A']",  # the replay served both, executed neither
    ]


def test_report_004_parallel_steps_keep_one_lineage() -> None:
    out = dict(line.split(": ") for line in _run("seed_004_lineage_fork.py").splitlines())
    assert out["root count"] == "1"
    assert out["unreachable from latest"] == "0"
    assert int(out["checkpoint count"]) >= 2
