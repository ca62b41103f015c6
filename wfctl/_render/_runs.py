"""Rendering run outcomes and store reads: run/resume, runs, log, show, export, pause, gc."""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

from rich.table import Table

from ._common import Text, json_text, render_value, status_text, stderr, stdout

if TYPE_CHECKING:
    from wfctl._checkpoint import Checkpoint
    from wfctl._gc import GcReport
    from wfctl._inspect import ExportResult, RunLog, RunsReport
    from wfctl._runner import RunReport
    from wfctl._storage import RunSummary

__all__ = [
    "print_checkpoint",
    "print_export",
    "print_gc",
    "print_log",
    "print_pause",
    "print_run_outcome",
    "print_runs",
]


def print_run_outcome(outcome: RunReport) -> None:
    """Show how a run ended: outputs on stdout; pending requests and how to resume; errors."""
    out, err = stdout(), stderr()
    steps = f"{outcome.executed} executed, {outcome.cached} cached" + (
        f", {outcome.changed} changed" if outcome.changed else ""
    )
    head = f"run {outcome.run_id} ({outcome.workflow_name})"
    if outcome.target_recorded:  # code named by the store: say which, whatever happens next
        err.print(f"code: {outcome.target} (the target run {outcome.run_id} recorded)")
    if outcome.status == "completed":
        for value in outcome.outputs:
            out.print(render_value(value), soft_wrap=True)
        err.print(
            Text.assemble(
                (f"{head} ", ""), status_text("completed"), f" in {outcome.elapsed:.2f}s: {steps}"
            )
        )
        return
    if outcome.status == "failed":
        err.print(Text(f"wfctl: {head} failed: {outcome.error}", style="red"))
        err.print(outcome.failure_note, soft_wrap=True)
        for hint in outcome.hints:
            err.print(f"{hint.when}:", soft_wrap=True)
            err.print(f"  {hint.command}", soft_wrap=True)
        return
    if outcome.status == "aborted":
        err.print(
            Text(f"{head} aborted; it stays resumable from its last checkpoint.", style="red")
        )
        err.print(f"resume it with: {outcome.resume_command}")
        return
    if outcome.requests:
        out.print(f"{head} is waiting for {len(outcome.requests)} answer(s):")
        table = Table()
        table.add_column("key", no_wrap=True)
        table.add_column("expects")
        table.add_column("request data")
        for request in outcome.requests:
            table.add_row(request.key, request.response_type or "any", render_value(request.data))
        out.print(table)
    label = "paused (interrupted)" if outcome.status == "interrupted" else "paused"
    out.print(
        Text.assemble(f"{head} ", status_text(label), f" at {outcome.checkpoint_id}: {steps}")
    )
    if outcome.answers_file is not None:
        out.print(f"answers template: {outcome.answers_file}")
    out.print("resume with:")
    out.print(f"  {outcome.resume_command}", soft_wrap=True)
    if outcome.response_example:
        out.print(f"  {outcome.response_example}", soft_wrap=True)


# -- runs, log, show, export, pause, gc --------------------------------------------------------


def print_runs(report: RunsReport) -> None:
    """Show the store's runs as a table."""
    out = stdout()
    if not report.runs:
        out.print(f"no runs in {report.store}")
        return
    table = Table(title=f"runs in {report.store}", title_justify="left")
    table.add_column("run", no_wrap=True, min_width=10)
    table.add_column("workflow", min_width=8)
    table.add_column("status", no_wrap=True)
    table.add_column("seq", justify="right")
    table.add_column("updated", no_wrap=True)
    table.add_column("notes", ratio=1)
    for run in report.runs:
        notes = []
        if run.pending:
            notes.append("waiting: " + ", ".join(run.pending))
        if run.waiting:
            notes.append(run.waiting)
        if run.origin_checkpoint_id:
            notes.append(f"from {run.origin_checkpoint_id}")
        if run.problem:
            notes.append(run.problem)
        table.add_row(
            run.run_id,
            run.workflow_name,
            status_text(run.status),
            str(run.head_seq) if run.head_seq >= 0 else "-",
            run.updated[5:19].replace("T", " "),
            "; ".join(notes),
        )
    out.print(table)


#: Log entries rendered per ``print`` call: the first page shows at once, and rich's fixed cost
#: per call is shared by many entries (one call per entry costs ~5x more for a long run).
_LOG_PAGE = 200


def _log_node(node: list[Text], label: str, items: Iterable[str]) -> None:
    for item in items:
        node.append(Text(f"{label}{item}"))


def print_log(log: RunLog) -> None:
    """Show a run's chain as a timeline, one checkpoint and its details per group of lines.

    Entries are rendered as they are read, a page at a time, never as one tree of the whole run:
    the first lines show at once and memory stays flat however long the run is.
    """
    summary = log.summary
    out = stdout()
    title = Text.assemble(
        f"run {summary.run_id} · {summary.workflow_name} · ", status_text(summary.status)
    )
    if summary.origin_checkpoint_id:
        title.append(f" · restored from {summary.origin_checkpoint_id}")
    out.print(title)
    room = max(out.width - 8, 8)  # a detail's width after its guides; longer ones wrap under it
    page = Text()
    for count, entry in enumerate(log.entries, 1):
        last = entry.seq == summary.head_seq  # the tree's guides, drawn as rich's Tree does
        page.append("└── " if last else "├── ")
        page.append_text(
            Text.assemble(
                (f"{entry.seq:>3} ", "bold"),
                (f"{entry.kind:<9}", "cyan"),
                f" {entry.timestamp[11:26]}  {entry.checkpoint_id}\n",
            )
        )
        node: list[Text] = []
        for step in entry.steps:
            took = f" ({step.duration * 1000:.1f} ms)" if step.duration is not None else ""
            node.append(Text(f"✓ {step.key}{took}", style="green"))
        for attempt in entry.attempts:
            node.append(Text(f"↻ {attempt.key}: {attempt.describe()}", style="yellow"))
        if entry.served:
            node.append(Text(f"↺ cached: {', '.join(entry.served)}", style="dim"))
        _log_node(node, "? request ", entry.requests)
        _log_node(node, "→ answer ", (f"{k} = {json_text(v)}" for k, v in entry.answers))
        if entry.error:
            node.append(Text(f"✗ {entry.error}", style="red"))
        if entry.detail:
            node.append(Text(entry.detail, style="dim"))
        outer = "    " if last else "│   "
        for index, line in enumerate(node):
            final = index == len(node) - 1
            parts = [line] if line.cell_len <= room else line.wrap(out, room)
            for part, text in enumerate(parts):
                page.append(outer + ("└── " if final else "├── ") if part == 0 else outer)
                if part:
                    page.append("    " if final else "│   ")
                page.append_text(text)
                page.append("\n")
        if count % _LOG_PAGE == 0:
            page.rstrip()
            out.print(page, soft_wrap=True)
            page = Text()
    if page:
        page.rstrip()
        out.print(page, soft_wrap=True)


def print_checkpoint(checkpoint: Checkpoint) -> None:
    """Show one checkpoint: a header line, then its record as highlighted JSON."""
    out = stdout()
    out.print(
        Text.assemble(
            (checkpoint.checkpoint_id, "bold"),
            f" · {checkpoint.kind} · {checkpoint.workflow_name} · {checkpoint.timestamp}",
        )
    )
    out.print(render_value(checkpoint.to_dict()))


def print_export(result: ExportResult) -> None:
    """Write the exported document to stdout, or say where it was written."""
    if result.output is None:
        stdout().file.write(result.text)
        return
    stderr().print(
        f"wrote {result.checkpoints} checkpoint(s) of run {result.run_id} as {result.format} "
        f"to {result.output}"
    )


def print_pause(summary: RunSummary, resume_command: str) -> None:
    """Confirm that a running run was asked to pause."""
    stdout().print(
        f"asked run {summary.run_id} to pause at its next step boundary; it writes a pause "
        f"checkpoint once its running steps finish. Resume it with: {resume_command}",
        soft_wrap=True,
    )


def print_gc(report: GcReport) -> None:
    """Show what gc removed (or would remove) and what it kept, with reasons."""
    out = stdout()
    verb = "would remove" if report.dry_run else "removed"
    if report.removed:
        table = Table(title=f"{verb} {len(report.removed)} run(s)")
        for column in ("run", "workflow", "status", "updated"):
            table.add_column(column)
        for item in report.removed:
            table.add_row(
                item.run_id, item.workflow_name, status_text(item.status), item.updated[:19]
            )
        out.print(table)
    else:
        out.print(f"nothing to remove ({verb} 0 runs)")
    if report.kept:
        reasons: dict[str, int] = {}
        for item in report.kept:
            reasons[item.reason] = reasons.get(item.reason, 0) + 1
        out.print(f"kept {len(report.kept)} run(s):")
        for reason, count in reasons.items():
            out.print(f"  {count}x {reason}")
