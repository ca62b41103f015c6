"""What replaying a long run costs: ``wfctl replay`` and ``--json`` of a 100,000-step run.

Usage::

    python bench/replay_memory.py WORKDIR [--steps 100000] [--rounds 3]
        [--tree /tmp/before] [--tree .]

Writes a sequential workflow of N steps, each returning a short string, and runs it once into
``WORKDIR/store`` (``--durability none``; reused later for the same N). Then, round by round,
the checkouts rotated, runs ``wfctl replay -c RUN.HEAD`` (the run's head: every step is served from
its record, then the replay is compared with the source) and the same with ``--json``, each
in a fresh process under ``/usr/bin/time -f %M``: its peak RSS is the child's own (``wait4``
in this process would report at least this process's peak, which a child inherits at exec).
Without ``--tree`` the installed ``wfctl`` (beside this interpreter) runs; with it, each tree's
code (``PYTHONPATH=<tree>``). Each replay's own store is removed after it, so every round
replays the same run into the same store.

Prints, per tree and job, the medians of wall seconds, seconds to the first step row on
stdout (the first step's key written) and peak RSS. The target: 100,000 steps replayed
in <= 100 MB, the first row in <= 1 s.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from store_commands import tree_column  # bench/ is on the path: these are scripts

_RUN = "replayed"
_FIRST_KEY = b"produce#0"

_WORKFLOW = """\
from wfctl import step, workflow


@step
async def produce(i: int) -> str:
    return f"v{i}"


@workflow(name="replay_bench")
async def replay_bench(n: int) -> int:
    total = 0
    for i in range(n):
        total += len(await produce(i))
    return total
"""


def _command(tree: Path | None, args: list[str]) -> tuple[list[str], dict[str, str], Path]:
    """The command line, environment and directory that run ``wfctl ARGS`` (see the docstring)."""
    env = {**os.environ, "COLUMNS": "120"}
    if tree is None:
        return [str(Path(sys.executable).parent / "wfctl"), *args], env, Path.cwd()
    env["PYTHONPATH"] = str(tree)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    env["PYTHONPYCACHEPREFIX"] = str(Path(tempfile.gettempdir(), "wfctl-bench-pycache"))
    code = "import sys; from wfctl._cli import main; sys.argv[0] = 'wfctl'; main()"
    return [sys.executable, "-c", code, *args], env, tree


def _measure(tree: Path | None, args: list[str], expect: int = 0) -> tuple[float, float, float]:
    """Run ``wfctl ARGS``; return (wall seconds, seconds to the first step row, peak RSS MB)."""
    command, env, cwd = _command(tree, args)
    with tempfile.NamedTemporaryFile("r", suffix=".rss") as rss:
        timed = ["/usr/bin/time", "-f", "%M", "-o", rss.name, *command]
        start = time.perf_counter()
        proc = subprocess.Popen(timed, stdout=subprocess.PIPE, env=env, cwd=cwd)
        assert proc.stdout is not None
        first, seen = float("nan"), b""
        while chunk := proc.stdout.read1(65536):
            if first != first:  # not seen yet (NaN)
                seen = seen[-len(_FIRST_KEY) :] + chunk
                if _FIRST_KEY in seen:
                    first = time.perf_counter() - start
        code = proc.wait()
        wall = time.perf_counter() - start
        if code != expect:
            raise SystemExit(f"wfctl {' '.join(args)} exited {code}")
        peak_kb = int(Path(rss.name).read_text().split()[-1])
    return wall, first, peak_kb / 1024


def _source_run(workdir: Path, steps: int) -> Path:
    """Write the workflow and run it into ``WORKDIR/store`` once: a completed run of N steps."""
    workdir.mkdir(parents=True, exist_ok=True)
    target = workdir / "replay_bench.py"
    target.write_text(_WORKFLOW)
    store = workdir / "store"
    made = workdir / "store.steps"
    if made.exists() and made.read_text() == str(steps):
        return store
    shutil.rmtree(store, ignore_errors=True)
    args = ["run", f"{target}:replay_bench", "--input", str(steps), "--run-id", _RUN]
    _measure(None, [*args, "--durability", "none", "--store", str(store)])
    made.write_text(str(steps))
    return store


def _drop_replays(store: Path) -> None:
    """Remove every run but the source, so each round starts from the same store."""
    for run in (store / "runs").iterdir():
        if run.name != _RUN:
            shutil.rmtree(run)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("workdir", type=Path, help="where the store is made and kept")
    parser.add_argument("--steps", type=int, default=100_000, help="steps in the source run")
    parser.add_argument("--rounds", type=int, default=3, help="replays of each job and tree")
    parser.add_argument("--tree", type=Path, action="append", help="checkout to run (repeat)")
    args = parser.parse_args()
    trees: list[Path | None] = [t.resolve() for t in args.tree] if args.tree else [None]
    store = _source_run(args.workdir.resolve(), args.steps)
    head = f"{_RUN}.{args.steps + 1}"  # the root, a record a step, the completion
    jobs = {
        "replay": ["replay", "-c", head, "--store", str(store)],
        "replay --json": ["replay", "-c", head, "--json", "--store", str(store)],
    }
    rows: dict[tuple[str, str], list[tuple[float, float, float]]] = {}
    for round_ in range(args.rounds):
        turn = round_ % len(trees)
        for tree in trees[turn:] + trees[:turn]:
            for job, job_args in jobs.items():
                rows.setdefault((str(tree or "installed"), job), []).append(
                    _measure(tree, job_args)
                )
                _drop_replays(store)
    print(f"replay of a {args.steps:,}-step run, median of {args.rounds}")
    width = tree_column(tree_name for tree_name, _ in rows)
    print(f"{'tree':{width}} {'job':14} {'wall s':>8} {'first row s':>12} {'peak MB':>8}")
    for (tree_name, job), measured in rows.items():
        wall, first, peak = (statistics.median(column) for column in zip(*measured, strict=True))
        print(f"{tree_name:{width}} {job:14} {wall:8.2f} {first:12.2f} {peak:8.1f}")


if __name__ == "__main__":
    main()
