"""What resuming a long run costs: ``wfctl resume`` of a run whose every step is cached.

Usage::

    python bench/resume_memory.py WORKDIR [--steps 100000] [--rounds 3]
        [--tree .] [--tree /tmp/before] [--postgres] [--job resume|run]

Writes a workflow of N steps, each returning a 100-character string, that then fails (unless
``RESUME_BENCH_PASS`` is set), and runs it once into ``WORKDIR/store`` (reused later for the
same N). Then, for each checkout named by ``--tree`` (its code run with ``PYTHONPATH=<tree>``,
as ``bench/store_commands.py`` runs it), round by round in rotating order, times ``wfctl
resume RUN`` of a fresh copy of that failed run: every step is served from its record, then
the run completes. Prints each tree's median wall and CPU seconds and peak RSS (the resuming
process's, from ``wait4``). Issue 14's target: 100,000 cached steps resumed in ≤ 100 MB.

With ``--postgres`` the run is resumed on a private PostgreSQL server (``fsync`` on) instead:
before each resume the run is deleted there and copied again from the directory store
(``wfctl rm``, ``wfctl copy``, neither timed).

With ``--job run`` it times ``wfctl run`` of the same workflow instead, into an empty directory
store each round (``--durability none``, so the disk's sync times stay out), every step executed
and the run completed: issue 14's target for a run's own memory, flat in its length and ≤ 40
MB at 100,000 steps.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import shutil
import statistics
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

BENCH = Path(__file__).resolve().parent
sys.path[:0] = [str(BENCH), str(BENCH.parent)]

from store_commands import spawn_wfctl  # noqa: E402 - needs the path above

_RUN = "resumed"

_WORKFLOW = """\
import os

from wfctl import step, workflow


@step
async def produce(i: int) -> str:
    return f"{i:09d}-" + "x" * 90


@workflow(name="resume_bench")
async def resume_bench(n: int) -> int:
    total = 0
    for i in range(n):
        total += len(await produce(i))
    if not os.environ.get("RESUME_BENCH_PASS"):
        raise RuntimeError("failed after its steps")
    return total
"""


def _wfctl(tree: Path, args: list[str], *, expect: int = 0) -> tuple[float, float, float]:
    """Run ``wfctl ARGS`` from ``tree``; return (wall seconds, CPU seconds, peak RSS in MB)."""
    seconds, exit_code, usage = spawn_wfctl(tree, args)
    if exit_code != expect:
        raise SystemExit(f"wfctl {' '.join(args)} from {tree} exited {exit_code}")
    return seconds, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024


def _failed_run(workdir: Path, steps: int) -> Path:
    """Write the workflow and run it into ``WORKDIR/store`` once: its run fails after N steps."""
    workdir.mkdir(parents=True, exist_ok=True)
    target = workdir / "resume_bench.py"
    target.write_text(_WORKFLOW)
    store = workdir / "store"
    made = workdir / "store.steps"
    if made.exists() and made.read_text() == str(steps):
        return store
    shutil.rmtree(store, ignore_errors=True)
    args = ["run", f"{target}:resume_bench", "--input", str(steps), "--run-id", _RUN]
    _wfctl(BENCH.parent, [*args, "--store", str(store)], expect=1)
    made.write_text(str(steps))
    return store


@contextlib.contextmanager
def _store(workdir: Path, source: Path, postgres: bool) -> Iterator[tuple[str, Callable[[], None]]]:
    """Yield the store each resume runs in, and what puts the failed run back in it."""
    if not postgres:
        copy = workdir / "copy"

        def copy_directory() -> None:
            shutil.rmtree(copy, ignore_errors=True)
            shutil.copytree(source, copy, symlinks=True)

        yield str(copy), copy_directory
        return
    from wfctl.storage.testing import private_postgres

    with private_postgres() as server:
        url, copied = server.url, [False]

        def copy_rows() -> None:
            if copied[0]:
                _wfctl(BENCH.parent, ["rm", _RUN, "--store", url])
            _wfctl(BENCH.parent, ["copy", "--from", str(source), "--to", url, _RUN])
            copied[0] = True

        yield url, copy_rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("workdir", type=Path, help="where the store and its copies are made")
    parser.add_argument("--steps", type=int, default=100_000, help="cached steps in the run")
    parser.add_argument("--rounds", type=int, default=3, help="resumes of each tree")
    parser.add_argument("--tree", type=Path, action="append", help="checkout to time (repeat)")
    parser.add_argument("--postgres", action="store_true", help="resume on a PostgreSQL store")
    parser.add_argument(
        "--job", choices=["resume", "run"], default="resume", help="what each round times"
    )
    args = parser.parse_args()
    trees = [tree.resolve() for tree in args.tree or [BENCH.parent]]
    workdir = args.workdir.resolve()
    if args.job == "run":
        _time_runs(workdir, trees, args.steps, args.rounds)
        return
    source = _failed_run(workdir, args.steps)
    target = f"{workdir / 'resume_bench.py'}:resume_bench"
    os.environ["RESUME_BENCH_PASS"] = "1"  # the resumed run completes
    rows: dict[Path, list[tuple[float, float, float]]] = {tree: [] for tree in trees}
    with _store(workdir, source, args.postgres) as (store, put_back):
        for round_ in range(args.rounds):
            turn = round_ % len(trees)
            for tree in trees[turn:] + trees[:turn]:
                put_back()
                # --target: a database's run names code outside the tree's directory, refused
                # unless named (the same file the run recorded)
                resume = ["resume", _RUN, "--store", store, "--target", target]
                rows[tree].append(_wfctl(tree, resume))
    where = "PostgreSQL" if args.postgres else "a directory"
    _report(f"resume of {args.steps:,} cached steps on {where}", args.rounds, rows)


def _time_runs(workdir: Path, trees: list[Path], steps: int, rounds: int) -> None:
    """Time ``wfctl run`` of N steps into an empty store, round by round, the trees rotated."""
    workdir.mkdir(parents=True, exist_ok=True)
    target = workdir / "resume_bench.py"
    target.write_text(_WORKFLOW)
    os.environ["RESUME_BENCH_PASS"] = "1"  # the run completes
    store = workdir / "runs"
    rows: dict[Path, list[tuple[float, float, float]]] = {tree: [] for tree in trees}
    for round_ in range(rounds):
        turn = round_ % len(trees)
        for tree in trees[turn:] + trees[:turn]:
            shutil.rmtree(store, ignore_errors=True)
            run = ["run", f"{target}:resume_bench", "--input", str(steps), "--store", str(store)]
            rows[tree].append(_wfctl(tree, [*run, "--durability", "none"]))
    _report(f"run of {steps:,} steps on a directory", rounds, rows)


def _report(what: str, rounds: int, rows: dict[Path, list[tuple[float, float, float]]]) -> None:
    print(f"{what}, {rounds} rounds (medians):")
    for tree, measured in rows.items():
        wall, cpu, rss = (statistics.median(column) for column in zip(*measured, strict=True))
        print(f"  {tree}: {wall:.2f} s wall, {cpu:.2f} s CPU, {rss:.0f} MB peak RSS")


if __name__ == "__main__":
    main()
