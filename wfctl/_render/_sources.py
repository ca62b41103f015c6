"""Rendering what the inspecting commands read of a source of another engine: runs, a run's
records as a tree, one record."""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

from ._common import Text, json_text, status_text, stdout
from ._fit import Cell, Column, fitted_table, print_table
from ._time import TimelineTimes, human_time, now, time_header, time_with_age

if TYPE_CHECKING:
    from wfctl._sources._protocol import Entry, RunInfo

__all__ = ["print_source_entry", "print_source_log", "print_source_runs"]


def print_source_runs(kind: str, runs: Sequence[RunInfo], matching: int, total: int) -> None:
    """One row per run, then the count line."""
    out = stdout()
    current = now()
    details = any(info.details for info in runs)  # the store's own facts (DBOS's status, ...)
    columns: tuple[Column, ...] = (
        Column("run"),
        Column("workflow", rank=3, wrap_min=8),
        Column("status"),
        Column("records", rank=4, justify="right"),
        Column(time_header("updated", current), rank=2),
        *([Column("details", rank=1, wrap_min=12)] if details else []),
        Column("problem", rank=1, wrap_min=12),
    )
    rows: list[list[Cell]] = [
        [
            info.run_id,
            info.workflow,
            status_text(info.status),
            str(info.record_count),
            human_time(info.updated_at, current) if info.updated_at else "-",
            *([_run_details(info)] if details else []),
            Text(info.problem, style="red") if info.problem else "",
        ]
        for info in runs
    ]
    if rows:
        print_table(out, fitted_table(columns, rows, out.width, title=f"{kind} runs"))
    out.print(f"{len(runs)} shown of {matching} matching ({total} in the {kind} store)")


def _run_details(info: RunInfo) -> str:
    """A run's details on one line (``iterations 3, pending requests 1, 2,315 bytes``)."""
    parts = [f"{key.replace('_', ' ')} {value}" for key, value in info.details.items()]
    if info.size_bytes is not None:
        parts.append(f"{info.size_bytes:,} bytes")
    return ", ".join(parts)


#: The facts of a record's summary a timeline shows, in this order, with their labels (a
#: reader's summary that holds none of them shows its parent line only).
_FACTS = (
    ("checkpoint_ns", "namespace"),
    ("step", "step"),
    ("iteration", "iteration"),
    ("nodes", "ran"),
    ("messages", "message"),
    ("requests", "request"),
    ("steps", "cached"),
    ("interrupts", "interrupt"),
    ("resumes", "resume"),
    ("errors", "error"),
    ("tasks", "task"),
    ("problems", "problem"),
)


def print_source_log(
    kind: str,
    run_id: str,
    count: int | None,
    tree: Iterable[tuple[int, Entry]],
    *,
    verbose: bool = False,
) -> None:
    """The run's records as a timeline: a branch of a fork (or a later root) is indented
    under it and marked ``└─``; the facts of each record's summary (step or iteration, the nodes
    that ran, messages, requests, cached steps, interrupts, resumes, errors, task results,
    problems) under it, and with ``verbose`` its values (``data``) as JSON. Each record is printed as it comes (``count``: how many, when
    known first)."""
    out = stdout()
    counted = "" if count is None else f": {count} record(s)"
    shown_time = TimelineTimes(now())
    headed = False
    for depth, entry in tree:
        if not headed:  # the run's whole id, when it was named by a start of it
            out.print(Text(f"{entry.run_id} ({kind}){counted}", style="bold"))
            headed = True
        mark = "  " * (depth - 1) + "└─ " if depth else ""
        parents = ", ".join(entry.parent_ids) or "root"
        indent = "  " * depth + "      "
        out.print(
            f"{mark}{entry.order:>4}  {entry.kind:<10} {shown_time(entry.time)}  {entry.entry_id}"
        )
        out.print(Text(f"{indent}parent: {parents}", style="dim"))
        for line, style in _facts(entry.summary):
            out.print(Text(f"{indent}{line}", style=style))
        if verbose:
            for line in json_text(entry.data).splitlines():
                out.print(Text(f"{indent}{line}", style="dim"))
    if not headed:
        out.print(Text(f"{run_id} ({kind}){counted}", style="bold"))


def _facts(summary: dict[str, Any]) -> list[tuple[str, str]]:
    lines: list[tuple[str, str]] = []
    for key, label in _FACTS:
        value = summary.get(key)
        if value is None or value == [] or value == "":
            continue
        items = value if isinstance(value, list) and key != "nodes" else [value]
        for item in items:
            text = ", ".join(map(str, item)) if key == "nodes" else _fact(item)
            lines.append((f"{label}: {text}", "red" if key in ("errors", "problems") else ""))
    return lines


def _fact(value: Any) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, dict) and set(value) == {"task", "result"}:
        return f"{value['task']} -> {_result(value['result'])}"
    return _result(value)


def _result(value: Any) -> str:
    """A task's result on one line; a pickle by its reading, marked as one (``show`` and
    ``-v`` give the whole marker: its size and scan)."""
    if isinstance(value, dict) and value.get("$opaque") == "pickle":
        if "reading" in value:
            reading = value["reading"]
            match reading:
                case {"$type": str(name), "$args": [str(message)]}:  # an exception, as pickled
                    text = f"{name}: {message}"
                case _:
                    text = json.dumps(reading, ensure_ascii=False, default=str)
            return f"{text} (a pickle read as data, never run)"
        return f"(a pickle of {value.get('bytes')} bytes, not readable as data; see show)"
    return json.dumps(value, ensure_ascii=False, default=str)


def print_source_entry(kind: str, entry: Entry) -> None:
    """One record: where it sits, then its summary and its data (decoded where JSON, a
    pickle as the reader's opaque marker)."""
    out = stdout()
    out.print(Text(f"{entry.entry_id} ({kind})", style="bold"))
    fields: list[tuple[str, Any]] = [
        ("run", entry.run_id),
        ("order", entry.order),
        ("kind", entry.kind),
        ("time", time_with_age(entry.time, now(), millis=True)),
        ("parents", ", ".join(entry.parent_ids) or "none (a root)"),
        ("bytes", entry.size_bytes),
    ]
    for name, value in fields:
        out.print(f"{name:>8}: {value}")
    out.print(Text("summary", style="bold"))
    out.print(json_text(entry.summary))
    out.print(Text("data", style="bold"))
    out.print(json_text(entry.data))
