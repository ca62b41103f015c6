"""Rendering what the inspecting commands read of a source of another engine: runs, a run's
records as a tree, one record."""

from __future__ import annotations

from collections.abc import Sequence
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
    columns = (
        Column("run"),
        Column("workflow", rank=3, wrap_min=8),
        Column("status"),
        Column("records", rank=4, justify="right"),
        Column(time_header("updated", current), rank=2),
        Column("problem", rank=1, wrap_min=12),
    )
    rows: list[list[Cell]] = [
        [
            info.run_id,
            info.workflow,
            status_text(info.status),
            str(info.record_count),
            human_time(info.updated_at, current) if info.updated_at else "-",
            Text(info.problem, style="red") if info.problem else "",
        ]
        for info in runs
    ]
    if rows:
        print_table(out, fitted_table(columns, rows, out.width, title=f"{kind} runs"))
    out.print(f"{len(runs)} shown of {matching} matching ({total} in the {kind} store)")


def print_source_log(kind: str, run_id: str, tree: Sequence[tuple[int, Entry]]) -> None:
    """The run's records as a timeline: a branch of a fork (or a later root) is indented
    under it and marked ``└─``."""
    out = stdout()
    out.print(Text(f"{run_id} ({kind}): {len(tree)} record(s)", style="bold"))
    shown_time = TimelineTimes(now())
    for depth, entry in tree:
        mark = "  " * (depth - 1) + "└─ " if depth else ""
        parents = ", ".join(entry.parent_ids) or "root"
        out.print(
            f"{mark}{entry.order:>4}  {entry.kind:<10} {shown_time(entry.time)}  {entry.entry_id}"
        )
        out.print(Text(f"{'  ' * depth}      parent: {parents}", style="dim"))


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
