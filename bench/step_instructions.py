"""Instructions the client executes per sequential step, counted by valgrind (not timed).

On a shared machine wall and CPU times of a step move by 30% from one minute to the next; the
number of instructions the interpreter executes does not (about 1% between runs). This runs a
workflow of N sequential steps twice under ``valgrind --tool=callgrind`` (N = ``--short`` and
``--long``) and prints ``(instructions(long) - instructions(short)) / (long - short)``, so
start-up, imports and what a run does once are not counted. Only the Python process is
counted: a PostgreSQL server (``--store postgres``, a private one) runs untraced beside it.

``--count replay-read`` and ``--count resume-read`` count what reading such a run back costs
per record instead: each run is written first, untraced (file store, ``--durability none``),
then read by a counted process as ``wfctl replay`` reads its source before it replays
(``read_source``) or as ``wfctl resume`` reads the run it resumes (``load_folded``).

Usage::

    python bench/step_instructions.py [--tree DIR ...] [--store file|postgres]
        [--arg str|int] [--durability none|batch|full] [--short 500] [--long 1500]
        [--count run|replay-read|resume-read]

Each ``--tree`` is a wfctl checkout to count (default: this one), in the order given. Needs
``valgrind`` on PATH; a slowdown of about 50 times makes a count take 20 to 40 s.
"""

from __future__ import annotations

import argparse
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

#: The counted program: argv is TREE STORE ARG DURABILITY N [DIR]. With DIR (a file store), the
#: run is written there and its id and head's checkpoint id are printed.
_CHILD = """
import asyncio, sys, tempfile
tree, store, kind, durability, n, *where = sys.argv[1:]
sys.path.insert(0, tree)
from wfctl import FileCheckpointStorage, step, workflow
from wfctl.storage import open_storage

@step
async def produce(i: int) -> str:
    return f"{i:09d}-" + "x" * 90

@step
async def echo(text: str) -> str:
    return text

@workflow(name="counted")
async def counted(n: int) -> int:
    total = 0
    for i in range(n):
        if kind == "int":
            total += len(await produce(i))
        else:
            total += len(await echo(f"{i:09d}-" + "x" * 90))
    return total

async def main(storage) -> None:
    try:
        result = await counted.build(checkpoint_storage=storage).run(int(n))
        assert result.status == "completed", result.status
        print(result.run_id, result.checkpoint_id)
    finally:
        await storage.aclose()

if store == "postgres":
    from wfctl.storage.testing import private_postgres
    with private_postgres() as server:
        asyncio.run(main(open_storage(server.url)))
else:
    directory = where[0] if where else tempfile.mkdtemp()
    asyncio.run(main(FileCheckpointStorage(directory, durability=durability)))
"""

#: The counted reader: argv is TREE COUNT DIR RUN_ID CHECKPOINT_ID.
_READER = """
import asyncio, sys
tree, count, directory, run_id, checkpoint_id = sys.argv[1:]
sys.path.insert(0, tree)
from wfctl import FileCheckpointStorage
from wfctl._engine._restore import load_folded
from wfctl._inspect._replay import read_source

storage = FileCheckpointStorage(directory)
if count == "replay-read":
    asyncio.run(read_source(storage, checkpoint_id))
else:
    asyncio.run(load_folded(storage, run_id))
"""


def _count(tree: Path, args: argparse.Namespace, n: int) -> int:
    program = [sys.executable, "-c", _CHILD, str(tree), args.store, args.arg, args.durability]
    if args.count != "run":
        with tempfile.TemporaryDirectory() as directory:
            written = subprocess.run(
                [*program[:-1], "none", str(n), directory],
                capture_output=True,
                text=True,
                check=False,
            )
            if written.returncode != 0:
                sys.exit(f"step_instructions: the run to read failed in {tree}: {written.stderr}")
            run_id, checkpoint_id = written.stdout.split()
            reader = [sys.executable, "-c", _READER, str(tree), args.count, directory]
            return _counted(tree, [*reader, run_id, checkpoint_id])
    return _counted(tree, [*program, str(n)])


def _counted(tree: Path, program: list[str]) -> int:
    command = ["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null", *program]
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    found = re.search(r"Collected : ([\d,]+)", done.stderr)
    if done.returncode != 0 or found is None:
        sys.exit(f"step_instructions: the counted run failed in {tree}: {done.stderr[-2000:]}")
    return int(found.group(1).replace(",", ""))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--tree", type=Path, action="append", help="a wfctl checkout to count")
    parser.add_argument("--store", choices=("file", "postgres"), default="file")
    parser.add_argument("--arg", choices=("str", "int"), default="str", help="the steps' argument")
    parser.add_argument("--durability", choices=("none", "batch", "full"), default="none")
    parser.add_argument("--short", type=int, default=500)
    parser.add_argument("--long", type=int, default=1500)
    parser.add_argument(
        "--count",
        choices=("run", "replay-read", "resume-read"),
        default="run",
        help="what is counted: a run's steps, or a read of its records before a replay or resume",
    )
    args = parser.parse_args()
    if shutil.which("valgrind") is None:
        sys.exit("step_instructions: valgrind is not on PATH")
    if args.count != "run" and args.store != "file":
        sys.exit("step_instructions: --count replay-read and resume-read read a file store")
    if not 0 < args.short < args.long:
        sys.exit("step_instructions: --short must be positive and below --long")
    trees = args.tree or [Path(__file__).resolve().parent.parent]
    for tree in trees:
        tree = tree.resolve()
        short, long = _count(tree, args, args.short), _count(tree, args, args.long)
        per_step = (long - short) / (args.long - args.short)
        if args.count == "run":
            what = f"per step ({args.store}, {args.arg} argument)"
        else:
            what = f"per record read ({args.count}, {args.arg} argument)"
        print(f"{tree}: {per_step:,.0f} instructions {what}")


if __name__ == "__main__":
    main()
