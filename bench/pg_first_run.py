"""What a process's first PostgreSQL run costs beyond its second: wall time of both, per tree.

Usage::

    python bench/pg_first_run.py [--processes 12] [--steps 3] [--tree .] [--tree /tmp/before]

One private PostgreSQL server (``wfctl.storage.testing.private_postgres()``). Process by
process, the trees named by ``--tree`` alternated (each once per round, so all see the same
load), a fresh Python process imports the tree's wfctl, opens a store with ``open_storage(url)``
and reads from it once (``get_latest``: the store connects, checks the schema and opens its
pool, untimed), then times two runs of a workflow of ``--steps`` sequential steps. Prints, per
tree, the median wall time of the first run and of the second, in milliseconds, with the
range. The first pays what a process does once: its first lease's connection (or not), the
code signature of the workflow, each server process's first use of the schema.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # the wfctl being developed

from wfctl.storage.testing import private_postgres

#: The timed program: argv is TREE URL STEPS; prints the two runs' milliseconds.
_CHILD = """
import asyncio, sys, time
tree, url, steps = sys.argv[1:]
sys.path.insert(0, tree)
from wfctl import step, workflow
from wfctl.storage import open_storage

@step
async def produce(i: int) -> str:
    return str(i)

@workflow(name="first_run")
async def first_run(n: int) -> int:
    for i in range(n):
        await produce(i)
    return n

async def main() -> None:
    storage = open_storage(url)
    try:
        await storage.get_latest(run_id="none")
        times = []
        for _ in range(2):
            started = time.perf_counter()
            result = await first_run.build(checkpoint_storage=storage).run(int(steps))
            times.append((time.perf_counter() - started) * 1000)
            assert result.status == "completed", result.status
        print(*times)
    finally:
        await storage.aclose()

asyncio.run(main())
"""


def main() -> None:
    """Time the first and second runs of fresh processes and print the medians."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--processes", type=int, default=12, help="processes per tree")
    parser.add_argument("--steps", type=int, default=3, help="steps per run")
    parser.add_argument("--tree", type=Path, action="append", help="wfctl checkout(s) to time")
    options = parser.parse_args()
    trees = [t.resolve() for t in options.tree or [Path(__file__).resolve().parent.parent]]
    times: dict[Path, list[tuple[float, float]]] = {tree: [] for tree in trees}
    with private_postgres() as server:
        for _ in range(options.processes):
            for tree in trees:
                command = [sys.executable, "-c", _CHILD, str(tree), server.url, str(options.steps)]
                done = subprocess.run(command, capture_output=True, text=True, check=False)
                if done.returncode != 0:
                    sys.exit(f"pg_first_run: the timed process failed in {tree}: {done.stderr}")
                first, second = map(float, done.stdout.split())
                times[tree].append((first, second))
    for tree, pairs in times.items():
        firsts, seconds = [p[0] for p in pairs], [p[1] for p in pairs]
        print(
            f"{tree}: first run {statistics.median(firsts):.2f} ms"
            f" ({min(firsts):.2f}-{max(firsts):.2f}), second {statistics.median(seconds):.2f} ms"
            f" ({min(seconds):.2f}-{max(seconds):.2f}); {len(pairs)} processes, "
            f"{options.steps} steps a run"
        )


if __name__ == "__main__":
    main()
