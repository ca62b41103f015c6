"""What reading a whole PostgreSQL store costs: ``verify-lineage`` and ``runs``, whole processes.

Usage::

    python bench/pg_store_commands.py [--runs 10000] [--rounds 3] [--tree .] [--tree /tmp/before]
        [--log-steps 100000 [--log-last 20]]

Starts a private PostgreSQL server (``fsync`` on), fills it with completed runs of 10 steps
each (eight at a time, through the library), then times ``wfctl verify-lineage --json`` and
``wfctl runs --json`` for each checkout named by ``--tree`` (its code run with
``PYTHONPATH=<tree>``, as ``bench/store_commands.py`` runs it), round by round in rotating
order. Prints each command's median wall and CPU seconds (the client's: the server's work is
in the wall time only) and the wall time per run. With ``--log-steps N`` it also writes one run
of N steps and times ``log``, ``log --json``, ``log --follow --json`` (and ``log --last M`` and
``log --follow --last M`` with ``--log-last M``) of it (it has ended: following reads its
backlog), ``verify-lineage --json`` and ``pause`` of it (refused: it has ended; the run's
summary is the cost), and ``runs --json`` and ``verify-lineage --json`` of the store holding it,
with each one's peak RSS, and how long
``log`` takes to print its first line (``--runs 0`` times only these).
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parent
sys.path[:0] = [str(BENCH), str(BENCH.parent)]  # the wfctl being developed fills the store

from postgres_steps import steps  # noqa: E402 - needs the path above
from store_commands import _first_line, _timed, spawn_wfctl, tree_column  # noqa: E402

from wfctl.storage import open_storage  # noqa: E402
from wfctl.storage.testing import private_postgres  # noqa: E402

_COMMANDS = (["verify-lineage", "--json"], ["runs", "--json"])


async def _fill(url: str, runs: int) -> None:
    """Write ``runs`` completed runs of 10 steps, eight at a time."""
    store = open_storage(url)
    bound = steps.build(checkpoint_storage=store)  # 100-character results

    async def every_eighth(first: int) -> None:
        for index in range(first, runs, 8):
            result = await bound.run(10, run_id=f"r{index:07d}")
            assert result.status == "completed", result

    try:
        await asyncio.gather(*(every_eighth(first) for first in range(8)))
    finally:
        await store.aclose()


async def _fill_long(url: str, steps_in_run: int) -> str:
    """Write one completed run of ``steps_in_run`` steps; return its id."""
    store = open_storage(url)
    try:
        result = await steps.build(checkpoint_storage=store).run(steps_in_run, run_id="long")
        assert result.status == "completed", result
    finally:
        await store.aclose()
    return "long"


def _log_jobs(url: str, run: str, steps_in_run: int, last: int) -> dict[str, list[str]]:
    """The ``log`` commands (and ``runs`` and ``verify-lineage``) timed on the long run, by name."""
    at = ["--store", url]
    jobs = {
        f"log {steps_in_run} steps": ["log", run, *at],
        f"log --json {steps_in_run} steps": ["log", run, "--json", *at],
    }
    jobs[f"log --follow --json {steps_in_run} steps"] = ["log", run, "--follow", "--json", *at]
    jobs[f"runs --json (a run of {steps_in_run} steps)"] = ["runs", "--json", *at]
    jobs[f"pause {steps_in_run} steps"] = ["pause", run, *at]  # refused (completed): its summary
    jobs[f"verify-lineage {steps_in_run} steps"] = ["verify-lineage", run, "--json", *at]
    jobs[f"verify-lineage --json (a run of {steps_in_run} steps)"] = [
        "verify-lineage",
        "--json",
        *at,
    ]
    if last:
        jobs[f"log --last {last} of {steps_in_run} steps"] = ["log", run, "--last", str(last), *at]
        jobs[f"log --follow --last {last} of {steps_in_run}"] = [
            "log", run, "--follow", "--last", str(last), *at
        ]  # fmt: skip
    return jobs


def _time_log(trees: list[Path], jobs: dict[str, list[str]], rounds: int) -> None:
    """Time the ``log`` jobs and the first line of the first, rotating the trees; print."""
    first_name, first_job = next(iter(jobs.items()))
    times: dict[tuple[int, str], list[tuple[float, float, float]]] = {}
    for round_no in range(rounds):
        order = list(enumerate(trees))
        order = order[round_no % len(order) :] + order[: round_no % len(order)]
        for t, tree in order:
            for name, job in jobs.items():
                times.setdefault((t, name), []).append(_timed(tree, job))
            times.setdefault((t, f"{first_name}: first line"), []).append(
                _first_line(tree, first_job)
            )
    wide = tree_column(trees)
    print(f"{'tree':<{wide}} {'command':<34} {'wall s':>8} {'CPU s':>8} {'peak MB':>8}")
    for (t, name), rows in sorted(times.items()):
        wall = statistics.median(row[0] for row in rows)
        cpu = statistics.median(row[2] for row in rows)
        rss = max(row[1] for row in rows)
        print(f"{trees[t]!s:<{wide}} {name:<34} {wall:>8.2f} {cpu:>8.2f} {rss:>8.1f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=10_000, help="completed runs in the store")
    parser.add_argument("--rounds", type=int, default=3, help="rounds (median reported)")
    parser.add_argument("--tree", type=Path, action="append", help="checkout(s) to time")
    parser.add_argument("--log-steps", type=int, default=0, help="time log of a run this long")
    parser.add_argument(
        "--log-last", type=int, default=0, help="with --log-steps: also time log --last N"
    )
    args = parser.parse_args()
    trees: list[Path] = args.tree or [BENCH.parent]
    with private_postgres() as server:
        if args.log_steps:
            run = asyncio.run(_fill_long(server.url, args.log_steps))
            jobs = _log_jobs(server.url, run, args.log_steps, args.log_last)
            _time_log(trees, jobs, args.rounds)
        if not args.runs:
            return
        asyncio.run(_fill(server.url, args.runs))
        timed: dict[tuple[int, int], list[tuple[float, float]]] = {}
        for round_no in range(args.rounds):
            order = list(enumerate(trees))
            order = order[round_no % len(order) :] + order[: round_no % len(order)]
            for t, tree in order:
                for c, command in enumerate(_COMMANDS):
                    seconds, code, usage = spawn_wfctl(tree, [*command, "--store", server.url])
                    if code != 0:
                        raise SystemExit(f"wfctl {' '.join(command)} from {tree} exited {code}")
                    cpu = usage.ru_utime + usage.ru_stime
                    timed.setdefault((t, c), []).append((seconds, cpu))
    print(f"{args.runs:,} runs of 10 steps, {args.rounds} rounds (median)")
    wide = tree_column(trees)
    print(f"{'tree':<{wide}} {'command':<28} {'wall s':>8} {'CPU s':>8} {'ms per run':>11}")
    for (t, c), rows in sorted(timed.items()):
        wall = statistics.median(row[0] for row in rows)
        cpu = statistics.median(row[1] for row in rows)
        command = "wfctl " + " ".join(_COMMANDS[c])
        per_run = wall / args.runs * 1000
        print(f"{trees[t]!s:<{wide}} {command:<28} {wall:>8.2f} {cpu:>8.2f} {per_run:>11.3f}")


if __name__ == "__main__":
    main()
