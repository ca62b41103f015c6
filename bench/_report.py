"""Turn the benchmark's rows into targets and a Markdown report, and describe the machine."""

from __future__ import annotations

import datetime as dt
import importlib.metadata
import os
import platform
import sys
import tomllib
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

__all__ = ["machine_description", "render_markdown", "targets"]

Row = dict[str, Any]
ROOT = Path(__file__).resolve().parent.parent
DISTRIBUTIONS = (
    "wfctl",
    "agent-framework-core",
    "langgraph",
    "langgraph-checkpoint",
    "langgraph-checkpoint-sqlite",
    "aiosqlite",
    "typer",
)
HOW_RESTORED = {
    "wfctl": "`run(checkpoint_id=<head>)` of a completed run",
    "agent_framework": "`run(checkpoint_id=<latest>)` of a completed run",
    "langgraph_sqlite": "`Command(resume=...)` of a run stopped by `interrupt()` after N tasks",
    "langgraph_memory": "",
}


# -- machine ---------------------------------------------------------------------------------


def machine_description(store_root: Path) -> dict[str, Any]:
    """Describe the machine, the interpreter, the packages and where stores were written."""
    return {
        "date": dt.datetime.now(dt.UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "nproc": len(os.sched_getaffinity(0))
        if hasattr(os, "sched_getaffinity")
        else os.cpu_count(),
        "cpu": _proc_field("/proc/cpuinfo", "model name") or platform.processor() or "unknown",
        "memory": _memory(),
        "os": platform.platform(),
        "python": sys.version.split()[0],
        "filesystem": _filesystem(store_root),
        "packages": {name: _version(name) for name in DISTRIBUTIONS},
    }


def _proc_field(path: str, key: str) -> str | None:
    try:
        with open(path, encoding="utf-8") as lines:
            for line in lines:
                name, _, value = line.partition(":")
                if name.strip() == key:
                    return value.strip()
    except OSError:
        pass
    return None


def _memory() -> str:
    total = _proc_field("/proc/meminfo", "MemTotal")
    return f"{int(total.split()[0]) / 2**20:.1f} GiB" if total else "unknown"


def _filesystem(path: Path) -> str:
    """Return ``type (device) at mount`` for the file system holding ``path``."""
    best = ("", "unknown", "")
    try:
        with open("/proc/mounts", encoding="utf-8") as mounts:
            for line in mounts:
                device, mount, kind = line.split()[:3]
                if str(path).startswith(mount) and len(mount) >= len(best[0]):
                    best = (mount, kind, device)
    except OSError:
        return "unknown"
    return f"{best[1]} ({best[2]}) at {best[0]}"


def _version(distribution: str) -> str:
    try:
        return importlib.metadata.version(distribution)
    except importlib.metadata.PackageNotFoundError:
        if distribution == "wfctl":
            project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
            return f"{project['project']['version']} (source tree)"
        return "not installed"


# -- lookups ---------------------------------------------------------------------------------


def _find(rows: Sequence[Row], scenario: str, n: int, engine: str) -> Row | None:
    """Return the row if it has a time (ok or wrong), else None."""
    for row in rows:
        if (row["scenario"], row["n"], row["engine"]) == (scenario, n, engine):
            return row if "seconds" in row else None
    return None


def _median(row: Row | None) -> float | None:
    return row["seconds"]["median"] if row else None


def _ratio(a: float | None, b: float | None) -> float | None:
    return a / b if a is not None and b else None


# -- targets ---------------------------------------------------------------------------------


def targets(rows: Sequence[Row], plan: Any) -> list[dict[str, Any]]:
    """Judge each target of the issue against the measured rows: met, missed or n/a."""
    n_seq = max(plan.sequential)
    n_restore = max(plan.restore)
    n_fan = max(plan.fanout)

    def row(scenario: str, n: int, engine: str) -> Row | None:
        return _find(rows, scenario, n, engine)

    def time_ratio(scenario: str, n: int, peer: str, limit: float, name: str) -> dict[str, Any]:
        ratio = _ratio(_median(row(scenario, n, "wfctl")), _median(row(scenario, n, peer)))
        return _target(name, ratio, limit, f"wfctl ÷ {peer} = {_x(ratio)} (limit {_x(limit)})")

    seq = row("sequential", n_seq, "wfctl")
    sqlite = row("sequential", n_seq, "langgraph_sqlite")
    fan = row("fanout", n_fan, "wfctl")
    help_time = _median(row("startup", 0, "wfctl --help"))
    typer_time = _median(row("startup", 0, 'python -c "import typer"'))
    seq_bytes = seq.get("bytes") if seq else None
    sqlite_bytes = sqlite.get("bytes") if sqlite else None
    bytes_ratio = _ratio(seq_bytes, sqlite_bytes)
    result = [
        time_ratio(
            "sequential",
            n_seq,
            "floor",
            2.0,
            f"sequential N={n_seq:,}: per-step ≤ 2x the append+fdatasync floor",
        ),
        time_ratio(
            "sequential",
            n_seq,
            "agent_framework",
            0.1,
            f"sequential N={n_seq:,}: per-step ≤ 1/10 of agent-framework (file storage)",
        ),
        time_ratio(
            "sequential",
            n_seq,
            "langgraph_memory",
            1.0 - 1e-9,
            f"sequential N={n_seq:,}: per-step below langgraph in-memory",
        ),
        _target(
            f"sequential N={n_seq:,}: bytes on disk ≤ langgraph SQLite file",
            bytes_ratio,
            1.0,
            f"{_size(seq_bytes)} vs {_size(sqlite_bytes)} = {_x(bytes_ratio)}",
        ),
        time_ratio(
            "restore",
            n_restore,
            "langgraph_sqlite",
            0.25,
            f"restore N={n_restore:,}: ≤ 1/4 of langgraph SQLite resume",
        ),
        _count_target(f"fan-out N={n_fan:,}: one root", fan, "roots", lambda v: v == 1),
        _count_target(
            f"fan-out N={n_fan:,}: 0 unreachable from the latest",
            fan,
            "unreachable",
            lambda v: v == 0,
        ),
        _count_target(
            f"fan-out N={n_fan:,}: records < N/4 ({n_fan // 4:,})",
            fan,
            "records",
            lambda v: v < n_fan / 4,
        ),
        time_ratio(
            "fanout",
            n_fan,
            "langgraph_memory",
            1.0 - 1e-9,
            f"fan-out N={n_fan:,}: time below langgraph in-memory",
        ),
        _target(
            '`wfctl --help` ≤ 1.5x `python -c "import typer"`',
            _ratio(help_time, typer_time),
            1.5,
            f"{_ms(help_time)} vs {_ms(typer_time)} = {_x(_ratio(help_time, typer_time))}",
        ),
        *_durability_targets(rows, plan),
    ]
    return result


def _durability_targets(rows: Sequence[Row], plan: Any) -> list[dict[str, Any]]:
    """The targets of the durability modes and of big payloads."""
    out: list[dict[str, Any]] = []
    n = max(getattr(plan, "durability", ()) or (0,))
    floor = _median(_find(rows, "durability", n, "floor"))
    for name, limit in (("wfctl", 1.5), ("wfctl batch", 0.5)):
        ratio = _ratio(_median(_find(rows, "durability", n, name)), floor)
        mode = "full" if name == "wfctl" else "batch"
        out.append(
            _target(
                f"durability N={n:,}: {mode} ≤ {limit}x the append+fdatasync floor per step",
                ratio,
                limit,
                f"{name} ÷ floor = {_x(ratio)} (same run, interleaved)",
            )
        )
    n_big = max(getattr(plan, "big_payload", ()) or (0,))
    detail = (_find(rows, "big_payload", n_big, "wfctl") or {}).get("detail") or {}
    warm, small = detail.get("cpu_seconds_warm"), detail.get("cpu_seconds_small")
    per_mb = (warm - small) / n_big if warm is not None and small is not None and n_big else None
    out.append(
        _target(
            "big payload: ≤ 1 ms of CPU per MB of step result, end to end",
            per_mb / 1e-3 if per_mb is not None else None,
            1.0,
            f"{_ms(per_mb)} CPU per MB: a 1 MB step's {_ms(warm / n_big if warm else None)} less"
            f" a 100-character step's {_ms(small / n_big if small else None)} (wfctl, full"
            f" durability, N={n_big}, the process's second and third runs)",
        )
    )
    return out


def _target(name: str, ratio: float | None, limit: float, evidence: str) -> dict[str, Any]:
    verdict = "n/a" if ratio is None else "met" if ratio <= limit else "missed"
    return {
        "target": name,
        "ratio": ratio,
        "limit": limit,
        "verdict": verdict,
        "evidence": evidence,
    }


def _count_target(
    name: str, row: Row | None, key: str, ok: Callable[[int], bool]
) -> dict[str, Any]:
    value = row.get(key) if row else None
    verdict = "n/a" if value is None else "met" if ok(value) else "missed"
    evidence = f"{key} = {_int(value)}"
    return {"target": name, "value": value, "verdict": verdict, "evidence": evidence}


# -- formatting ------------------------------------------------------------------------------


def _payload_cpu(row: Row) -> list[str]:
    """A big-payload row's CPU per step, and per MB beyond a 100-character step (wfctl)."""
    detail, n = row.get("detail") or {}, row["n"]
    cpu, warm, small = (
        detail.get(k) for k in ("cpu_seconds", "cpu_seconds_warm", "cpu_seconds_small")
    )
    if cpu is None or not n:
        return ["—", "—"]
    return [_ms(cpu / n), "—" if warm is None or small is None else _ms((warm - small) / n)]


def _ms(seconds: float | None) -> str:
    if seconds is None:
        return "—"
    if seconds >= 1:
        return f"{seconds:.2f} s"
    return f"{seconds * 1000:.3g} ms" if seconds * 1000 < 100 else f"{seconds * 1000:.0f} ms"


def _x(ratio: float | None) -> str:
    return "—" if ratio is None else f"{ratio:.3g}x"


def _size(value: int | None) -> str:
    if value is None:
        return "—"
    for unit, scale in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if value >= scale:
            return f"{value / scale:.3g} {unit}"
    return f"{value} B"


def _int(value: int | None) -> str:
    return "—" if value is None else f"{value:,}"


def _time_cell(row: Row) -> str:
    """The median with its min-max range, or what kept the row from having a time."""
    if "seconds" not in row:
        return f"{row['status']}: {row['note']}" if row.get("note") else row["status"]
    s = row["seconds"]
    cell = _ms(s["median"])
    if s["max"] > s["min"]:
        scale, unit = (1, "s") if s["max"] >= 1 else (1000, "ms")
        cell = f"{cell} ({s['min'] * scale:.3g}-{s['max'] * scale:.3g} {unit})"
    return cell if row["status"] == "ok" else f"{cell} ⚠ {row['status']}: {row['note']}"


def _table(headers: Sequence[str], lines: Sequence[Sequence[str]]) -> str:
    out = ["| " + " | ".join(headers) + " |", "|" + "---|" * len(headers)]
    out += ["| " + " | ".join(cell.replace("|", "\\|") for cell in line) + " |" for line in lines]
    return "\n".join(out)


# -- report ----------------------------------------------------------------------------------


def render_markdown(report: dict[str, Any]) -> str:
    """Render the whole report: machine, one table per scenario, targets, notes."""
    rows: list[Row] = report["rows"]
    labels: dict[str, str] = report["config"]["labels"]

    def label(engine: str) -> str:
        return labels.get(engine, engine)

    def vs_wfctl(row: Row) -> str:
        if row["engine"] == "wfctl":
            return "—"
        wfctl = _find(rows, row["scenario"], row["n"], "wfctl")
        return _x(_ratio(_median(wfctl), _median(row if "seconds" in row else None)))

    def per_step(row: Row) -> str:
        return _ms(row["seconds"]["median"] / row["n"]) if "seconds" in row and row["n"] else "—"

    def select(scenario: str) -> list[Row]:
        return sorted((r for r in rows if r["scenario"] == scenario), key=lambda r: r["n"])

    machine = report["machine"]
    packages = ", ".join(f"{k} {v}" for k, v in machine["packages"].items())
    parts = [
        "# wfctl benchmark results",
        "",
        "Generated by `python bench/run.py"
        + (" --quick" if report["config"]["quick"] else "")
        + f" --repeat {report['config']['repeat']}`. Every figure is measured in a fresh process; "
        "times are the median of the runs with the min-max range in parentheses. "
        "\"wfctl ÷ engine\" divides wfctl's median time by that engine's at the same N "
        "(below 1 means wfctl is faster).",
        "",
        "## Machine",
        "",
        f"- date: {machine['date']}",
        f"- nproc: {machine['nproc']}; CPU: {machine['cpu']}; memory: {machine['memory']}",
        f"- OS: {machine['os']}; stores on {machine['filesystem']}",
        f"- Python {machine['python']}; {packages}",
        f"- benchmark wall time: {report['config']['wall_seconds']} s",
        "",
        "## Sequential: one step called N times",
        "",
        _table(
            [
                "N",
                "engine",
                "total",
                "per step",
                "records",
                "files",
                "bytes on disk",
                "largest file",
                "wfctl ÷ engine",
            ],
            [
                [
                    f"{r['n']:,}",
                    label(r["engine"]),
                    _time_cell(r),
                    per_step(r),
                    _records(r),
                    _int(r.get("files")),
                    _size(r.get("bytes")),
                    _size(r.get("largest_file")),
                    vs_wfctl(r),
                ]
                for r in select("sequential")
            ],
        ),
        "",
        "## Restore with every step cached (fresh process)",
        "",
        _table(
            [
                "N",
                "engine",
                "time",
                "per step",
                "steps re-executed",
                "wfctl ÷ engine",
                "what is timed",
            ],
            [
                [
                    f"{r['n']:,}",
                    label(r["engine"]),
                    _time_cell(r),
                    per_step(r),
                    _int(r.get("executed")),
                    vs_wfctl(r),
                    HOW_RESTORED.get(r["engine"], ""),
                ]
                for r in select("restore")
            ],
        ),
        "",
        "## Fan-out: `asyncio.gather` of N step calls",
        "",
        _table(
            [
                "N",
                "engine",
                "time",
                "records",
                "roots",
                "unreachable from latest",
                "wfctl ÷ engine",
            ],
            [
                [
                    f"{r['n']:,}",
                    label(r["engine"]),
                    _time_cell(r),
                    _records(r),
                    _int(r.get("roots")),
                    _int(r.get("unreachable")),
                    vs_wfctl(r),
                ]
                for r in select("fanout")
            ],
        ),
        "",
        "## Pause for input after N steps, then resume (fresh process)",
        "",
        _table(
            [
                "N",
                "engine",
                "pause (N steps + request)",
                "wfctl ÷ engine",
                "resume",
                "wfctl ÷ engine",
            ],
            [
                [
                    f"{p['n']:,}",
                    label(p["engine"]),
                    _time_cell(p),
                    vs_wfctl(p),
                    _time_cell(r),
                    vs_wfctl(r),
                ]
                for p, r in zip(select("pause"), select("resume"), strict=True)
            ],
        ),
        "",
        "## Durability modes: sequential steps, full / batch / none",
        "",
        _table(
            ["N", "engine", "total", "per step", "÷ floor"],
            [
                [
                    f"{r['n']:,}",
                    label(r["engine"]),
                    _time_cell(r),
                    per_step(r),
                    _x(
                        _ratio(
                            _median(r if "seconds" in r else None),
                            _median(_find(rows, "durability", r["n"], "floor")),
                        )
                    ),
                ]
                for r in select("durability")
            ],
        ),
        "",
        "## Big payloads: N steps each returning 1 MB",
        "",
        _table(
            [
                "N",
                "engine",
                "total",
                "per step",
                "CPU per step",
                "CPU per MB (less a 100-character step)",
                "wfctl ÷ engine",
            ],
            [
                [
                    f"{r['n']:,}",
                    label(r["engine"]),
                    _time_cell(r),
                    per_step(r),
                    *_payload_cpu(r),
                    vs_wfctl(r),
                ]
                for r in select("big_payload")
            ],
        ),
        "",
        "## `wfctl verify-lineage` and start-up",
        "",
        _table(["command", "wall time (whole process)", "ratio"], _cli_lines(rows)),
        "",
        f"wfctl was run as `{report['config']['wfctl_cli']}`.",
        "",
        "## Targets",
        "",
        _table(
            ["target", "evidence", "verdict"],
            [[t["target"], t["evidence"], f"**{t['verdict']}**"] for t in report["targets"]],
        ),
        "",
        NOTES,
    ]
    return "\n".join(parts) + "\n"


def _records(row: Row) -> str:
    detail = row.get("detail") or {}
    if "writes" in detail:
        return f"{_int(row.get('records'))} ({detail['checkpoints']} checkpoints + {detail['writes']:,} writes)"
    return _int(row.get("records"))


def _cli_lines(rows: Sequence[Row]) -> list[list[str]]:
    typer = _median(_find(rows, "startup", 0, 'python -c "import typer"'))
    lines = []
    for row in rows:
        if row["scenario"] == "verify_lineage":
            runs = (row.get("detail") or {}).get("runs", "?")
            what = f"`wfctl verify-lineage --store DIR --json`, {runs} runs x {row['n']} steps"
            lines.append([what, _time_cell(row), ""])
        elif row["scenario"] == "startup":
            ratio = _ratio(_median(row if "seconds" in row else None), typer)
            relative = (
                f"{_x(ratio)} of `import typer`"
                if ratio and row["engine"] != 'python -c "import typer"'
                else ""
            )
            lines.append([f"start-up: `{row['engine']}`", _time_cell(row), relative])
    return lines


NOTES = """## How to read this

- **Workload.** One step whose argument is a distinct 100-character string and whose result is
  another 100-character string; the step body is the same function for every engine.
- **Records.** wfctl: lines of the run's `journal.jsonl` (one checksummed JSON line per
  checkpoint; group commit may cover several steps in one line). agent-framework: checkpoint
  files (each holds the whole step cache, hence the quadratic bytes). langgraph: checkpoint rows
  plus pending-write rows (each finished task is a write of the current checkpoint).
- **Lineage.** Roots are records without a parent; "unreachable" counts records that walking the
  parent links back from the engine's latest checkpoint never visits (wfctl: journal `prev`;
  agent-framework: `previous_checkpoint_id` from the latest by timestamp, as `get_latest` picks;
  langgraph: checkpoint parent configs from the thread's latest checkpoint).
- **Durability differs.** wfctl runs with `FileCheckpointStorage(durability="full")` (fsync per
  commit), except the `wfctl batch` and `wfctl none` rows of the durability table.
  agent-framework's `FileCheckpointStorage` writes a temp file and renames it without fsync.
  langgraph uses its default `durability="async"` (writes are persisted in the background while
  the next task runs) on SQLite in WAL mode with its default `synchronous=FULL`.
- **langgraph restore** is the resume of a run stopped by `interrupt()` after N tasks: replaying a
  completed thread from an earlier checkpoint re-executes every task, so resume is its only
  cached replay. The in-memory saver cannot be restored from another process (n/a).
- **The floor** appends records of the size of a measured wfctl step record to one file and
  calls `os.fdatasync` after each, in a fresh process on the same file system.
- **CPU per MB** (big payloads) is what a megabyte adds to a step: the same process runs the
  N 1 MB steps again and then N steps returning 100 characters, and the difference of their
  CPU times over N leaves out what a run and a step cost whatever their size. "CPU per step"
  divides the first run's CPU by N, with the run's own start and end and what a process's
  first run computes once.
"""
