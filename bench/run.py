"""Benchmark wfctl against its peers, every measurement in a fresh process.

    python bench/run.py [--quick] [--repeat K] [--only wfctl,agent_framework,...]
                        [--out bench/results.json] [--markdown bench/RESULTS.md]

Peers come from ``pip install -e '.[bench]'``; a peer that is not installed gets rows that say
so, and wfctl's rows still run. Each measurement is ``python bench/_worker.py ENGINE SCENARIO N
STORE`` in a new process and a new store directory; the worker times the workflow run only.
Rows report the median of ``--repeat`` runs with the min-max range. The exit code is 1 when a
wfctl or floor measurement crashed or returned a wrong result, else 0 (peers' failures are
reported, not fatal).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import sysconfig
import tempfile
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parent
WORKER = BENCH / "_worker.py"
sys.path.insert(0, str(BENCH))

from _report import machine_description, render_markdown, targets  # noqa: E402
from engines import ENGINES, PEERS  # noqa: E402

ALL_ENGINES = ("wfctl", *PEERS)
Row = dict[str, Any]
#: Runs the processes of one repetition for (engine, store, N); returns (row scenario, result).
Cycle = Callable[[str, Path, int], list[tuple[str, Row]]]


@dataclass(frozen=True)
class Plan:
    """The sizes of one benchmark run (full or ``--quick``)."""

    sequential: tuple[int, ...]
    sequential_wfctl_only: tuple[int, ...]
    restore: tuple[int, ...]
    fanout: tuple[int, ...]
    pause: tuple[int, ...]
    lineage_runs: int
    lineage_steps: int
    startup_repeat: int
    #: Sequential steps per run of the durability scenario (full / batch / none side by side).
    durability: tuple[int, ...] = (1000,)
    #: Steps per run of the big-payload scenario (each returns 1 MB).
    big_payload: tuple[int, ...] = (20,)


FULL = Plan((100, 1000), (10_000,), (100, 1000), (10, 100, 1000), (1000,), 100, 100, 7)
QUICK = Plan((5,), (), (5,), (5,), (5,), 3, 5, 2, durability=(5,), big_payload=(2,))
#: wfctl's durability modes as the durability scenario's rows name them.
DURABILITY_ROWS = {"wfctl": "full", "wfctl batch": "batch", "wfctl none": "none"}


class Bench:
    """Runs workers, collects rows, remembers which engines turned out not to be installed."""

    def __init__(self, engines: tuple[str, ...], repeat: int, workdir: Path, timeout: float):
        self.engines = engines
        self.repeat = repeat
        self.workdir = workdir
        self.timeout = timeout
        self.missing: dict[str, str] = {}
        self.rows: list[Row] = []
        self.failed = False
        #: Size of a wfctl step record, for the floor (updated by every wfctl sequential run).
        self.step_record_bytes = 300

    # -- one process --------------------------------------------------------------------------

    def worker(self, engine: str, scenario: str, n: int, store: Path, **options: Any) -> Row:
        """Run one worker process and return the JSON object it printed (or an error row)."""
        command = [sys.executable, str(WORKER), engine, scenario, str(n), str(store)]
        command += [f"--option={key}={json.dumps(value)}" for key, value in options.items()]
        try:
            done = subprocess.run(
                command, capture_output=True, text=True, timeout=self.timeout, check=False
            )
        except subprocess.TimeoutExpired:
            return {"status": "error", "note": f"timed out after {self.timeout:.0f} s"}
        lines = done.stdout.strip().splitlines()
        if done.returncode != 0 or not lines:
            tail = (done.stderr.strip().splitlines() or ["no output"])[-1]
            return {"status": "error", "note": f"worker exit {done.returncode}: {tail}"}
        result: Row = json.loads(lines[-1])
        return result

    def fresh_store(self) -> Path:
        return Path(tempfile.mkdtemp(prefix="store-", dir=self.workdir))

    # -- one row --------------------------------------------------------------------------------

    def measure(
        self,
        scenario: str,
        n: int,
        engines: Iterable[str],
        cycle: Cycle,
        row_scenarios: Sequence[str] = (),
    ) -> None:
        """Measure ``scenario`` at ``n`` for each engine, ``repeat`` times, runs interleaved.

        ``cycle(engine, store, n)`` runs the processes of one repetition in a fresh store and
        returns ``(row scenario, worker result)`` pairs: usually one (``scenario``), two for
        pause/resume, whose row scenarios are then named in ``row_scenarios``.
        """
        row_scenarios = row_scenarios or (scenario,)
        engines = [e for e in engines if e in self.engines or e == "floor"]
        runs: dict[tuple[str, str], list[Row]] = {}
        for _ in range(self.repeat):
            for engine in engines:
                if engine in self.missing:
                    continue
                store = self.fresh_store()
                try:
                    for row_scenario, result in cycle(engine, store, n):
                        runs.setdefault((row_scenario, engine), []).append(result)
                        if result.get("status") == "not installed":
                            self.missing[engine] = result.get("note", "")
                finally:
                    shutil.rmtree(store, ignore_errors=True)
        for engine in engines:
            for row_scenario in row_scenarios:
                self.add(row_scenario, n, engine, runs.get((row_scenario, engine), []))

    def add(self, scenario: str, n: int, engine: str, runs: list[Row]) -> Row:
        """Summarize the runs of one (scenario, N, engine) into a row and keep it."""
        row = summarize(scenario, n, engine, runs, self.missing.get(engine))
        if engine in ("wfctl", "floor") and row["status"] in ("error", "wrong"):
            self.failed = True
        self.rows.append(row)
        status = row["status"] if row["status"] != "ok" else f"{row['seconds']['median']:.4f} s"
        print(f"  {scenario:<14} N={n:<6} {engine:<17} {status}", file=sys.stderr, flush=True)
        return row

    # -- scenarios ------------------------------------------------------------------------------

    def one_process(self, scenario: str, **options: Any) -> Cycle:
        """A cycle of a single worker process running ``scenario``."""

        def cycle(engine: str, store: Path, n: int) -> list[tuple[str, Row]]:
            return [(scenario, self.worker(engine, scenario, n, store, **options))]

        return cycle

    def restore_cycle(self, engine: str, store: Path, n: int) -> list[tuple[str, Row]]:
        """Complete a run in one process; restore it in another (only that one is timed)."""
        setup = self.worker(engine, "restore_setup", n, store)
        if setup.get("status") != "ok":
            return [("restore", setup)]
        return [("restore", self.worker(engine, "restore", n, store))]

    def pause_resume_cycle(self, engine: str, store: Path, n: int) -> list[tuple[str, Row]]:
        """Pause in one process, resume in another; both are timed, as two rows."""
        pause = self.worker(engine, "pause", n, store)
        if pause.get("status") != "ok":
            return [("pause", pause), ("resume", pause)]
        return [("pause", pause), ("resume", self.worker(engine, "resume", n, store))]

    def sequential_cycle(self, engine: str, store: Path, n: int) -> list[tuple[str, Row]]:
        """One sequential run; the floor's records take the size of wfctl's last step record.

        The floor is measured in the same repetition loop as the engines, right after them, so
        it sees the same disk conditions as the wfctl run it is compared with.
        """
        options = {"record_bytes": self.step_record_bytes} if engine == "floor" else {}
        result = self.worker(engine, "sequential", n, store, **options)
        if engine == "wfctl":
            measured = (result.get("detail") or {}).get("step_record_bytes")
            self.step_record_bytes = measured or self.step_record_bytes
        return [("sequential", result)]

    def durability(self, n: int) -> None:
        """Sequential steps with each durability mode, the floor and the peers, interleaved.

        Rows are named ``wfctl`` (full), ``wfctl batch`` and ``wfctl none``; the floor's
        records take the size of wfctl's step record, as in the sequential scenario.
        """
        names = [name for name in DURABILITY_ROWS if "wfctl" in self.engines]
        names += [peer for peer in PEERS if peer in self.engines] + ["floor"]
        runs: dict[str, list[Row]] = {name: [] for name in names}
        for _ in range(self.repeat):
            for name in names:
                engine = "wfctl" if name in DURABILITY_ROWS else name
                if engine in self.missing:
                    continue
                options: dict[str, Any] = {}
                if name in DURABILITY_ROWS:
                    options["durability"] = DURABILITY_ROWS[name]
                elif name == "floor":
                    options["record_bytes"] = self.step_record_bytes
                store = self.fresh_store()
                try:
                    result = self.worker(engine, "sequential", n, store, **options)
                finally:
                    shutil.rmtree(store, ignore_errors=True)
                runs[name].append(result)
                if result.get("status") == "not installed":
                    self.missing[engine] = result.get("note", "")
        for name in names:
            row = self.add("durability", n, name, runs[name])
            if name in DURABILITY_ROWS and row["status"] in ("error", "wrong"):
                self.failed = True

    def verify_lineage(self, runs: int, steps: int) -> None:
        """Time ``wfctl verify-lineage --store DIR --json`` over ``runs`` runs of ``steps`` steps."""
        scenario, label = "verify_lineage", steps
        if "wfctl" not in self.engines:
            return
        if "wfctl" in self.missing:
            self.add(scenario, label, "wfctl", [])
            return
        store = self.fresh_store()
        try:
            populated = self.worker("wfctl", "populate", steps, store, runs=runs)
            if populated.get("status") != "ok":
                self.add(scenario, label, "wfctl", [populated])
                return
            command = [*wfctl_command(), "verify-lineage", "--store", str(store), "--json"]

            def check(stdout: str) -> str | None:
                try:
                    verdicts = json.loads(stdout)["runs"]
                except (ValueError, KeyError, TypeError) as exc:
                    return f"--json output unreadable: {exc!r}"[:200]
                return (
                    None if len(verdicts) == runs else f"{len(verdicts)} runs verified, not {runs}"
                )

            results = [
                cli_run(command, self.timeout, negative_exit=True, check_output=check)
                for _ in range(max(self.repeat, 3))
            ]
            row = self.add(scenario, label, "wfctl", results)
            row["detail"] = {"runs": runs, "steps_per_run": steps}
        finally:
            shutil.rmtree(store, ignore_errors=True)

    def startup(self, repeat: int) -> None:
        """Wall time of ``wfctl --help`` against ``python -c "import typer"``, interleaved."""
        if "wfctl" not in self.engines:
            return
        commands = {
            "wfctl --help": [*wfctl_command(), "--help"],
            'python -c "import typer"': [sys.executable, "-c", "import typer"],
        }
        results: dict[str, list[Row]] = {name: [] for name in commands}
        for command in commands.values():  # warm the page cache; not measured
            cli_run(command, self.timeout)
        for _ in range(repeat):
            for name, command in commands.items():
                results[name].append(cli_run(command, self.timeout))
        for name in commands:
            self.add("startup", 0, name, results[name])


def wfctl_command() -> list[str]:
    """Return how to run the wfctl CLI: the installed script, else its console entry point.

    The script installed with this interpreter comes first: a ``wfctl`` found on ``PATH`` may
    belong to another installation, or be a version manager's shim that adds its own start-up.
    """
    beside = Path(sysconfig.get_path("scripts")) / "wfctl"
    script = str(beside) if beside.exists() else shutil.which("wfctl")
    if script:
        return [script]
    launcher = "import sys; from wfctl._cli import main; sys.argv[0] = 'wfctl'; sys.exit(main())"
    return [sys.executable, "-c", launcher]


def command_text(command: list[str]) -> str:
    """Return ``command`` as a person would type it (``python`` for this interpreter)."""
    parts = ["python" if part == sys.executable else part for part in command]
    return " ".join(json.dumps(part) if " " in part else part for part in parts)


def cli_run(
    command: list[str],
    timeout: float,
    *,
    negative_exit: bool = False,
    check_output: Callable[[str], str | None] | None = None,
) -> Row:
    """Run a command once; its wall time is the measurement.

    Exit 0 is ok, unless ``check_output(stdout)`` names a problem ("wrong"). With
    ``negative_exit``, exit 1 is the command's negative finding ("wrong"). Any other outcome
    means the command is not usable yet ("unavailable").
    """
    env = os.environ | {
        "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))
    }
    start = time.perf_counter()
    try:
        done = subprocess.run(
            command, capture_output=True, text=True, timeout=timeout, env=env, check=False
        )
    except subprocess.TimeoutExpired:
        return {"status": "error", "note": f"timed out after {timeout:.0f} s"}
    seconds = time.perf_counter() - start
    if done.returncode == 0:
        problem = check_output(done.stdout) if check_output else None
        return {"status": "wrong" if problem else "ok", "note": problem or "", "seconds": seconds}
    last = (done.stderr.strip().splitlines() or done.stdout.strip().splitlines() or [""])[-1]
    if done.returncode == 1 and negative_exit and "Traceback" not in done.stderr:
        return {"status": "wrong", "note": f"exit 1: {last}"[:200], "seconds": seconds}
    return {"status": "unavailable", "note": f"exit {done.returncode}: {last}"[:200]}


def summarize(scenario: str, n: int, engine: str, runs: list[Row], missing: str | None) -> Row:
    """Median and range of the runs' times; other figures from the run with the median time."""
    row: Row = {"scenario": scenario, "n": n, "engine": engine, "status": "ok", "note": ""}
    timed = [r for r in runs if r.get("status") in ("ok", "wrong") and r.get("seconds") is not None]
    bad = [r for r in runs if r.get("status") not in ("ok",)]
    if not runs:
        row["status"], row["note"] = ("not installed", missing or "") if missing else ("n/a", "")
    elif bad and not timed:
        row["status"], row["note"] = bad[0]["status"], bad[0].get("note", "")
    elif bad:
        worst = next((r for r in bad if r["status"] == "error"), bad[0])
        row["status"], row["note"] = worst["status"], worst.get("note", "")
    if timed:
        seconds = sorted(r["seconds"] for r in timed)
        middle = sorted(timed, key=lambda r: r["seconds"])[(len(timed) - 1) // 2]
        row |= {
            k: v
            for k, v in middle.items()
            if k not in ("engine", "scenario", "n", "status", "note")
        }
        row["seconds"] = {
            "median": statistics.median(seconds),
            "min": seconds[0],
            "max": seconds[-1],
        }
    row["runs"] = runs
    return row


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description="Benchmark wfctl against agent-framework and langgraph.",
        epilog="Example: python bench/run.py --repeat 3 --markdown bench/RESULTS.md",
    )
    parser.add_argument("--quick", action="store_true", help="tiny N, one run each (smoke test)")
    parser.add_argument(
        "--repeat", type=int, help="runs per measurement (default 3; 1 with --quick)"
    )
    parser.add_argument(
        "--out", type=Path, default=BENCH / "results.json", help="JSON results file"
    )
    parser.add_argument("--markdown", type=Path, help="also write the Markdown report here")
    parser.add_argument(
        "--only",
        default=",".join(ALL_ENGINES),
        help=f"comma-separated engines to run (default {','.join(ALL_ENGINES)})",
    )
    parser.add_argument(
        "--workdir", type=Path, help="where stores are created (default: a temp dir)"
    )
    parser.add_argument("--timeout", type=float, default=1800, help="seconds allowed per process")
    args = parser.parse_args(argv)
    args.only = tuple(e.strip() for e in args.only.split(",") if e.strip())
    unknown = [e for e in args.only if e not in ALL_ENGINES]
    if unknown:
        parser.error(
            f"unknown engine(s) {', '.join(unknown)}; choose from {', '.join(ALL_ENGINES)}"
        )
    if args.repeat is None:
        args.repeat = 1 if args.quick else 3
    if args.repeat < 1:
        parser.error("--repeat must be at least 1")
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    plan = QUICK if args.quick else FULL
    if args.workdir is not None:
        args.workdir.mkdir(parents=True, exist_ok=True)
    workdir = Path(tempfile.mkdtemp(prefix="wfctl-bench-", dir=args.workdir))
    # An installed wfctl runs from compiled bytecode: so do the processes timed here, from a
    # private cache the warm-up runs write, even where PYTHONDONTWRITEBYTECODE is set (then a
    # checkout without __pycache__ compiled every wfctl module at every start: ~10 ms of
    # `wfctl --help`, as the seventeenth round in RESULTS.md found).
    os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
    os.environ["PYTHONPYCACHEPREFIX"] = str(workdir / "pycache")
    bench = Bench(args.only, args.repeat, workdir, args.timeout)
    started = time.time()
    try:
        for n in plan.sequential:
            bench.measure("sequential", n, (*ALL_ENGINES, "floor"), bench.sequential_cycle)
        for n in plan.sequential_wfctl_only:
            bench.measure("sequential", n, ("wfctl", "floor"), bench.sequential_cycle)
        for n in plan.restore:
            bench.measure("restore", n, ALL_ENGINES, bench.restore_cycle)
        for n in plan.fanout:
            bench.measure("fanout", n, ALL_ENGINES, bench.one_process("fanout"))
        for n in plan.pause:
            bench.measure("pause", n, ALL_ENGINES, bench.pause_resume_cycle, ("pause", "resume"))
        for n in plan.durability:
            bench.durability(n)
        for n in plan.big_payload:
            engines = ("wfctl", "langgraph_sqlite", "langgraph_memory", "floor")
            bench.measure("big_payload", n, engines, bench.one_process("big_payload"))
        bench.verify_lineage(plan.lineage_runs, plan.lineage_steps)
        bench.startup(plan.startup_repeat)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    report = {
        "machine": machine_description(workdir.parent),
        "config": {
            "quick": args.quick,
            "repeat": args.repeat,
            "engines": list(args.only),
            "labels": {name: spec.label for name, spec in ENGINES.items()},
            "plan": asdict(plan),
            "wall_seconds": round(time.time() - started, 1),
            "wfctl_cli": command_text(wfctl_command()),
        },
        "rows": bench.rows,
        "targets": targets(bench.rows, plan),
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    print(f"wrote {args.out}", file=sys.stderr)
    if args.markdown:
        args.markdown.parent.mkdir(parents=True, exist_ok=True)
        args.markdown.write_text(render_markdown(report), encoding="utf-8")
        print(f"wrote {args.markdown}", file=sys.stderr)
    return 1 if bench.failed else 0


if __name__ == "__main__":
    sys.exit(main())
