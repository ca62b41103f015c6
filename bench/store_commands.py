"""What the store commands cost as the store grows: whole ``wfctl`` processes, timed.

Usage::

    python bench/store_commands.py WORKDIR [--sizes 1,1000,10000] [--rounds 5]
        [--tree .] [--tree /tmp/before] [--log-steps 100000 [--log-last 20]]
        [--gc [--gc-synced]]

Fills ``WORKDIR/runs-<size>`` (once; reused later) with completed runs of 10 steps each, then
times, for each checkout named by ``--tree`` (each run with ``PYTHONPATH=<tree>``), round by
round in rotating order so that both checkouts see the same disk and CPU moments:

- single-run commands (``log``, ``export``, ``pause`` of a finished run, ``show``) on one run of
  each store: their time should not depend on the store's size;
- ``runs`` (table, at 200 columns, and ``--json``) per run listed, on the largest store, beyond
  ``--help`` (as reported before) and beyond the same command on the smallest store (which
  also takes out what ``runs`` imports that ``--help`` does not);
- with ``--gc``: ``gc --keep 10`` on a copy of the largest store, per removed run, and the file
  system's own cost of removing a run directory (rename, then delete its files) beside it;
  with ``--gc-synced`` the copy is written to the device (``os.sync``) before each, as an old
  store's files are (deleting files just copied, still in the page cache, can cost less);
- with ``--log-steps N``: ``log``, ``log --json``, ``export`` and ``verify-lineage --json`` of
  one run of N steps, and how long
  ``log`` takes to print its first line (wall seconds only); with ``--log-last M`` too, ``log
  --last M`` of that run (a page: only trees that have the option, or the job is refused).

Each job's wall seconds, CPU seconds (user + system, of the process, from ``wait4``: less
disturbed by other load than wall time) and peak RSS are printed.

Wall times are medians over the rounds; they include interpreter start-up (also printed as
``--help``), which is the same for every size.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterable
from pathlib import Path
from typing import Any

BENCH = Path(__file__).resolve().parent


def tree_column(trees: Iterable[object], least: int = 24) -> int:
    """The width of a printed table's tree column: ``least``, or the longest tree's name and
    one more, so that a long path keeps the two spaces that part it from the next column."""
    return max([least, *(len(str(tree)) + 1 for tree in trees)])


def _fill(store: Path, runs: int, steps: int) -> None:
    sys.path.insert(0, str(BENCH))
    from list_runs_cost import fill

    if not (store / "runs").is_dir():
        asyncio.run(fill(store, runs, steps))


def _first_run(store: Path) -> str:
    return min(os.listdir(store / "runs"))


def spawn_wfctl(tree: Path, args: list[str]) -> tuple[float, int, Any]:
    """Run ``wfctl ARGS`` from the checkout ``tree``; return (wall seconds, exit code, rusage).

    The process runs that tree's code (``PYTHONPATH``, and ``cwd`` because ``python -c`` puts
    the working directory first on the path), with its output thrown away.
    """
    start = time.perf_counter()
    proc = _start_wfctl(tree, args, subprocess.DEVNULL)
    _, status, usage = os.wait4(proc.pid, 0)
    return time.perf_counter() - start, os.waitstatus_to_exitcode(status), usage


def _start_wfctl(tree: Path, args: list[str], stdout: int) -> subprocess.Popen[bytes]:
    """Start ``wfctl ARGS`` running the checkout ``tree``'s code (see :func:`spawn_wfctl`).

    From bytecode, as an installed wfctl runs: a private cache (``PYTHONPYCACHEPREFIX``) even
    where ``PYTHONDONTWRITEBYTECODE`` is set, so that no checkout is compiled at every start
    (as ``bench/startup.py`` does; a checkout without ``__pycache__`` would pay for it alone).
    """
    env = {**os.environ, "PYTHONPATH": str(tree.resolve()), "COLUMNS": "200"}
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    env["PYTHONPYCACHEPREFIX"] = str(Path(tempfile.gettempdir(), "wfctl-bench-pycache"))
    code = "import sys; from wfctl._cli import main; sys.argv[0] = 'wfctl'; main()"
    return subprocess.Popen(
        [sys.executable, "-c", code, *args],
        stdout=stdout,
        stderr=subprocess.DEVNULL,
        env=env,
        cwd=tree,
    )


def _timed(tree: Path, args: list[str]) -> tuple[float, float, float]:
    """Run ``wfctl ARGS`` from ``tree``; return (wall seconds, peak RSS in MB, CPU seconds)."""
    seconds, exit_code, usage = spawn_wfctl(tree, args)
    # 2 from pause only: pause of a finished run is refused, after the lookup timed
    if exit_code != 0 and not (exit_code == 2 and args[0] == "pause"):
        raise SystemExit(f"wfctl {' '.join(args)} from {tree} exited {exit_code}")
    return seconds, usage.ru_maxrss / 1024, usage.ru_utime + usage.ru_stime


def _first_line(tree: Path, args: list[str]) -> tuple[float, float, float]:
    """Run ``wfctl ARGS`` from ``tree``; return (seconds to its first line of output, 0, 0).

    How long someone waits before a long output starts (the process then runs to its end, and
    is not timed further).
    """
    start = time.perf_counter()
    proc = _start_wfctl(tree, args, subprocess.PIPE)
    assert proc.stdout is not None
    proc.stdout.readline()
    seconds = time.perf_counter() - start
    with open(os.devnull, "wb") as sink:
        shutil.copyfileobj(proc.stdout, sink)  # read to its end
    proc.wait()
    return seconds, 0.0, 0.0


def _removal_floor(store: Path, workdir: Path, synced: bool) -> float:
    """Milliseconds per run to rename each run directory of a copy of ``store`` and delete it.

    What the file system itself charges for removing a run (no locks, checks or listing): on a
    file system mounted with online ``discard``, deleting files costs milliseconds.
    """
    copy = workdir / "floor-copy"
    shutil.rmtree(copy, ignore_errors=True)
    shutil.copytree(store, copy, symlinks=True)
    if synced:
        os.sync()
    runs = copy / "runs"
    names = os.listdir(runs)
    start = time.perf_counter()
    for name in names:
        os.replace(runs / name, runs / f".x{name}")
    for name in names:
        shutil.rmtree(runs / f".x{name}")
    seconds = time.perf_counter() - start
    shutil.rmtree(copy)
    return seconds * 1000 / len(names)


def main() -> None:
    """Fill the stores, run the rounds, print the medians."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("workdir", type=Path)
    parser.add_argument("--sizes", default="1,1000,10000")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--tree", type=Path, action="append", help="checkout(s) to time")
    parser.add_argument("--gc", action="store_true", help="time gc --keep 10 on the largest")
    parser.add_argument("--gc-synced", action="store_true", help="sync each copy before gc")
    parser.add_argument("--log-steps", type=int, default=0, help="time log of a run this long")
    parser.add_argument(
        "--log-last", type=int, default=0, help="with --log-steps: also time log --last N"
    )
    args = parser.parse_args()
    trees = args.tree or [BENCH.parent]
    sizes = [int(s) for s in args.sizes.split(",")]
    args.workdir.mkdir(parents=True, exist_ok=True)
    stores = {n: args.workdir / f"runs-{n}" for n in sizes}
    for n, store in stores.items():
        _fill(store, n, 10)
    largest = stores[max(sizes)]
    jobs: dict[str, list[str]] = {"--help": ["--help"]}
    first_lines: dict[str, list[str]] = {}
    for n, store in stores.items():
        run = _first_run(store)
        at = ["--store", str(store)]
        jobs[f"log @{n}"] = ["log", run, *at]
        jobs[f"export @{n}"] = ["export", run, *at]
        jobs[f"pause @{n}"] = ["pause", run, *at]  # refused (completed): the lookup is the cost
        jobs[f"show @{n}"] = ["show", f"{run}.3", *at]
    smallest = stores[min(sizes)]
    if smallest != largest:  # the same command's fixed cost (its imports), for the per-run figure
        jobs[f"runs @{min(sizes)}"] = ["runs", "--store", str(smallest)]
        jobs[f"runs --json @{min(sizes)}"] = ["runs", "--json", "--store", str(smallest)]
    jobs[f"runs @{max(sizes)}"] = ["runs", "--store", str(largest)]
    jobs[f"runs --json @{max(sizes)}"] = ["runs", "--json", "--store", str(largest)]
    if args.log_steps:
        long_store = args.workdir / f"steps-{args.log_steps}"
        _fill(long_store, 1, args.log_steps)
        run = _first_run(long_store)
        jobs[f"log {args.log_steps} steps"] = ["log", run, "--store", str(long_store)]
        jobs[f"log --json {args.log_steps} steps"] = [
            "log", run, "--json", "--store", str(long_store)
        ]  # fmt: skip
        jobs[f"export {args.log_steps} steps"] = ["export", run, "--store", str(long_store)]
        jobs[f"verify-lineage {args.log_steps} steps"] = [
            "verify-lineage", run, "--json", "--store", str(long_store)
        ]  # fmt: skip
        first_lines[f"log {args.log_steps} steps: first line"] = jobs[f"log {args.log_steps} steps"]
        if args.log_last:  # a page (wfctl 2026-12-02 on: a tree before refuses the option)
            jobs[f"log --last {args.log_last} of {args.log_steps} steps"] = [
                "log", run, "--last", str(args.log_last), "--store", str(long_store)
            ]  # fmt: skip
    times: dict[tuple[str, str], list[tuple[float, float, float]]] = {}
    for r in range(args.rounds):
        order = trees[r % len(trees) :] + trees[: r % len(trees)]
        for name, job in jobs.items():
            for tree in order:
                times.setdefault((str(tree), name), []).append(_timed(tree, job))
        for name, job in first_lines.items():
            for tree in order:
                times.setdefault((str(tree), name), []).append(_first_line(tree, job))
        if args.gc:
            times.setdefault(("floor", "rename + rmtree (ms per run)"), []).append(
                (_removal_floor(largest, args.workdir, args.gc_synced), 0.0, 0.0)
            )
            for tree in order:
                copy = args.workdir / "gc-copy"
                shutil.rmtree(copy, ignore_errors=True)
                shutil.copytree(largest, copy, symlinks=True)
                if args.gc_synced:
                    os.sync()
                removed = len(os.listdir(copy / "runs")) - 10
                seconds, rss, cpu = _timed(tree, ["gc", "--keep", "10", "--store", str(copy)])
                times.setdefault((str(tree), "gc --keep 10 (ms per removed run)"), []).append(
                    (seconds * 1000 / removed, rss, cpu * 1000 / removed)
                )
                shutil.rmtree(copy, ignore_errors=True)
    listed = max(sizes)
    for tree in [*trees, "floor"]:
        print(f"{tree}: median of {args.rounds} rounds (wall s, CPU s, peak RSS MB)")
        for (t, name), values in times.items():
            if t != str(tree):
                continue
            wall = statistics.median(v[0] for v in values)
            rss = max(v[1] for v in values)
            cpu = statistics.median(v[2] for v in values)
            extra = ""
            if name.startswith("runs") and name.endswith(f"@{listed}"):
                help_runs = times[(t, "--help")]
                base = statistics.median(v[0] for v in help_runs)
                base_cpu = statistics.median(v[2] for v in help_runs)
                extra = (
                    f"  ({(wall - base) * 1000 / listed:.3f} ms wall, "
                    f"{(cpu - base_cpu) * 1000 / listed:.3f} ms CPU per run beyond --help"
                )
                few = min(sizes)
                small = times.get((t, name.replace(f"@{listed}", f"@{few}")))
                if small and few < listed:  # beyond the same command on the smallest store
                    base = statistics.median(v[0] for v in small)
                    base_cpu = statistics.median(v[2] for v in small)
                    extra += (
                        f"; {(wall - base) * 1000 / (listed - few):.3f} ms wall, "
                        f"{(cpu - base_cpu) * 1000 / (listed - few):.3f} ms CPU per run beyond "
                        f"@{few}"
                    )
                extra += ")"
            print(f"  {name:<34} {wall:8.3f} {cpu:8.3f}  {rss:7.1f}{extra}")


if __name__ == "__main__":
    main()
