"""What big values cost in memory: a pipeline whose every step takes and returns a big text.

Usage::

    python bench/big_values_memory.py WORKDIR [--mb 20] [--steps 24] [--rounds 1]
        [--tree .] [--tree /tmp/before]

Writes a workflow whose body makes a text of ``--mb`` million ASCII characters and hands it
through ``--steps`` steps, each returning a new text of the same size (the one it was given
less its first character, plus one): each step's argument is the step before's result, as a
pipeline is written. For each checkout named by ``--tree`` (its code run with
``PYTHONPATH=<tree>``, as ``bench/store_commands.py`` runs it), round by round in rotating
order, runs ``wfctl run`` into a fresh store (``--durability none``: the disk stays out), then
``wfctl log RUN -v``, ``wfctl log RUN --json``, ``wfctl export RUN`` and
``wfctl replay -c RUN.HEAD`` of that run, each a fresh process; prints each one's median wall
seconds and peak RSS (``wait4``: a child's peak is at least this process's, about 20 MB, well
below what is measured).

What a run holds beside the text it is handed: format version 3's writer holds the results it
may refer to (``_records/_refs.py``, ``HELD_MAX``), its readers the step results of the records
a reference may name.
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parent
sys.path[:0] = [str(BENCH), str(BENCH.parent)]

from store_commands import spawn_wfctl, tree_column  # noqa: E402 - needs the path above

_RUN = "big"

_WORKFLOW = """\
from wfctl import step, workflow


@step
async def grow(text: str, i: int) -> str:
    return text[1:] + chr(97 + i % 26)


@workflow(name="big_values")
async def big_values(shape: list[int]) -> int:
    size, steps = shape
    text = "".join(chr(97 + (i * 7919) % 26) for i in range(size))
    for i in range(steps):
        text = await grow(text, i)
    return len(text)
"""


def _measured(tree: Path, args: list[str]) -> tuple[float, float]:
    """Run ``wfctl ARGS`` from ``tree``; return (wall seconds, peak RSS in MB)."""
    seconds, exit_code, usage = spawn_wfctl(tree, args)
    if exit_code != 0:
        raise SystemExit(f"wfctl {' '.join(args)} from {tree} exited {exit_code}")
    return seconds, usage.ru_maxrss / 1024


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("workdir", type=Path, help="where the workflow and stores are made")
    parser.add_argument("--mb", type=int, default=20, help="the text's size, in millions")
    parser.add_argument("--steps", type=int, default=24, help="steps the text goes through")
    parser.add_argument("--rounds", type=int, default=1, help="runs of each tree")
    parser.add_argument("--tree", type=Path, action="append", help="checkout to run (repeat)")
    args = parser.parse_args()
    trees: list[Path] = [t.resolve() for t in args.tree] if args.tree else [BENCH.parent]
    workdir = args.workdir.resolve()
    workdir.mkdir(parents=True, exist_ok=True)
    target = workdir / "big_values.py"
    target.write_text(_WORKFLOW)
    shape = f"[{args.mb * 1_000_000}, {args.steps}]"
    head = f"{_RUN}.{args.steps + 1}"  # the root, a record a step, the completion
    rows: dict[tuple[str, str], list[tuple[float, float]]] = {}
    for round_ in range(args.rounds):
        turn = round_ % len(trees)
        for tree in trees[turn:] + trees[:turn]:
            store = workdir / "store"
            shutil.rmtree(store, ignore_errors=True)
            at = ["--store", str(store)]
            run = ["run", f"{target}:big_values", "--input", shape, "--run-id", _RUN]
            jobs = {
                "run": [*run, "--durability", "none", *at],
                "log -v": ["log", _RUN, "-v", *at],
                "log --json": ["log", _RUN, "--json", *at],
                "export": ["export", _RUN, *at],
                "replay": ["replay", "-c", head, *at],
            }
            for job, job_args in jobs.items():
                rows.setdefault((str(tree), job), []).append(_measured(tree, job_args))
    print(f"{args.steps} steps handing on a text of {args.mb:,} MB, median of {args.rounds}")
    width = tree_column(tree_name for tree_name, _ in rows)
    print(f"{'tree':{width}} {'job':10} {'wall s':>8} {'peak MB':>8}")
    for (tree_name, job), measured in rows.items():
        wall, peak = (statistics.median(column) for column in zip(*measured, strict=True))
        print(f"{tree_name:{width}} {job:10} {wall:8.2f} {peak:8.1f}")


if __name__ == "__main__":
    main()
