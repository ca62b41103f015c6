"""Rendering verification and replay reports: verify-lineage and replay."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from rich.console import RenderableType
from rich.panel import Panel
from rich.syntax import Syntax
from rich.table import Table

from wfctl._errors import UnencodableValueError
from wfctl._inspect._diff import STEP_STATUSES, StepDiff
from wfctl._records._codec import encode

from ._common import Text, render_stored, status_text, stdout
from ._fit import Cell, Column, RowsPrinter, fitted_table, print_table
from ._time import now, times_in

if TYPE_CHECKING:
    from wfctl._inspect._lineage import LineageReport
    from wfctl._inspect._replay import ReplayRows

__all__ = ["ReplayPrinter", "print_lineage"]


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


class ReplayPrinter:
    """Show a replay: the step table row by row as the rows are decided, some while the replay
    runs (:meth:`start`, :meth:`row`), then (:meth:`finish`) their counts, what the replay did,
    the outputs side by side, their unified diff and the verdict.

    ``before_write`` is called once, before the first line is written (a live progress display
    on the same terminal is stopped there).
    """

    def __init__(self, before_write: Callable[[], None] | None = None) -> None:
        self._out = stdout()
        columns = (
            Column("key"),
            Column("status"),
            Column("source", rank=1, wrap_min=10),
            Column("replay", rank=1, wrap_min=10),
        )
        self._table = RowsPrinter(self._out, columns, title="steps", before_write=before_write)

    def start(self, source_run_id: str, source_checkpoint_id: str, widest_key: int) -> None:
        """Told, before any row, the length of the longest key the source recorded."""
        self._widen(widest_key)

    def _widen(self, widest_key: int) -> None:
        """Past a page, each key as long as ``widest_key`` fits its column, and so does any
        status."""
        self._table.least = (widest_key, max(map(len, STEP_STATUSES)), 0, 0)

    def row(self, row: StepDiff) -> None:
        """Show the table's next row."""
        self._table.add(
            [row.key, _status_row(row.status), row.source_preview or "", row.replay_preview or ""]
        )

    def finish(self, rows: ReplayRows) -> None:
        """Show the rows left (``rows``, iterated), then everything known once they are."""
        table = self._table
        self._widen(rows.widest_key)  # the replay's own keys too, for the pages not yet written
        for row in rows:
            self.row(row)
        table.close()
        out, report, finished = self._out, rows.report, rows.finished()
        out.print(", ".join(f"{count} {status}" for status, count in finished.counts.items()))
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
