"""Throughput of ``wfctl worker`` processes on a queue of short runs, PostgreSQL and file store.

    python bench/workers.py [--runs 1000] [--workers 1,2,4] [--concurrency 8] [--repeat 1]
                            [--stores postgres,file] [--markdown bench/RESULTS.md] [--json]

For each measurement, on a fresh store (a fresh database of one private PostgreSQL server,
``wfctl.storage.testing.private_postgres()``, or a fresh directory): queue ``--runs`` runs of
``bench/short_workflow.py`` (3 steps of small strings) with the library, in this process, then
start N ``wfctl worker --store STORE --exit-when-idle --concurrency C --json`` processes at once
and time until the last one exits. Measurements are interleaved: each repetition goes through
every N, each N through every store. Every measurement is checked: each run taken by exactly
one worker and ended ``completed``, each step of each run executed exactly once (the step
bodies log to a file), ``wfctl runs --json`` lists every run as completed and
``wfctl verify-lineage`` passes. Exit 1 when a check fails, 2 when PostgreSQL is asked for and
no server can be started.
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import contextlib
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import replace
from datetime import datetime
from pathlib import Path
from typing import Any

BENCH = Path(__file__).resolve().parent
sys.path.insert(1, str(BENCH.parent))  # the wfctl being developed
sys.path.insert(0, str(BENCH))

from _pg_worker import ServerCounts  # noqa: E402 - needs the path above
from _report import machine_description  # noqa: E402
from postgres import write_section  # noqa: E402

from wfctl.storage.testing import (  # noqa: E402
    PostgresUnavailableError,
    PrivateServer,
    private_postgres,
)

WORKFLOW = BENCH / "short_workflow.py"
TARGET = f"{WORKFLOW}:short"
STEPS = 3
#: The ``wfctl`` command of this interpreter's environment (else the one on PATH).
WFCTL = next((str(p) for p in [Path(sys.executable).parent / "wfctl"] if p.exists()), "wfctl")
SECTION = "## Workers"
Row = dict[str, Any]


# -- queueing runs --------------------------------------------------------------------------------


async def _submit(store: str, runs: int) -> None:
    from wfctl._drive._loader import load_workflow
    from wfctl._engine._admission import submit_run
    from wfctl.storage import open_storage

    storage = open_storage(store, must_exist=False)
    try:
        bound = load_workflow(TARGET).build(checkpoint_storage=storage)
        for i in range(runs):
            await submit_run(bound, bound.message_for(token(i)), run_id=f"w{i:05d}")
    finally:
        await storage.aclose()


def token(i: int) -> str:
    return f"tok{i:05d}"


def submit(store: str, runs: int) -> float:
    """Queue ``runs`` runs of the short workflow on ``store``; return the seconds it took."""
    started = time.perf_counter()
    asyncio.run(_submit(store, runs))
    return time.perf_counter() - started


# -- the server's side ----------------------------------------------------------------------------


class ServerSide(ServerCounts):
    """Statements and write transactions in one database, counted as bench/_pg_worker.py
    counts them, and the server's CPU seconds (the postmaster's processes: its own and its
    reaped children's time, plus its live children's)."""

    def __init__(self, server: PrivateServer, url: str) -> None:
        super().__init__(server.url, url)
        pid_file = Path(server.data_dir) / "postmaster.pid"
        self.postmaster = int(pid_file.read_text().split()[0])

    def read_all(self) -> tuple[int, int, float]:
        return (*self.read(), self._cpu())

    def _cpu(self) -> float:
        ticks = os.sysconf("SC_CLK_TCK")
        total = 0
        for entry in Path("/proc").iterdir():
            if not entry.name.isdigit():
                continue
            try:
                fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            except OSError:  # ended meanwhile
                continue
            pid, parent = int(entry.name), int(fields[1])
            if pid == self.postmaster:
                total += sum(int(f) for f in fields[11:15])  # utime stime cutime cstime
            elif parent == self.postmaster:
                total += int(fields[11]) + int(fields[12])
        return total / ticks

    def close(self) -> None:
        self.conn.close()


# -- one measurement ------------------------------------------------------------------------------


def measure(
    store: str, kind: str, n: int, args: argparse.Namespace, side: ServerSide | None
) -> Row:
    """Queue the runs, start ``n`` workers, time them, check the outcome; return the row."""
    row: Row = {"store": kind, "workers": n, "concurrency": args.concurrency, "runs": args.runs}
    row["submit_seconds"] = submit(store, args.runs)
    with tempfile.TemporaryDirectory(prefix="wfctl-workers-") as scratch:
        log = Path(scratch) / "steps.log"
        env = os.environ | {"WFCTL_BENCH_STEP_LOG": str(log)}
        command = [WFCTL, "worker", "--store", store, "--exit-when-idle", "--json"]
        command += ["--concurrency", str(args.concurrency), "--workflows", str(BENCH)]
        command += ["--poll", str(args.poll)]
        outs = [Path(scratch) / f"worker-{k}.jsonl" for k in range(n)]
        before = side.read_all() if side is not None else None
        cpu_before = resource.getrusage(resource.RUSAGE_CHILDREN)
        started = time.perf_counter()
        files = [out.open("w") for out in outs]
        workers = [
            subprocess.Popen(command, stdout=f, stderr=subprocess.PIPE, text=True, env=env)
            for f in files
        ]
        errors = [w.communicate(timeout=args.timeout)[1] for w in workers]
        row["seconds"] = time.perf_counter() - started
        cpu_after = resource.getrusage(resource.RUSAGE_CHILDREN)
        if side is not None and before is not None:
            after = side.read_all()
            row["statements_per_run"] = (after[0] - before[0]) / args.runs
            row["transaction_ids_per_run"] = (after[1] - before[1]) / args.runs
            row["server_cpu_seconds"] = after[2] - before[2]
        for f in files:
            f.close()
        row["worker_cpu_seconds"] = (cpu_after.ru_utime + cpu_after.ru_stime) - (
            cpu_before.ru_utime + cpu_before.ru_stime
        )
        row["exit_codes"] = [w.returncode for w in workers]
        events = [json.loads(line) for out in outs for line in out.read_text().splitlines()]
        executed = log.read_text().splitlines() if log.exists() else []
        row["problems"] = check(store, args.runs, events, executed, errors, row["exit_codes"])
        row["driving_seconds"] = _driving_span(events)
        row["taken_per_worker"] = [
            sum(1 for line in out.read_text().splitlines() if '"event": "taken"' in line)
            for out in outs
        ]
    row["status"] = "ok" if not row["problems"] else "wrong"
    return row


def _driving_span(events: list[Row]) -> float | None:
    """Seconds from the first run taken to the last run ended, over all workers."""
    times = [
        datetime.fromisoformat(e["happened_at"]) for e in events if e["event"] in ("taken", "ended")
    ]
    return (max(times) - min(times)).total_seconds() if times else None


def check(
    store: str,
    runs: int,
    events: list[Row],
    executed: list[str],
    errors: list[str],
    exit_codes: list[int],
) -> list[str]:
    """Return what went wrong: every run taken once and completed, every step run once, the
    store listing every run completed, verify-lineage passing."""
    problems = [
        f"worker exit {code}: {(err.strip().splitlines() or ['no output'])[-1]}"
        for code, err in zip(exit_codes, errors, strict=True)
        if code != 0
    ]
    expected = {f"w{i:05d}" for i in range(runs)}
    taken = collections.Counter(e["run_id"] for e in events if e["event"] == "taken")
    if set(taken) != expected or max(taken.values(), default=0) != 1:
        twice = sum(1 for c in taken.values() if c > 1)
        problems.append(f"{len(taken)} of {runs} runs taken, {twice} more than once")
    ended = collections.Counter(e.get("status") for e in events if e["event"] == "ended")
    if ended != {"completed": runs}:
        problems.append(f"runs ended: {dict(ended)}")
    refused = [e for e in events if e["event"] == "refused"]
    if refused:
        problems.append(f"{len(refused)} refused, e.g. {refused[0].get('reason')}")
    steps = collections.Counter(executed)
    wanted = {f"{token(i)} {k}" for i in range(runs) for k in range(STEPS)}
    if set(steps) != wanted or max(steps.values(), default=0) != 1:
        again = sum(c - 1 for c in steps.values() if c > 1)
        problems.append(f"{len(steps)} of {len(wanted)} steps executed, {again} more than once")
    listed = _wfctl_json("runs", store)
    statuses = collections.Counter(r["status"] for r in listed.get("runs", []))
    if statuses != {"completed": runs}:
        problems.append(f"wfctl runs: {dict(statuses) or listed}")
    verified = _wfctl_json("verify-lineage", store)
    if not verified.get("ok") or verified.get("run_count") != runs:
        problems.append(f"verify-lineage: {verified.get('broken_run_count', verified)} broken")
    return problems


def _wfctl_json(command: str, store: str) -> Row:
    done = subprocess.run(
        [WFCTL, command, "--store", store, "--json"], capture_output=True, text=True, check=False
    )
    if not done.stdout:
        return {"error": done.stderr.strip()}
    document: Row = json.loads(done.stdout)
    return document


# -- the report -----------------------------------------------------------------------------------


def summarize(rows: list[Row], runs: int) -> list[Row]:
    """One line per (store, N): medians over the repetitions, scaling vs N=1 of that store."""
    groups: dict[tuple[str, int], list[Row]] = collections.defaultdict(list)
    for row in rows:
        groups[row["store"], row["workers"]].append(row)
    lines: list[Row] = []
    for (kind, n), group in groups.items():
        seconds = statistics.median(r["seconds"] for r in group)
        line: Row = {
            "store": kind,
            "workers": n,
            "seconds": seconds,
            "seconds_range": [min(r["seconds"] for r in group), max(r["seconds"] for r in group)],
            "driving_seconds": statistics.median(r["driving_seconds"] or 0 for r in group),
            "runs_per_second": runs / seconds,
            "steps_per_second": runs * STEPS / seconds,
            "worker_cpu_ms_per_run": statistics.median(
                r["worker_cpu_seconds"] * 1000 / runs for r in group
            ),
            "submit_ms_per_run": statistics.median(
                r["submit_seconds"] * 1000 / runs for r in group
            ),
            "status": "ok" if all(r["status"] == "ok" for r in group) else "wrong",
            "problems": [p for r in group for p in r["problems"]],
        }
        if "server_cpu_seconds" in group[0]:
            line["server_cpu_ms_per_run"] = statistics.median(
                r["server_cpu_seconds"] * 1000 / runs for r in group
            )
            for counted in ("statements_per_run", "transaction_ids_per_run"):
                line[counted] = statistics.median(r[counted] for r in group)
        lines.append(line)
    for line in lines:
        base = next((x for x in lines if x["store"] == line["store"] and x["workers"] == 1), None)
        line["scaling"] = line["runs_per_second"] / base["runs_per_second"] if base else None
    return sorted(lines, key=lambda x: (x["store"] != "postgres", x["workers"]))


def render_section(report: Row) -> str:
    """Return the report as the Markdown section ``## Workers`` (ending with a newline)."""
    config, machine = report["config"], report["machine"]
    lines = [
        SECTION,
        "",
        f"Generated by `python bench/workers.py --markdown bench/RESULTS.md` on "
        f"{machine['date']} ({machine['nproc']} CPUs, {machine['cpu']}; Python "
        f"{machine['python']}). {config['runs']:,} runs of `bench/short_workflow.py` (3 "
        "sequential steps of small strings) queued with the library on a fresh store, then N "
        f"`wfctl worker --exit-when-idle --concurrency {config['concurrency']}` processes "
        "started at once; seconds from their start to the last one's exit (Python start-up "
        "included), median of "
        f"{config['repeat']} interleaved repetitions (min-max). Driving: from the first run "
        "taken to the last one ended, over all workers. Worker CPU: user and system time of "
        "the worker processes; server CPU: the PostgreSQL server's processes; both per run. "
        "Statements and write transactions per run: as in the PostgreSQL section, counted in "
        "the run's database while the workers ran. Scaling: runs/s over the same store's "
        "N = 1. One private PostgreSQL "
        f"{report.get('server_version', '')} server on a Unix socket, fsync and synchronous_commit "
        "on, in the same temporary file system as the file store. Every measurement checked: "
        "each run taken by one worker, ended completed, each step executed once, `wfctl runs` "
        "and `wfctl verify-lineage` agreeing"
        + (" (all passed)." if report["ok"] else " (**some failed: see the JSON**).")
        + f" Load average (1 min) {config['load_average'][0]} at the start, "
        f"{config['load_average'][1]} at the end.",
        "",
        "| store | N | seconds | driving s | runs/s | steps/s | scaling vs N=1 "
        "| worker CPU ms/run | server CPU ms/run | statements/run | write transactions/run |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for line in report["summary"]:
        low, high = line["seconds_range"]
        server = (
            [
                f"{line['server_cpu_ms_per_run']:.2f}",
                f"{line['statements_per_run']:.1f}",
                f"{line['transaction_ids_per_run']:.1f}",
            ]
            if "server_cpu_ms_per_run" in line
            else ["—", "—", "—"]
        )
        cells = [
            line["store"],
            str(line["workers"]),
            f"{line['seconds']:.2f} ({low:.2f}-{high:.2f})",
            f"{line['driving_seconds']:.2f}",
            f"{line['runs_per_second']:.0f}",
            f"{line['steps_per_second']:.0f}",
            f"{line['scaling']:.2f}\N{MULTIPLICATION SIGN}" if line["scaling"] else "—",
            f"{line['worker_cpu_ms_per_run']:.2f}",
            *server,
        ]
        if line["status"] != "ok":
            cells[0] += " (**wrong**)"
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


# -- the command line -----------------------------------------------------------------------------


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description=__doc__.splitlines()[0],
        epilog="Example: python bench/workers.py --markdown bench/RESULTS.md",
    )
    parser.add_argument("--runs", type=int, default=1000, help="runs queued per measurement")
    parser.add_argument("--workers", default="1,2,4", help="comma-separated worker counts N")
    parser.add_argument("--concurrency", type=int, default=8, help="runs each worker drives")
    parser.add_argument("--repeat", type=int, default=1, help="interleaved repetitions")
    parser.add_argument("--stores", default="postgres,file", help="postgres, file or both")
    parser.add_argument("--poll", type=float, default=0.1, help="each worker's --poll")
    parser.add_argument("--markdown", type=Path, help="replace the Workers section there")
    parser.add_argument("--json", action="store_true", help="print the JSON report on stdout")
    parser.add_argument("--timeout", type=float, default=900, help="seconds allowed per worker")
    args = parser.parse_args(argv)
    args.workers = [int(n) for n in args.workers.split(",") if n.strip()]
    args.stores = [s.strip() for s in args.stores.split(",") if s.strip()]
    if not set(args.stores) <= {"postgres", "file"} or not args.stores:
        parser.error("--stores takes postgres, file or both")
    if args.runs < 1 or args.repeat < 1 or args.concurrency < 1 or min(args.workers) < 1:
        parser.error("--runs, --repeat, --concurrency and every N must be at least 1")
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    load_before = os.getloadavg()[0]
    rows: list[Row] = []
    report: Row = {}
    try:
        with (
            (
                private_postgres("shared_preload_libraries=pg_stat_statements")
                if "postgres" in args.stores
                else contextlib.nullcontext()
            ) as server,
            tempfile.TemporaryDirectory(prefix="wfctl-workers-") as root,
        ):
            if server is not None:
                import psycopg

                with psycopg.connect(server.url, autocommit=True) as admin:
                    version = admin.execute("SHOW server_version").fetchone()
                    admin.execute("CREATE EXTENSION pg_stat_statements")
                report["server_version"] = version[0].split()[0] if version else "?"
            count = 0
            for repetition in range(args.repeat):
                for n in args.workers:
                    for kind in args.stores:
                        count += 1
                        row = _one(kind, n, args, server, Path(root), count)
                        row["repetition"] = repetition
                        rows.append(row)
                        _progress(row)
            report["machine"] = machine_description(Path(root))
    except PostgresUnavailableError as exc:
        print(f"workers.py: {exc}", file=sys.stderr)
        return 2
    report["config"] = {
        "runs": args.runs,
        "workers": args.workers,
        "concurrency": args.concurrency,
        "repeat": args.repeat,
        "stores": args.stores,
        "poll": args.poll,
        "load_average": [round(load_before, 2), round(os.getloadavg()[0], 2)],
    }
    report["summary"] = summarize(rows, args.runs)
    report["rows"] = rows
    report["ok"] = all(r["status"] == "ok" for r in rows)
    section = render_section(report)
    print(json.dumps(report, indent=2) if args.json else section)
    if args.markdown:
        write_section(args.markdown, section)
        print(f"wrote the Workers section of {args.markdown}", file=sys.stderr)
    return 0 if report["ok"] else 1


def _one(
    kind: str, n: int, args: argparse.Namespace, server: PrivateServer | None, root: Path, k: int
) -> Row:
    if kind == "file":
        store = root / f"store-{k}"
        return measure(str(store), kind, n, args, None)
    assert server is not None
    import psycopg

    name = f"workers_{k}"
    url = replace(server, dbname=name).url
    with psycopg.connect(server.url, autocommit=True) as admin:
        admin.execute(f"CREATE DATABASE {name}")
        side = ServerSide(server, url)
        try:
            return measure(url, kind, n, args, side)
        finally:
            side.close()
            admin.execute(f"DROP DATABASE {name} WITH (FORCE)")


def _progress(row: Row) -> None:
    outcome = "ok" if row["status"] == "ok" else "; ".join(row["problems"])[:200]
    print(
        f"  {row['store']:<8} N={row['workers']} {row['seconds']:.2f} s "
        f"({row['runs'] / row['seconds']:.0f} runs/s) {outcome}",
        file=sys.stderr,
        flush=True,
    )


if __name__ == "__main__":
    sys.exit(main())
