"""wfctl's PostgreSQL store side by side with the floor, LangGraph's savers and DBOS.

    python bench/postgres.py [--n 1000] [--repeat 3] [--only floor,wfctl,...]
                             [--markdown bench/RESULTS.md] [--json]

One private PostgreSQL 15 server (``wfctl.storage.testing.private_postgres()``: fsync and
synchronous_commit on, a Unix socket) serves every measurement. Each measurement is one fresh
process (``bench/_pg_worker.py``) on a fresh database: N sequential steps of 100-character
strings, wall and CPU time per step. The repetitions are interleaved engine by engine. The
durability check runs each engine's workflow as one run, SIGKILLs its process the moment step
N/2 has returned, continues the run in a fresh process and counts the steps that had returned
and ran again. An engine that is not installed, or a wfctl that cannot open a PostgreSQL store
yet, gets a row that says "not available". Exit 1 when the floor's or wfctl's measurement
crashed or returned a wrong result; 2 when no server could be started.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import replace
from importlib import metadata
from pathlib import Path
from typing import Any

BENCH = Path(__file__).resolve().parent
sys.path.insert(1, str(BENCH.parent))  # the wfctl being developed
sys.path.insert(0, str(BENCH))

from _report import machine_description  # noqa: E402 - needs the path above

from wfctl.storage.testing import (  # noqa: E402
    PostgresUnavailableError,
    PrivateServer,
    private_postgres,
)

WORKER = BENCH / "_pg_worker.py"
SECTION = "## PostgreSQL"
Row = dict[str, Any]

#: Engine -> (label, distributions whose versions the report names), in table order.
ENGINES: dict[str, tuple[str, tuple[str, ...]]] = {
    "floor": ("floor: one autocommit INSERT of ~300 B per step (async psycopg)", ("psycopg",)),
    "langgraph_async": (
        "LangGraph async `AsyncPostgresSaver`",
        ("langgraph", "langgraph-checkpoint-postgres"),
    ),
    "langgraph_sync": ("LangGraph sync `PostgresSaver`", ("langgraph-checkpoint-postgres",)),
    "dbos": ("DBOS (sync workflow, `@DBOS.step`)", ("dbos",)),
    "wfctl": ('wfctl, `open_storage("postgresql://...")`', ("wfctl",)),
}


class Bench:
    """Runs worker processes against one server, each on a database of its own."""

    def __init__(self, server: PrivateServer, timeout: float) -> None:
        self.server = server
        self.timeout = timeout
        self.databases = 0

    def worker(self, engine: str, mode: str, n: int, url: str, crash_at: int = 0) -> Row:
        """Run one worker process; return its JSON line, or an error row.

        In crash mode the worker kills itself: exit by SIGKILL with no output is ``ok``.
        """
        command = [sys.executable, str(WORKER), engine, mode, str(n), url]
        command += [f"--crash-at={crash_at}"]
        if mode == "sequential":  # count the server's statements and transactions
            command += [f"--stats-url={self.server.url}"]
        try:
            done = subprocess.run(
                command, capture_output=True, text=True, timeout=self.timeout, check=False
            )
        except subprocess.TimeoutExpired:
            return {"status": "error", "note": f"timed out after {self.timeout:.0f} s"}
        lines = done.stdout.strip().splitlines()
        if mode == "crash" and done.returncode == -9 and not lines:
            return {"status": "ok", "note": ""}
        if done.returncode != 0 or not lines:
            tail = (done.stderr.strip().splitlines() or ["no output"])[-1]
            return {"status": "error", "note": f"{mode}: worker exit {done.returncode}: {tail}"}
        row: Row = json.loads(lines[-1])
        if mode == "crash" and row.get("status") == "ok":
            return {"status": "error", "note": f"the run finished: no kill after step {crash_at}"}
        return row

    def on_fresh_database(self, run: Callable[[str], Row]) -> Row:
        """Create a database, call ``run(url)``, record the database's size, drop it."""
        import psycopg

        self.databases += 1
        name = f"bench_{self.databases}"
        with psycopg.connect(self.server.url, autocommit=True) as admin:
            admin.execute(f"CREATE DATABASE {name}")
            try:
                row: Row = run(replace(self.server, dbname=name).url)
                size = admin.execute("SELECT pg_database_size(%s)", (name,)).fetchone()
                row["database_bytes"] = size[0] if size else None
            finally:
                admin.execute(f"DROP DATABASE {name} WITH (FORCE)")
        return row

    def sequential(self, engine: str, n: int) -> Row:
        return self.on_fresh_database(lambda url: self.worker(engine, "sequential", n, url))

    def crash(self, engine: str, n: int, crash_at: int) -> Row:
        """Kill the run after step ``crash_at`` returned; return the recovering process's row."""

        def cycle(url: str) -> Row:
            crashed = self.worker(engine, "crash", n, url, crash_at)
            if crashed.get("status") != "ok":
                return crashed
            return self.worker(engine, "recover", n, url, crash_at)

        return self.on_fresh_database(cycle)


def summarize(engine: str, n: int, runs: list[Row], crashes: list[Row]) -> Row:
    """One table row: medians over the runs, the range of re-runs over the crashes."""
    label, distributions = ENGINES[engine]
    row: Row = {"engine": engine, "label": label, "n": n, "status": "ok", "note": ""}
    row["versions"] = {name: _version(name) for name in distributions}
    bad = [r for r in (*runs, *crashes) if r.get("status") != "ok"]
    if bad:
        worst = next((r for r in bad if r["status"] == "error"), bad[0])
        row["status"], row["note"] = worst["status"], worst.get("note", "")
    timed = [r for r in runs if r.get("status") in ("ok", "wrong")]
    if timed:
        per_step = sorted(r["seconds"] * 1000 / n for r in timed)
        row["ms_per_step"] = {
            "median": statistics.median(per_step),
            "min": per_step[0],
            "max": per_step[-1],
        }
        row["cpu_ms_per_step"] = statistics.median(r["cpu_seconds"] * 1000 / n for r in timed)
        row["database_bytes"] = statistics.median(r["database_bytes"] for r in timed)
        for counted in ("statements", "transaction_ids", "server_exec_ms"):
            row[f"{counted}_per_step"] = statistics.median(r[counted] / n for r in timed)
    recovered = [r["rerun"] for r in crashes if r.get("status") == "ok"]
    if recovered:
        row["rerun_after_crash"] = {"min": min(recovered), "max": max(recovered)}
    row["runs"], row["crashes"] = runs, crashes
    return row


def _version(distribution: str) -> str | None:
    try:
        return metadata.version(distribution)
    except metadata.PackageNotFoundError:
        return None


def render_section(report: dict[str, Any]) -> str:
    """Return the report as the Markdown section ``## PostgreSQL`` (ending with a newline)."""
    config, machine = report["config"], report["machine"]
    versions = {k: v for row in report["rows"] for k, v in row["versions"].items() if v}
    lines = [
        SECTION,
        "",
        f"Generated by `python bench/postgres.py --markdown bench/RESULTS.md` on "
        f"{machine['date']} ({machine['nproc']} CPUs, {machine['cpu']}; Python "
        f"{machine['python']}; {', '.join(f'{k} {v}' for k, v in sorted(versions.items()))}). "
        f"One private PostgreSQL {report['server_version']} server on a Unix socket, fsync and "
        f"synchronous_commit on; {config['n']:,} sequential steps of 100-character strings, "
        f"each measurement a fresh process on a fresh database, {config['repeat']} repetitions "
        "interleaved engine by engine; the median, with the min-max range. CPU is the measuring "
        "process's (`time.process_time`, its threads included, the server's not). "
        "Statements/step: statements the server ran in the run's database during the timed "
        "run (pg_stat_statements, BEGIN and COMMIT included; a pipeline sends several in one "
        "round trip); server ms/step: the time the server spent executing them, transaction "
        "control left out (a COMMIT's time is mostly its wait for the WAL flush, which an "
        "autocommit statement's does not include); write transactions/step: transaction ids "
        "the server assigned, one per "
        "transaction that wrote, each a commit flushed to the WAL before it returns. Re-run "
        f"after crash: the process is SIGKILLed the moment step {config['crash_at']:,} has "
        "returned to the workflow, a fresh process continues the run, and the steps that had "
        f"returned and ran again are counted ({config['repeat']} crashes; min-max). The "
        f"1-minute load average was {config['load_average'][0]} at the start and "
        f"{config['load_average'][1]} at the end: with more runnable work than CPUs, wall times "
        "spread and CPU per step is the steadier figure.",
        "",
        "| | ms/step | \N{MULTIPLICATION SIGN} floor | CPU ms/step | statements/step "
        "| server ms/step | write transactions/step | re-run after crash | durable per step? |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    floor = next((r for r in report["rows"] if r["engine"] == "floor" and "ms_per_step" in r), None)
    for row in report["rows"]:
        lines.append("| " + " | ".join([row["label"], *_cells(row, floor)]) + " |")
    paired = _paired(report["rows"])
    if paired:
        lines += ["", paired]
    return "\n".join(lines) + "\n"


def _paired(rows: list[Row]) -> str:
    """Ratios taken within each repetition (the same minutes, the same load), then the median
    and range over the repetitions: wfctl over the floor, each peer over wfctl; wall and CPU."""
    by_engine = {row["engine"]: row["runs"] for row in rows}
    if "wfctl" not in by_engine:
        return ""

    def ratios(over: str, under: str, field: str) -> str | None:
        pairs = zip(by_engine[over], by_engine[under], strict=False)
        values = sorted(
            a[field] / b[field]
            for a, b in pairs
            if a.get("status") == "ok" and b.get("status") == "ok" and b[field] > 0
        )
        if not values:
            return None
        span = f" ({values[0]:.1f}-{values[-1]:.1f})" if len(values) > 1 else ""
        return f"{statistics.median(values):.1f}\N{MULTIPLICATION SIGN}{span}"

    parts = []
    pairs = [("wfctl", "floor")] + [(e, "wfctl") for e in by_engine if e not in ("wfctl", "floor")]
    for over, under in pairs:
        if under not in by_engine:
            continue
        wall, cpu = ratios(over, under, "seconds"), ratios(over, under, "cpu_seconds")
        if wall and cpu:
            parts.append(f"{over} / {under} {wall}, CPU {cpu}")
    if not parts:
        return ""
    return (
        "Ratios within each repetition (median over the repetitions, min-max), wall then CPU: "
        + "; ".join(parts)
        + "."
    )


def _cells(row: Row, floor: Row | None) -> list[str]:
    if "ms_per_step" not in row:
        return [row["status"] + (f": {row['note']}" if row["note"] else ""), *[""] * 7]
    ms = row["ms_per_step"]
    ratio = f"{ms['median'] / floor['ms_per_step']['median']:.1f}" if floor else "—"
    cells = [f"{ms['median']:.3f} ({ms['min']:.3f}-{ms['max']:.3f})", ratio]
    cells.append(f"{row['cpu_ms_per_step']:.3f}")
    cells.append(f"{row['statements_per_step']:.2f}")
    cells += [f"{row['server_exec_ms_per_step']:.3f}", f"{row['transaction_ids_per_step']:.2f}"]
    rerun = row.get("rerun_after_crash")
    if row["engine"] == "floor":
        cells += ["—", "—"]
    elif rerun is None:
        cells += ["not measured", row["note"] or "—"]
    else:
        span = (
            str(rerun["min"]) if rerun["min"] == rerun["max"] else f"{rerun['min']}-{rerun['max']}"
        )
        cells += [span, "yes" if rerun["max"] == 0 else "no"]
    if row["status"] != "ok":
        cells[-1] += f" ({row['status']}: {row['note']})"
    return cells


def write_section(path: Path, section: str) -> None:
    """Replace the section of ``path`` headed by ``section``'s first line (``## PostgreSQL``,
    ``## Workers``), or append it; keep the rest of the file as it is."""
    text = path.read_text(encoding="utf-8") if path.exists() else ""
    start = text.find(f"\n{section.partition(chr(10))[0]}\n")
    if start < 0:
        text = (text.rstrip("\n") + "\n\n" if text else "") + section
    else:
        end = text.find("\n## ", start + 1)
        rest = text[end:] if end >= 0 else ""
        text = text[: start + 1] + section + rest
    path.write_text(text, encoding="utf-8")


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description=__doc__.splitlines()[0],
        epilog="Example: python bench/postgres.py --markdown bench/RESULTS.md",
    )
    parser.add_argument("--n", type=int, default=1000, help="sequential steps per run")
    parser.add_argument("--repeat", type=int, default=3, help="interleaved repetitions")
    parser.add_argument("--crash-at", type=int, help="steps returned before the kill (default N/2)")
    parser.add_argument("--only", default=",".join(ENGINES), help="comma-separated engines")
    parser.add_argument("--markdown", type=Path, help="replace the PostgreSQL section there")
    parser.add_argument("--json", action="store_true", help="print the JSON report on stdout")
    parser.add_argument("--timeout", type=float, default=600, help="seconds allowed per process")
    args = parser.parse_args(argv)
    args.only = [e.strip() for e in args.only.split(",") if e.strip()]
    unknown = [e for e in args.only if e not in ENGINES]
    if unknown:
        parser.error(f"unknown engine(s) {', '.join(unknown)}; choose from {', '.join(ENGINES)}")
    if args.n < 2 or args.repeat < 1:
        parser.error("--n must be at least 2 and --repeat at least 1")
    args.crash_at = args.crash_at or args.n // 2
    if not 0 < args.crash_at < args.n:
        parser.error("--crash-at must be between 1 and N-1")
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    engines = [e for e in ENGINES if e in args.only]
    started, load_before = time.time(), os.getloadavg()[0]
    runs: dict[str, list[Row]] = {e: [] for e in engines}
    crashes: dict[str, list[Row]] = {e: [] for e in engines}
    try:
        with private_postgres("shared_preload_libraries=pg_stat_statements") as server:
            bench = Bench(server, args.timeout)
            import psycopg

            with psycopg.connect(server.url, autocommit=True) as admin:
                version = admin.execute("SHOW server_version").fetchone()
                admin.execute("CREATE EXTENSION pg_stat_statements")
            for repetition in range(args.repeat):
                for engine in engines:
                    runs[engine].append(bench.sequential(engine, args.n))
                    _progress(repetition, engine, "sequential", runs[engine][-1])
                for engine in [e for e in engines if e != "floor"]:
                    crashes[engine].append(bench.crash(engine, args.n, args.crash_at))
                    _progress(repetition, engine, "crash", crashes[engine][-1])
            machine = machine_description(Path(server.data_dir))
    except PostgresUnavailableError as exc:
        print(f"postgres.py: {exc}", file=sys.stderr)
        return 2
    rows = [summarize(e, args.n, runs[e], crashes[e]) for e in engines]
    report = {
        "machine": machine,
        "server_version": version[0].split()[0] if version else "?",
        "config": {
            "n": args.n,
            "repeat": args.repeat,
            "crash_at": args.crash_at,
            "engines": engines,
            "wall_seconds": round(time.time() - started, 1),
            "load_average": [round(load_before, 2), round(os.getloadavg()[0], 2)],
        },
        "rows": rows,
    }
    section = render_section(report)
    print(json.dumps(report, indent=2) if args.json else section)
    if args.markdown:
        write_section(args.markdown, section)
        print(f"wrote the PostgreSQL section of {args.markdown}", file=sys.stderr)
    failed = [
        r for r in rows if r["engine"] in ("floor", "wfctl") and r["status"] in ("error", "wrong")
    ]
    return 1 if failed else 0


def _progress(repetition: int, engine: str, what: str, row: Row) -> None:
    if row.get("status") != "ok":
        outcome = f"{row.get('status')}: {row.get('note', '')}"[:120]
    elif what == "crash":
        outcome = f"{row['rerun']} re-run"
    else:
        outcome = f"{row['seconds']:.3f} s"
    print(f"  #{repetition + 1} {engine:<16} {what:<10} {outcome}", file=sys.stderr, flush=True)


if __name__ == "__main__":
    sys.exit(main())
