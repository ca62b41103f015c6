"""A sequential workflow against the fsync floor, as an independent bench measures it.

Usage::

    python bench/sequential_floor.py [--tree .] [--tree /tmp/before] [--n 1000] [--rounds 9]
                                     [--modes full,batch] [--dir DIR]

Each round starts, in rotating order, one fresh process per measurement, all writing into one
directory (``--dir``, default a temporary directory under the current one, on the disk the
benchmarks use):

- ``floor``: opens a file and makes N ``os.write`` calls of a 300-byte record, each followed by
  ``os.fsync`` (not ``fdatasync``: what a bench written without wfctl's own floor would use);
- for each checkout named by ``--tree`` (its code imported through ``PYTHONPATH``) and each
  durability mode: a ``@workflow`` whose body awaits N ``@step`` calls in turn, each taking and
  returning a 100-character string, on a ``FileCheckpointStorage`` of that mode in a fresh
  store. The time runs from just before the first step is called to just after the last one
  returned, in the body: the run's root commit and its ending are not in it.

Printed: per measurement the median ms per step over the rounds and its range, and the median of
the ratios to the floor taken within each round (a slow disk moment slows a round's processes
alike). Each process also reports its CPU time over the same span (``time.process_time``).
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

REPO = Path(__file__).resolve().parent.parent
_CHARS = 100
_RECORD = 300


def _text(i: int) -> str:
    return (f"{i:08d}" * (_CHARS // 8 + 1))[:_CHARS]


def _floor(directory: Path, n: int) -> tuple[float, float]:
    """N writes of a 300-byte record, each followed by ``os.fsync``: wall and CPU seconds."""
    records = [(_text(i) * 3)[: _RECORD - 1].encode() + b"\n" for i in range(n)]
    fd = os.open(directory / "floor.log", os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    try:
        wall, cpu = time.perf_counter(), time.process_time()
        for record in records:
            os.write(fd, record)
            os.fsync(fd)
        return time.perf_counter() - wall, time.process_time() - cpu
    finally:
        os.close(fd)


def _workflow(directory: Path, n: int, mode: str) -> tuple[float, float]:
    """N sequential steps of a 100-character string on a file store: wall and CPU seconds."""
    from wfctl import FileCheckpointStorage, step, workflow

    span: list[float] = []

    @step
    async def echo(text: str) -> str:
        return text[::-1]

    @workflow(name="sequential_floor")
    async def body(count: int) -> str:
        result = ""
        span.extend((time.perf_counter(), time.process_time()))
        for i in range(count):
            result = await echo(_text(i))
        span.extend((time.perf_counter(), time.process_time()))
        return result

    storage = FileCheckpointStorage(directory / "store", durability=mode)
    result = asyncio.run(body.build(checkpoint_storage=storage).run(n))
    if result.status != "completed":
        raise SystemExit(f"the run ended {result.status}")
    return span[2] - span[0], span[3] - span[1]


def _child(what: str, directory: Path, n: int) -> None:
    wall, cpu = _floor(directory, n) if what == "floor" else _workflow(directory, n, what)
    print(json.dumps({"seconds": wall, "cpu_seconds": cpu}))


def _measure(tree: Path | None, what: str, directory: Path, n: int) -> tuple[float, float]:
    """Run one fresh process; return its wall and CPU seconds per step."""
    env = dict(os.environ)
    if tree is not None:
        env["PYTHONPATH"] = str(tree)
    with tempfile.TemporaryDirectory(dir=directory) as place:
        done = subprocess.run(
            [sys.executable, __file__, "--child", what, "--n", str(n), "--dir", place],
            capture_output=True,
            text=True,
            env=env,
            cwd=tree or REPO,
            check=False,
        )
    if done.returncode != 0:
        raise SystemExit(f"{what} from {tree}: {done.stderr.strip()[-500:]}")
    row = json.loads(done.stdout.strip().splitlines()[-1])
    return float(row["seconds"]) / n, float(row["cpu_seconds"]) / n


def main() -> None:
    """Run the rounds and print the medians and the ratios to the floor."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tree", type=Path, action="append", help="checkout(s) to measure")
    parser.add_argument("--n", type=int, default=1000, help="steps (and floor records) per run")
    parser.add_argument("--rounds", type=int, default=9)
    parser.add_argument("--modes", default="full,batch", help="durability modes to measure")
    parser.add_argument("--dir", type=Path, default=None, help="where the files are written")
    parser.add_argument("--child", default=None, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child is not None:
        _child(args.child, args.dir, args.n)
        return
    trees = [t.resolve() for t in args.tree or [REPO]]
    jobs: list[tuple[str, Path | None, str]] = [("floor", None, "floor")]
    jobs += [(f"{mode} {tree}", tree, mode) for tree in trees for mode in args.modes.split(",")]
    wall: dict[str, list[float]] = {name: [] for name, _, _ in jobs}
    cpu: dict[str, list[float]] = {name: [] for name, _, _ in jobs}
    with tempfile.TemporaryDirectory(dir=args.dir or os.getcwd()) as work:
        os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
        os.environ["PYTHONPYCACHEPREFIX"] = str(Path(work, "pycache"))
        for _, tree, what in jobs:  # untimed: the bytecode cache, the disk's first files
            _measure(tree, what, Path(work), min(args.n, 50))
        for round_ in range(args.rounds):
            turn = round_ % len(jobs)
            for name, tree, what in jobs[turn:] + jobs[:turn]:
                seconds, used = _measure(tree, what, Path(work), args.n)
                wall[name].append(seconds)
                cpu[name].append(used)
    print(f"{args.n} steps, {args.rounds} rounds; ms per step (median, min-max), CPU ms per step")
    for name, _, _ in jobs:
        ratios = [a / b for a, b in zip(wall[name], wall["floor"], strict=True)]
        print(
            f"{name:60s} {statistics.median(wall[name]) * 1e3:7.3f} "
            f"({min(wall[name]) * 1e3:.3f}-{max(wall[name]) * 1e3:.3f})  "
            f"CPU {statistics.median(cpu[name]) * 1e3:6.3f}  "
            f"÷ floor {statistics.median(ratios):5.2f}x ({min(ratios):.2f}-{max(ratios):.2f})"
        )


if __name__ == "__main__":
    main()
