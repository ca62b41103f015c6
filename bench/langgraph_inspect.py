"""Inspecting LangGraph's SQLite checkpoints: wfctl against what a LangGraph user does today.

Usage::

    python bench/langgraph_inspect.py WORKDIR [--checkpoints 100000] [--long 10000]
        [--big-mb 1024] [--rounds 3] [--json FILE]

Writes three stores into ``WORKDIR`` with the real LangGraph (``SqliteSaver``; kept and reused
when they are there already, since writing them takes minutes):

- ``many-N-K.sqlite``: ``--checkpoints`` checkpoints, ``--per-thread`` (100) per thread (a
  graph looping one node; 4 per thread makes 25,000 threads of 100,000 checkpoints);
- ``long.sqlite``: one thread of ``--long`` checkpoints;
- ``big.sqlite``: about ``--big-mb`` MB: checkpoints whose state holds a 500 KB text that changes
  every step (what a growing message list does to a real application's file).

Then measures, each a fresh process, ``--rounds`` times (the median is reported, with the
least and greatest), its wall seconds, CPU seconds and peak RSS (``wait4``):

- ``wfctl runs --json`` over ``many.sqlite``, and beside it what a user does today without a
  tool: ``SqliteSaver.list(None)`` over every checkpoint (each one decoded, LangGraph's own
  way), counting them per thread; the ratio is reported;
- ``wfctl log THREAD`` of the ``long.sqlite`` thread: the seconds to its first line on stdout
  (time to first output) and to the end;
- ``wfctl du --json`` over ``big.sqlite``, and ``SqliteSaver.list(None)`` over it as the peer.

The goals (the LangGraph inspector issue): ``runs`` over 100,000 checkpoints in 2 s and 60 MB;
``log`` of 10,000 checkpoints printing in 0.5 s; ``du`` of 1 GB in 5 s. Needs ``pip install -e
'.[test]'`` (LangGraph and its SQLite saver). ``--checkpoints 2000 --long 300 --big-mb 4
--rounds 1`` is a smoke run (tests/test_bench_smoke.py).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sqlite3
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, TypedDict

#: Checkpoints per thread in ``many.sqlite``.
PER_THREAD = 100
#: The text each ``big.sqlite`` checkpoint holds.
BIG_TEXT = 500_000


class _State(TypedDict):
    i: int
    limit: int
    text: str


def _graph(conn: sqlite3.Connection, big: bool) -> Any:
    """A graph looping its one node until ``i`` reaches ``limit``, on ``SqliteSaver``."""
    from langgraph.checkpoint.sqlite import SqliteSaver
    from langgraph.graph import END, START, StateGraph

    def step(state: _State) -> dict[str, Any]:
        i = state["i"] + 1
        if big:  # a new 500 KB text each step, as a growing conversation rewrites its state
            return {"i": i, "text": f"{i:08d}" + state["text"][8:]}
        return {"i": i, "text": f"step {i} " + "x" * 90}

    graph = StateGraph(_State)
    graph.add_node("step", step)
    graph.add_edge(START, "step")
    graph.add_conditional_edges("step", lambda s: END if s["i"] >= s["limit"] else "step")
    return graph.compile(checkpointer=SqliteSaver(conn))


def write_store(path: Path, threads: int, per_thread: int, *, big: bool = False) -> None:
    """Write ``threads`` threads of about ``per_thread`` checkpoints into ``path`` (kept)."""
    if path.exists():
        return
    partial = path.with_name(path.name + ".partial")
    partial.unlink(missing_ok=True)
    conn = sqlite3.connect(partial, check_same_thread=False)
    conn.execute("PRAGMA synchronous=OFF")  # filling the bench's file, not measuring LangGraph
    graph = _graph(conn, big)
    text = "x" * (BIG_TEXT if big else 100)
    # LangGraph writes an input checkpoint and one per step: per_thread - 2 steps.
    limit = max(1, per_thread - 2)
    for number in range(threads):
        config = {"configurable": {"thread_id": f"thread-{number:06d}"}}
        config["recursion_limit"] = limit + 10  # type: ignore[assignment]
        graph.invoke({"i": 0, "limit": limit, "text": text}, config)
    conn.close()
    partial.rename(path)


def _measure(command: list[str], *, first_line: bool = False) -> dict[str, float]:
    """Run ``command`` to its end: wall, CPU, peak RSS (MB) and the time to its first line."""
    start = time.perf_counter()
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert process.stdout is not None
    first = process.stdout.readline() if first_line else b""
    first_at = time.perf_counter() - start
    rest = process.stdout.read()
    process.stdout.close()
    _, status, usage = os.wait4(process.pid, 0)
    seconds = time.perf_counter() - start
    assert process.stderr is not None
    error = process.stderr.read().decode(errors="replace").strip()
    process.stderr.close()
    if os.waitstatus_to_exitcode(status) != 0:
        raise RuntimeError(f"{' '.join(command[:3])}...: {error.splitlines()[-1:]}")
    if not (first or rest):
        raise RuntimeError(f"{' '.join(command[:3])}...: printed nothing")
    result = {
        "seconds": seconds,
        "cpu_seconds": usage.ru_utime + usage.ru_stime,
        "peak_rss_mb": usage.ru_maxrss / 1024,
    }
    if first_line:
        result["first_line_seconds"] = first_at
    return result


def measure_rounds(
    jobs: dict[str, tuple[list[str], bool]], count: int
) -> tuple[dict[str, list[dict[str, float]]], dict[str, str]]:
    """Measure each job (its command, and whether its first line is timed) ``count`` times,
    interleaved round by round: the measurements by job, and the jobs that failed (why)."""
    rounds: dict[str, list[dict[str, float]]] = {name: [] for name in jobs}
    failed: dict[str, str] = {}
    for _ in range(count):
        for name, (command, first_line) in jobs.items():
            if name in failed:
                continue
            try:
                rounds[name].append(_measure(command, first_line=first_line))
            except RuntimeError as exc:
                failed[name] = str(exc)
    return rounds, failed


def _median(rounds: list[dict[str, float]]) -> dict[str, Any]:
    return {
        key: {
            "median": statistics.median(r[key] for r in rounds),
            "min": min(r[key] for r in rounds),
            "max": max(r[key] for r in rounds),
        }
        for key in rounds[0]
    }


#: What a LangGraph user runs today to see their threads: every checkpoint, decoded.
PEER = """
import sqlite3, sys
from collections import Counter
from langgraph.checkpoint.sqlite import SqliteSaver
conn = sqlite3.connect(sys.argv[1], check_same_thread=False)
per_thread = Counter(t.config["configurable"]["thread_id"] for t in SqliteSaver(conn).list(None))
print(len(per_thread), sum(per_thread.values()))
"""


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("workdir", type=Path)
    parser.add_argument("--checkpoints", type=int, default=100_000)
    parser.add_argument(
        "--per-thread", type=int, default=PER_THREAD, help="checkpoints per thread in many"
    )
    parser.add_argument("--long", type=int, default=10_000)
    parser.add_argument("--big-mb", type=int, default=1024)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--json", type=Path, default=None, help="also write the report here")
    parser.add_argument("--make-only", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    args.workdir.mkdir(parents=True, exist_ok=True)
    wfctl = shutil.which("wfctl", path=str(Path(sys.executable).parent)) or "wfctl"

    many = args.workdir / f"many-{args.checkpoints}-{args.per_thread}.sqlite"
    long = args.workdir / f"long-{args.long}.sqlite"
    big = args.workdir / f"big-{args.big_mb}mb.sqlite"
    if args.make_only:
        write_store(many, max(1, args.checkpoints // args.per_thread), args.per_thread)
        write_store(long, 1, args.long)
        # each step stores its text twice: in the checkpoint and in the write that made it
        write_store(big, 1, max(3, args.big_mb * 1_000_000 // (2 * BIG_TEXT)), big=True)
        return 0
    if not (many.exists() and long.exists() and big.exists()):
        # Written by another process: a child inherits its parent's peak RSS, and LangGraph
        # writing a gigabyte would be counted in every measurement below.
        command = [sys.executable, __file__, *(argv if argv is not None else sys.argv[1:])]
        subprocess.run([*command, "--make-only"], check=True)

    jobs: dict[str, tuple[list[str], bool]] = {
        "wfctl runs (many)": ([wfctl, "runs", "--store", str(many), "--json"], False),
        "SqliteSaver.list (many)": ([sys.executable, "-c", PEER, str(many)], False),
        "wfctl log (long)": ([wfctl, "log", "thread-000000", "--store", str(long)], True),
        "wfctl du (big)": ([wfctl, "du", "--store", str(big), "--json"], False),
        "SqliteSaver.list (big)": ([sys.executable, "-c", PEER, str(big)], False),
    }
    rounds, failed = measure_rounds(jobs, args.rounds)
    report: dict[str, Any] = {
        "stores": {
            path.name: {
                "bytes": path.stat().st_size,
                "checkpoints": _count(path),
            }
            for path in (many, long, big)
        },
        "rows": {name: _median(r) for name, r in rounds.items() if r},
        "failed": failed,
    }
    rows = report["rows"]
    for ours, peer in (
        ("wfctl runs (many)", "SqliteSaver.list (many)"),
        ("wfctl du (big)", "SqliteSaver.list (big)"),
    ):
        if ours in rows and peer in rows:
            report.setdefault("ratios", {})[f"{peer} / {ours}"] = (
                rows[peer]["seconds"]["median"] / rows[ours]["seconds"]["median"]
            )
    text = json.dumps(report, indent=2)
    print(text)
    if args.json is not None:
        args.json.write_text(text + "\n", encoding="utf-8")
    return 1 if failed else 0


def _count(path: Path) -> int:
    with sqlite3.connect(f"file:{path}?mode=ro", uri=True) as conn:
        count = int(conn.execute("SELECT count(*) FROM checkpoints").fetchone()[0])
    conn.close()
    return count


if __name__ == "__main__":
    raise SystemExit(main())
