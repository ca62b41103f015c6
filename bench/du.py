"""``wfctl du`` over a big file store: wall seconds, CPU seconds and peak RSS of the process.

Usage::

    python bench/du.py WORKDIR [--big-mb 1024] [--small-mb 100] [--rounds 3] [--tree .]

Fills two stores under ``WORKDIR`` (each once; kept for the next call) through the engine,
non-durable to fill them quickly, in a process of their own (a child's peak RSS starts from
its parent's at the fork, so the measuring process stays small): ``big``, runs of 100 steps whose results are 1 MB each,
``--big-mb`` in all; ``small``, runs of 1,000 steps whose results are about 1 KB,
``--small-mb`` in all. Then runs ``wfctl du --json`` (every record read and verified) on each,
a fresh process per round from each ``--tree`` (a checkout), and prints the median wall and
CPU seconds and the highest peak RSS, with the bytes ``du`` counted. Memory that stays flat
is the same peak for both stores, whatever their size.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from store_commands import tree_column  # bench/, this script's directory, leads sys.path

from wfctl import FileCheckpointStorage, step, workflow

MB = 1_000_000


@step
async def produce(i: int, size: int) -> str:
    """A step whose result is ``size`` characters."""
    return f"{i:08d}" + "x" * (size - 8)


@workflow
async def filler(shape: list[int]) -> int:
    """Run ``shape[0]`` steps, each returning ``shape[1]`` characters."""
    steps, size = shape
    for i in range(steps):
        await produce(i, size)
    return steps


def fill(store: Path, total: int, steps: int, size: int) -> None:
    """Write runs of ``steps`` steps of ``size`` bytes until about ``total`` bytes are stored."""
    if (store / "runs").is_dir():
        return
    bound = filler.build(checkpoint_storage=FileCheckpointStorage(store, durable=False))
    runs = max(1, total // (steps * size))

    async def write() -> None:
        for _ in range(runs):
            result = await bound.run([steps, size])
            assert result.status == "completed", result

    asyncio.run(write())


def measured(tree: Path, store: Path) -> tuple[float, float, float, int]:
    """Run ``wfctl du --json`` from ``tree``: (wall s, CPU s, peak RSS MB, bytes counted)."""
    env = {**os.environ, "PYTHONPATH": str(tree.resolve())}
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    env["PYTHONPYCACHEPREFIX"] = str(Path(tempfile.gettempdir(), "wfctl-bench-pycache"))
    code = "import sys; from wfctl._cli import main; sys.argv[0] = 'wfctl'; main()"
    start = time.perf_counter()
    proc = subprocess.Popen(
        [sys.executable, "-c", code, "du", "--json", "--store", str(store)],
        stdout=subprocess.PIPE,
        env=env,
        cwd=tree,
    )
    out = proc.stdout.read() if proc.stdout is not None else b""
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - start
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"wfctl du --store {store} from {tree} failed")
    counted = int(json.loads(out)["size_bytes"])
    return wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024, counted


def main() -> None:
    """Fill the stores, measure, print one line per store and tree."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("workdir", type=Path)
    parser.add_argument("--big-mb", type=int, default=1024)
    parser.add_argument("--small-mb", type=int, default=100)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--tree", type=Path, action="append")
    parser.add_argument("--fill-only", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    trees = args.tree or [Path(".")]
    stores = {
        "big (1 MB results)": (args.workdir / "big", args.big_mb * MB, 100, MB),
        "small (1 KB results)": (args.workdir / "small", args.small_mb * MB, 1000, 1000),
    }
    if args.fill_only:
        for store, total, steps, size in stores.values():
            fill(store, total, steps, size)
        return
    subprocess.run([sys.executable, __file__, *sys.argv[1:], "--fill-only"], check=True)
    wide = tree_column(trees)
    print(f"{'store':<22} {'tree':<{wide}} {'MB':>8} {'wall s':>8} {'CPU s':>8} {'RSS MB':>8}")
    for name, (store, *_) in stores.items():
        rows: dict[Path, list[tuple[float, float, float, int]]] = {tree: [] for tree in trees}
        for _ in range(args.rounds):  # the trees alternated, round by round
            for tree in trees:
                rows[tree].append(measured(tree, store))
        for tree, values in rows.items():
            wall = statistics.median(v[0] for v in values)
            cpu = statistics.median(v[1] for v in values)
            rss = max(v[2] for v in values)
            counted = values[0][3] / MB
            print(f"{name:<22} {tree!s:<{wide}} {counted:8.0f} {wall:8.2f} {cpu:8.2f} {rss:8.1f}")


if __name__ == "__main__":
    main()
