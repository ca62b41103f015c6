"""Compare wfctl's per-step cost in two checkouts, interleaved, against the fdatasync floor.

Each round runs three fresh processes in rotating order: the floor, wfctl from ``--before``
and wfctl from ``--after`` (each checkout's own ``bench/_worker.py``, which imports wfctl from
that checkout), sequential steps into a new store. Ratios are taken within a round, so a round
that hits a slow disk moment slows all three alike.

Usage::

    git worktree add /tmp/before <commit>
    python bench/compare.py --before /tmp/before --after . --n 1000 --rounds 20
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path


def _measure(tree: Path, engine: str, n: int, workdir: Path) -> float:
    store = tempfile.mkdtemp(dir=workdir)
    try:
        done = subprocess.run(
            [
                sys.executable,
                str(tree / "bench" / "_worker.py"),
                engine,
                "sequential",
                str(n),
                store,
            ],
            capture_output=True,
            text=True,
            check=True,
            env={**os.environ, "PYTHONPATH": str(tree)},
        )
    finally:
        shutil.rmtree(store, ignore_errors=True)
    row = json.loads(done.stdout.strip().splitlines()[-1])
    if row["status"] != "ok":
        raise SystemExit(f"{engine} in {tree}: {row['status']} {row.get('note', '')}")
    return float(row["seconds"]) / n


def main() -> None:
    """Run the rounds and print medians, ranges and the within-round ratios."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--before", type=Path, required=True, help="checkout measured as before")
    parser.add_argument("--after", type=Path, default=Path("."), help="checkout measured as after")
    parser.add_argument("--n", type=int, default=1000, help="sequential steps per run")
    parser.add_argument("--rounds", type=int, default=20, help="rounds of three runs")
    parser.add_argument("--workdir", type=Path, help="where stores are made (default: a temp dir)")
    args = parser.parse_args()
    workdir = args.workdir or Path(tempfile.mkdtemp(prefix="wfctl-compare-"))
    jobs = {
        "floor": (args.after.resolve(), "floor"),
        "before": (args.before.resolve(), "wfctl"),
        "after": (args.after.resolve(), "wfctl"),
    }
    names = list(jobs)
    times: dict[str, list[float]] = {name: [] for name in names}
    for round_ in range(args.rounds):
        for name in names[round_ % 3 :] + names[: round_ % 3]:
            tree, engine = jobs[name]
            times[name].append(_measure(tree, engine, args.n, workdir))
    for name, values in times.items():
        print(
            f"{name:7s} per step: median {statistics.median(values) * 1e3:.3f} ms "
            f"(min {min(values) * 1e3:.3f}, max {max(values) * 1e3:.3f})"
        )
    for over, under in (("before", "floor"), ("after", "floor"), ("after", "before")):
        ratios = [a / b for a, b in zip(times[over], times[under], strict=True)]
        print(
            f"{over} / {under} (same round): median {statistics.median(ratios):.3f}x, "
            f"range {min(ratios):.2f}-{max(ratios):.2f}x"
        )


if __name__ == "__main__":
    main()
