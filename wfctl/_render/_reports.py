"""Rendering verification and replay reports: verify-lineage and replay."""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from rich.console import RenderableType
from rich.panel import Panel
from rich.syntax import Syntax
from rich.table import Table

from wfctl._errors import UnencodableValueError
from wfctl._inspect._diff import STEP_STATUSES
from wfctl._records._codec import encode

from ._common import Text, render_stored, status_text, stdout
from ._fit import Cell, Column, fitted_table, print_rows, print_table
from ._time import now, times_in

if TYPE_CHECKING:
    from wfctl._inspect._lineage import LineageReport
    from wfctl._inspect._replay import ReplayRows

__all__ = ["print_lineage", "print_replay"]


def print_lineage(report: LineageReport) -> None:
    """Show one verdict per run, with every problem and note named."""
    out = stdout()
    if not report.runs:
        out.print("no run was verified")
        return
    columns = (
        Column("run"),
        Column("workflow", rank=2, wrap_min=8),
        Column("records", rank=3, justify="right"),
        Column("head", rank=4, justify="right"),
        Column("verdict"),
        Column("problems", rank=1, justify="right"),
    )
    rows: list[list[Cell]] = [
        [
            verdict.run_id,
            verdict.workflow_name or "?",
            str(verdict.checkpoints),
            verdict.head.rpartition(".")[2] if verdict.head else "-",
            Text("ok", style="green") if verdict.ok else Text("BROKEN", style="bold red"),
            str(len(verdict.problems)),
        ]
        for verdict in report.runs
    ]
    print_table(out, fitted_table(columns, rows, out.width, title="lineage verification"))
    current = now()
    for verdict in report.runs:
        if not verdict.problems and not verdict.notes:
            continue
        out.print(Text(f"{verdict.run_id}:", style="bold"))
        findings = Table.grid(padding=(0, 1))
        findings.add_column(no_wrap=True)
        findings.add_column(overflow="fold")  # a long path is folded, never cut short
        for problem in verdict.problems:
            findings.add_row(
                Text("  ✗", style="red"), Text(times_in(problem, current), style="red")
            )
        for note in verdict.notes:
            findings.add_row(Text("  ·", style="dim"), Text(times_in(note, current), style="dim"))
        out.print(findings)
    broken = sum(1 for v in report.runs if not v.ok)
    summary = f"{len(report.runs)} run(s) checked, {broken} broken"
    out.print(Text(summary, style="red" if broken else "green"))


def print_replay(rows: ReplayRows) -> None:
    """Show a replay: what it did, outputs side by side, the unified diff, then the step table
    row by row as the rows are compared, their counts and the verdict."""
    out = stdout()
    report = rows.report
    out.print(
        Text.assemble(
            f"replay {report.replay_run_id} of {report.source_checkpoint_id} "
            f"(source run {report.source_run_id}, {report.source_status}): ",
            status_text(report.replay_status),
        )
    )
    if report.target_recorded:
        out.print(f"code: {report.target} (the target run {report.source_run_id} recorded)")
    if report.error:
        out.print(Text(f"✗ {report.error_type}: {report.error}", style="red"))
    sides = Table(expand=True, show_lines=False)
    sides.add_column("source outputs", ratio=1, overflow="fold")
    sides.add_column("replay outputs", ratio=1, overflow="fold")
    sides.add_row(_outputs(report.outputs_source), _outputs(report.outputs_replay))
    out.print(sides)
    if report.outputs_diff:
        out.print(
            Panel(Syntax(report.outputs_diff, "diff", theme="ansi_dark"), title="outputs diff")
        )
    elif report.outputs_source is not None and report.outputs_replay is not None:
        out.print("outputs equal")
    columns = (
        Column("key"),
        Column("status"),
        Column("source", rank=1, wrap_min=10),
        Column("replay", rank=1, wrap_min=10),
    )
    cells: Iterator[list[str | Text]] = (
        [row.key, _status_row(row.status), row.source_preview or "", row.replay_preview or ""]
        for row in rows
    )
    # Past a page, each row's key fits its column, and so does any status.
    least = (rows.widest_key, max(map(len, STEP_STATUSES)), 0, 0)
    print_rows(out, columns, cells, title="steps", least=least)
    finished = rows.finished()
    out.print(", ".join(f"{count} {status}" for status, count in finished.counts.items()))
    verdict = (
        Text("identical", style="green") if finished.identical else Text("DIFFERS", "bold red")
    )
    out.print(Text.assemble(f"replay {report.replay_run_id}: ", verdict))


def _outputs(values: list[Any] | None) -> RenderableType:
    if values is None:
        return Text("(did not complete)", style="dim")
    try:
        return render_stored(encode(values))
    except UnencodableValueError:  # values come out of the codec, so this is only a guard
        return Text(repr(values))


def _status_row(status: str) -> Text:
    style = {"same": "green", "cached": "dim", "changed": "red", "new": "yellow"}.get(status, "")
    if status in ("failed",):
        style = "bold red"
    return Text(status, style=style)
