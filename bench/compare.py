"""Compare wfctl's per-step cost in two checkouts, interleaved, against the fdatasync floor.

Each round runs three fresh processes in rotating order: the floor, wfctl from ``--before``
and wfctl from ``--after`` (each checkout's own ``bench/_worker.py``, which imports wfctl from
that checkout), sequential steps (or ``--scenario fanout``: one ``asyncio.gather`` of N steps;
no floor then) into a new store. Ratios are taken within a round, so a round that hits a slow
disk moment slows all three alike. Besides the wall time the worker reports, each process's CPU
time (``time.process_time``) around the measurement is reported: the engine and wfctl are
imported before it starts, so interpreter start-up and imports are not counted; on a machine
others share, CPU is the steadier figure.

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

#: Runs one measurement of a checkout's ``bench/_worker.py`` with its CPU time around it:
#: argv is TREE ENGINE SCENARIO N STORE OPTIONS (a JSON object).
_CPU_WRAPPER = """
import json, sys, time
from pathlib import Path
tree, engine, scenario, n, store, options = sys.argv[1:]
sys.path[:0] = [str(Path(tree) / "bench"), tree]
import _worker
_worker.load(engine)
started = time.process_time()
row = _worker.measure(engine, scenario, int(n), Path(store), json.loads(options))
row["cpu_seconds"] = time.process_time() - started
print(json.dumps(row))
"""


def _measure(
    tree: Path, engine: str, scenario: str, n: int, workdir: Path, options: dict[str, object]
) -> tuple[float, float]:
    """Return the wall and CPU seconds per step of one fresh process."""
    store = tempfile.mkdtemp(dir=workdir)
    try:
        done = subprocess.run(
            [
                sys.executable,
                "-c",
                _CPU_WRAPPER,
                str(tree),
                engine,
                scenario,
                str(n),
                store,
                json.dumps(options),
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
    return float(row["seconds"]) / n, float(row["cpu_seconds"]) / n


def main() -> None:
    """Run the rounds and print medians, ranges and the within-round ratios."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--before", type=Path, required=True, help="checkout measured as before")
    parser.add_argument("--after", type=Path, default=Path("."), help="checkout measured as after")
    parser.add_argument("--n", type=int, default=1000, help="steps per run")
    parser.add_argument(
        "--scenario", choices=("sequential", "fanout"), default="sequential", help="what runs"
    )
    parser.add_argument("--rounds", type=int, default=20, help="rounds of three runs")
    parser.add_argument("--workdir", type=Path, help="where stores are made (default: a temp dir)")
    parser.add_argument(
        "--option",
        action="append",
        default=[],
        metavar="KEY=JSON",
        help="scenario option for every process, e.g. durability='\"none\"' (no fdatasync: CPU)",
    )
    args = parser.parse_args()
    options = {k: json.loads(v) for k, _, v in (o.partition("=") for o in args.option)}
    workdir = args.workdir or Path(tempfile.mkdtemp(prefix="wfctl-compare-"))
    jobs = {
        "floor": (args.after.resolve(), "floor"),
        "before": (args.before.resolve(), "wfctl"),
        "after": (args.after.resolve(), "wfctl"),
    }
    if args.scenario != "sequential":  # the floor appends records one after another only
        del jobs["floor"]
    names = list(jobs)
    times: dict[str, list[float]] = {name: [] for name in names}
    cpu: dict[str, list[float]] = {name: [] for name in names}
    for round_ in range(args.rounds):
        turn = round_ % len(names)
        for name in names[turn:] + names[:turn]:
            tree, engine = jobs[name]
            wall, used = _measure(tree, engine, args.scenario, args.n, workdir, options)
            times[name].append(wall)
            cpu[name].append(used)
    for name in names:
        values, used = times[name], cpu[name]
        print(
            f"{name:7s} per step: median {statistics.median(values) * 1e3:.3f} ms "
            f"(min {min(values) * 1e3:.3f}, max {max(values) * 1e3:.3f}); "
            f"CPU median {statistics.median(used) * 1e3:.3f} ms "
            f"(min {min(used) * 1e3:.3f}, max {max(used) * 1e3:.3f})"
        )
    pairs = [(o, u) for o, u in (("before", "floor"), ("after", "floor"), ("after", "before"))]
    for over, under in [(o, u) for o, u in pairs if u in jobs]:
        for what, series in (("wall", times), ("CPU", cpu)):
            ratios = [a / b for a, b in zip(series[over], series[under], strict=True)]
            print(
                f"{over} / {under} {what} (same round): median {statistics.median(ratios):.3f}x, "
                f"range {min(ratios):.2f}-{max(ratios):.2f}x"
            )


if __name__ == "__main__":
    main()
