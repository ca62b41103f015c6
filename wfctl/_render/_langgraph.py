"""Rendering what a prune or a removal of threads of a LangGraph store removed, or would."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ._common import Text, stdout
from ._fit import Cell, Column, fitted_table, print_table

if TYPE_CHECKING:
    from wfctl._storage._langgraph import ChangeReport

__all__ = ["print_langgraph_change"]


def print_langgraph_change(report: ChangeReport) -> None:
    """One row per thread (what goes, bytes freed, or why it is left), then the total line."""
    out = stdout()
    verb = "removed" if report.applied else "would remove"
    columns = (
        Column("thread"),
        Column("checkpoints", justify="right"),
        Column("writes", justify="right"),
        Column("blobs", justify="right"),
        Column("bytes", justify="right"),
        Column("kept", rank=2, justify="right"),
        Column("left as it is", rank=1, wrap_min=12),
    )
    rows: list[list[Cell]] = [
        [
            change.thread_id,
            str(change.checkpoints),
            str(change.writes),
            str(change.blobs),
            str(change.bytes),
            str(change.kept_checkpoints),
            Text(change.declined, style="yellow") if change.declined else "",
        ]
        for change in report.threads
    ]
    title = f"{report.action}: {verb} ({report.kind})"
    if rows:
        print_table(out, fitted_table(columns, rows, out.width, title=title))
    declined = sum(1 for change in report.threads if change.declined)
    line = f"{verb} {report.bytes} bytes from {len(report.threads) - declined} thread(s)"
    if declined:
        line += f"; {declined} left as it is"
    if not report.applied:
        line += " (nothing changed: --yes applies it)"
    out.print(line)
