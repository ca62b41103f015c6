"""Rendering run outcomes and store reads: run/resume, runs, log, show, export, pause, gc."""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING

from rich.tree import Tree

from wfctl._readable import readable

from ._common import Text, json_text, render_stored, render_value, status_text, stderr, stdout
from ._fit import Cell, Column, fitted_table
from ._time import local_time, now, relative_time, zone_name

if TYPE_CHECKING:
    from rich.console import Console
    from rich.text import Text as RichText

    from wfctl._checkpoint import Checkpoint
    from wfctl._gc import GcReport
    from wfctl._inspect import ExportResult, LogEntry, PauseReport, RunLog, RunsReport
    from wfctl._runner import RunReport

__all__ = [
    "entry_tree",
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
            out.print(render_stored(value), soft_wrap=True)
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
        columns = (
            Column("key"),
            Column("expects", rank=1, wrap_min=6),
            Column("request data", wrap_min=12),
        )
        rows: list[list[Cell]] = [
            [request.key, request.response_type or "any", render_stored(request.data)]
            for request in outcome.requests
        ]
        out.print(fitted_table(columns, rows, out.width))
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
    """Show the store's runs as a table (the least useful columns go on a narrow terminal)."""
    out = stdout()
    if not report.total_count:
        out.print(f"no runs in {report.store}")
        return
    if not report.runs:
        out.print(_count_line(report))
        return
    current = now()
    rows: list[list[Cell]] = []
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
        rows.append(
            [
                run.run_id,
                run.workflow_name,
                status_text(run.status),
                str(run.head_seq) if run.head_seq >= 0 else "-",
                local_time(run.updated, current) if run.updated else "-",
                relative_time(run.updated, current) if run.updated else "",
                "; ".join(notes),
            ]
        )
    columns = (
        Column("run"),
        Column("workflow", rank=3, wrap_min=8),
        Column("status"),
        Column("seq", rank=5, justify="right"),
        Column(f"updated ({zone_name(current)})", rank=2),
        Column("age", rank=4),
        Column("notes", rank=1, wrap_min=12),
    )
    out.print(fitted_table(columns, rows, out.width, title=f"runs in {report.store}"))
    out.print(_count_line(report))


def _count_line(report: RunsReport) -> str:
    """Say how many runs are shown, of how many matching, of how many in the store."""
    shown, matching, total = len(report.runs), report.matching_count, report.total_count
    if shown == matching == total:
        return f"{total} run{'' if total == 1 else 's'}"
    if shown == matching:
        return f"{shown} of {total} runs match"
    if matching == total:
        return f"{shown} of {total} runs (--limit {report.query.limit})"
    return (
        f"{shown} of {matching} matching runs ({total} in the store; --limit {report.query.limit})"
    )


#: Log entries rendered per ``print`` call: the first page shows at once, and rich's fixed cost
#: per call is shared by many entries (one call per entry costs ~5x more for a long run).
_LOG_PAGE = 200

#: One line under a checkpoint, with the lines under it (a step's arguments and result).
_Detail = tuple[Text, list[Text]]


def _entry_header(entry: LogEntry, current: datetime) -> RichText:
    return Text.assemble(
        (f"{entry.seq:>3} ", "bold"),
        (f"{entry.kind:<9}", "cyan"),
        f" {local_time(entry.timestamp, current, millis=True)}  {entry.checkpoint_id}",
    )


def _entry_details(entry: LogEntry, *, verbose: bool) -> list[_Detail]:
    """Return what a checkpoint recorded, one line each (``verbose``: and each step's data)."""
    details: list[_Detail] = []
    for step in entry.steps:
        took = f" ({step.duration * 1000:.1f} ms)" if step.duration is not None else ""
        under = (
            [
                Text(f"args: {step.describe_args()}", style="dim"),
                Text(f"result: {step.describe_result()}", style="dim"),
            ]
            if verbose
            else []
        )
        details.append((Text(f"✓ {step.key}{took}", style="green"), under))
    lines = [Text(f"↻ {a.key}: {a.describe()}", style="yellow") for a in entry.attempts]
    if entry.served:
        lines.append(Text(f"↺ cached: {', '.join(entry.served)}", style="dim"))
    elif entry.served_count:
        plural = "s" if entry.served_count != 1 else ""
        lines.append(Text(f"↺ cached: {entry.served_count} call{plural}", style="dim"))
    lines.extend(Text(f"? request {r}") for r in entry.requests)
    lines.extend(Text(f"→ answer {k} = {json_text(readable(v))}") for k, v in entry.answers)
    if entry.error:
        lines.append(Text(f"✗ {entry.error}", style="red"))
    if entry.detail:
        lines.append(Text(entry.detail, style="dim"))
    return details + [(line, []) for line in lines]


def print_log(log: RunLog, *, verbose: bool = False) -> None:
    """Show a run's chain as a timeline, one checkpoint and its details per group of lines.

    Entries are rendered as they are read, a page at a time, never as one tree of the whole run:
    the first lines show at once and memory stays flat however long the run is. ``verbose``
    adds what each executed step received and returned.
    """
    summary = log.summary
    out = stdout()
    current = now()
    title = Text.assemble(
        f"run {summary.run_id} · {summary.workflow_name} · ", status_text(summary.status)
    )
    if summary.origin_checkpoint_id:
        title.append(f" · restored from {summary.origin_checkpoint_id}")
    if summary.created:
        title.append(
            f" · started {local_time(summary.created, current)} {zone_name(current)}"
            f" ({relative_time(summary.created, current)})"
        )
    out.print(title)
    page = Text()
    for count, entry in enumerate(log.entries, 1):
        last = entry.seq == summary.head_seq  # the tree's guides, drawn as rich's Tree does
        page.append("└── " if last else "├── ")
        page.append_text(_entry_header(entry, current))
        page.append("\n")
        _append_lines(page, out, "    " if last else "│   ", _entry_details(entry, verbose=verbose))
        if count % _LOG_PAGE == 0:
            page.rstrip()
            out.print(page, soft_wrap=True)
            page = Text()
    if page:
        page.rstrip()
        out.print(page, soft_wrap=True)


def _append_lines(page: Text, out: Console, outer: str, details: list[_Detail]) -> None:
    """Append a checkpoint's detail lines under ``outer`` guides, wrapping long ones."""
    for index, (line, under) in enumerate(details):
        final = index == len(details) - 1
        _append_wrapped(page, out, outer, "└── " if final else "├── ", line)
        inner = outer + ("    " if final else "│   ")
        for sub, child in enumerate(under):
            _append_wrapped(page, out, inner, "└── " if sub == len(under) - 1 else "├── ", child)


def _append_wrapped(page: Text, out: Console, outer: str, branch: str, line: Text) -> None:
    room = max(out.width - len(outer) - 4, 8)  # the line's width after its guides
    parts = [line] if line.cell_len <= room else line.wrap(out, room)
    continued = "    " if branch.startswith("└") else "│   "
    for part, text in enumerate(parts):
        page.append(outer + (branch if part == 0 else continued))
        page.append_text(text)
        page.append("\n")


def entry_tree(entry: LogEntry, current: datetime | None = None, *, verbose: bool = False) -> Tree:
    """Return one checkpoint of a timeline as a tree: its header, then what it recorded.

    ``current`` is the moment local times are shown against (now by default); ``verbose``
    adds each step's arguments and result.
    """
    current = current or now()
    node = Tree(_entry_header(entry, current))
    for line, under in _entry_details(entry, verbose=verbose):
        branch = node.add(line)
        for child in under:
            branch.add(child)
    return node


def print_checkpoint(checkpoint: Checkpoint) -> None:
    """Show one checkpoint: a header line, then its record as stored (times in UTC)."""
    out = stdout()
    current = now()
    out.print(
        Text.assemble(
            (checkpoint.checkpoint_id, "bold"),
            f" · {checkpoint.kind} · {checkpoint.workflow_name} · "
            f"{local_time(checkpoint.timestamp, current, millis=True)} {zone_name(current)}"
            f" ({relative_time(checkpoint.timestamp, current)})",
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


def print_pause(report: PauseReport) -> None:
    """Confirm that a running run was asked to pause."""
    stdout().print(
        f"asked run {report.summary.run_id} to pause at its next step boundary; it writes a "
        f"pause checkpoint once its running steps finish. Resume it with: "
        f"{report.resume_command}",
        soft_wrap=True,
    )


def print_gc(report: GcReport) -> None:
    """Show what gc removed (or would remove) and what it kept, with reasons."""
    out = stdout()
    verb = "would remove" if report.dry_run else "removed"
    if report.removed:
        current = now()
        columns = (
            Column("run"),
            Column("workflow", rank=2, wrap_min=8),
            Column("status"),
            Column(f"updated ({zone_name(current)})", rank=1),
            Column("age", rank=3),
        )
        rows: list[list[Cell]] = [
            [
                item.run_id,
                item.workflow_name,
                status_text(item.status),
                local_time(item.updated, current),
                relative_time(item.updated, current),
            ]
            for item in report.removed
        ]
        title = f"{verb} {len(report.removed)} run(s)"
        out.print(fitted_table(columns, rows, out.width, title=title))
    else:
        out.print(f"nothing to remove ({verb} 0 runs)")
    if report.matching_count != report.total_count:
        out.print(f"considered {report.matching_count} of {report.total_count} runs (filters)")
    if report.kept:
        reasons: dict[str, int] = {}
        for item in report.kept:
            reasons[item.reason] = reasons.get(item.reason, 0) + 1
        out.print(f"kept {len(report.kept)} run(s):")
        for reason, count in reasons.items():
            out.print(f"  {count}x {reason}")
