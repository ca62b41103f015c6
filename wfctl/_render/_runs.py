"""Rendering run outcomes and store reads: run/resume, runs, log, show, export, pause, gc."""

from __future__ import annotations

from datetime import datetime
from itertools import chain
from typing import TYPE_CHECKING

from rich.cells import cell_len
from rich.console import COLOR_SYSTEMS
from rich.style import Style
from rich.tree import Tree

from wfctl._config import time_format
from wfctl._readable import readable
from wfctl._redact import shown
from wfctl._visible import visible

from ._common import Text, json_text, render_stored, render_value, status_text, stderr, stdout
from ._fit import Cell, Column, fitted_table, print_table, write_laid_out
from ._time import (
    TimelineTimes,
    human_time,
    now,
    time_and_age,
    time_header,
    time_with_age,
    times_in,
)

if TYPE_CHECKING:
    from collections.abc import Callable

    from rich.console import Console

    from wfctl._drive._runner import RunReport
    from wfctl._inspect._entries import LogEntry
    from wfctl._inspect._export import ExportResult
    from wfctl._inspect._gc import GcReport
    from wfctl._inspect._pause import PauseReport
    from wfctl._inspect._runs import RunsReport
    from wfctl._records._attempts import AttemptRecord
    from wfctl._records._checkpoint import Checkpoint

__all__ = [
    "entry_tree",
    "print_checkpoint",
    "print_export",
    "print_gc",
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
    if outcome.status == "cancelled":  # `wfctl cancel` ended it while it ran: who asked
        err.print(Text(f"wfctl: {outcome.error}", style="red"), soft_wrap=True)
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
    label = outcome.status  # interrupted: nothing to answer; paused: answers awaited
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
        out.print(f"no runs in {shown(report.store)}")
        return
    if not report.runs:
        out.print(_count_line(report))
        return
    current = now()
    rows: list[list[Cell]] = []
    statuses: dict[str, Text] = {}  # one cell per status: a table never changes its cells
    for run in report.runs:
        notes = []
        if run.pending:
            notes.append("waiting: " + ", ".join(run.pending))
        if run.waiting:
            notes.append(times_in(run.waiting, current))
        if run.origin_checkpoint_id:
            notes.append(f"from {run.origin_checkpoint_id}")
        if run.problem:
            notes.append(run.problem)
        status = statuses.get(run.status)
        if status is None:
            status = statuses[run.status] = status_text(run.status)
        rows.append(
            [
                run.run_id,
                run.workflow_name,
                status,
                str(run.head_seq) if run.head_seq >= 0 else "-",
                *_updated_cells(run.updated, current),
                "; ".join(notes),
            ]
        )
    columns = (
        Column("run"),
        Column("workflow", rank=3, wrap_min=8),
        Column("status"),
        Column("seq", rank=5, justify="right"),
        *_updated_columns(current, updated_rank=2, age_rank=4),
        Column("notes", rank=1, wrap_min=12),
    )
    print_table(out, fitted_table(columns, rows, out.width, title=f"runs in {shown(report.store)}"))
    out.print(_count_line(report))


def _updated_columns(current: datetime, *, updated_rank: int, age_rank: int) -> list[Column]:
    """The ``updated`` column, and ``age`` unless the updated time is already an age."""
    columns = [Column(time_header("updated", current), rank=updated_rank)]
    if time_format() != "relative":
        columns.append(Column("age", rank=age_rank))
    return columns


def _updated_cells(updated: str, current: datetime) -> list[Cell]:
    """The cells of :func:`_updated_columns` for a run updated at ``updated``."""
    if not updated:
        return ["-"] if time_format() == "relative" else ["-", ""]
    if time_format() == "relative":
        return [human_time(updated, current)]
    return list(time_and_age(updated, current))


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


#: Log entries written per ``write`` call: the first page shows at once, and the cost of a
#: write and a flush is shared by many entries.
_LOG_PAGE = 200

#: A line of a timeline (made visible, see :func:`~wfctl._visible.visible`) and its style.
_Line = tuple[str, str]
#: One line under a checkpoint, with the lines under it (a step's arguments and result).
_Detail = tuple[_Line, list[_Line]]


def _entry_header(entry: LogEntry, shown_time: Callable[[str], str]) -> list[_Line]:
    return [
        (f"{entry.seq:>3} ", "bold"),
        (visible(f"{entry.kind:<9}"), "cyan"),
        (visible(f" {shown_time(entry.timestamp)}  {entry.checkpoint_id}"), ""),
    ]


def _entry_details(entry: LogEntry, current: datetime, *, verbose: bool) -> list[_Detail]:
    """Return what a checkpoint recorded, one line each (``verbose``: and each step's data)."""
    details: list[_Detail] = []
    for step in entry.steps:
        took = f" ({step.duration * 1000:.1f} ms)" if step.duration is not None else ""
        under = (
            [
                (visible(f"args: {step.describe_args()}"), "dim"),
                (visible(f"result: {step.describe_result()}"), "dim"),
            ]
            if verbose
            else []
        )
        details.append(((visible(f"✓ {step.key}{took}"), "green"), under))
    lines = [(visible(_attempt_line(a, current)), "yellow") for a in entry.attempts]
    lines.extend((visible(f"✗ {f.key} failed: {f.error}"), "red") for f in entry.failures)
    if entry.served:
        lines.append((visible(f"↺ cached: {', '.join(entry.served)}"), "dim"))
    elif entry.served_count:
        plural = "s" if entry.served_count != 1 else ""
        lines.append((f"↺ cached: {entry.served_count} call{plural}", "dim"))
    lines.extend((visible(f"? request {r}"), "") for r in entry.requests)
    lines.extend(
        (visible(f"→ answer {k} = {json_text(readable(v))}"), "") for k, v in entry.answers
    )
    if entry.error:
        lines.append((visible(f"✗ {entry.error}"), "red"))
    if entry.detail:
        lines.append((visible(entry.detail), "dim"))
    return details + [(line, []) for line in lines]


def _attempt_line(attempt: AttemptRecord, current: datetime) -> str:
    """``↻ key: attempt 2 failed: Type: message (next attempt at <time>, after 0.05s)``."""
    return (
        f"↻ {attempt.key}: attempt {attempt.attempt} failed: {attempt.error_type}: "
        f"{attempt.message} (next attempt at {human_time(attempt.retry_at, current, millis=True)}"
        f", after {attempt.retry_at - attempt.at:.3g}s)"
    )


class _Timeline:
    """The lines of a timeline, written a page at a time as rich would write them.

    A line is its guides, then stretches of text each with a style. rich renders each styled
    stretch as ``<style's escape codes>text<reset>`` (nothing around it without colour), which
    is what :meth:`flush` writes, from codes rich makes once per style. A line with a tab or a
    line feed in it, or too long for the terminal, goes through rich's own wrapping and
    rendering (:meth:`_add_wrapped`): only the common lines skip rich's machinery. As rich's
    ``print`` of one text per page did, a page's trailing whitespace is stripped.
    """

    def __init__(self, out: Console) -> None:
        self._out = out
        self._width = out.width
        self._system = COLOR_SYSTEMS.get(out.color_system or "")
        self._codes: dict[Style | str, tuple[str, str]] = {"": ("", "")}
        #: The page so far: stretches of text, each between its style's escape codes.
        self._page: list[tuple[str, str, str]] = []

    def _wrap(self, style: Style | str) -> tuple[str, str]:
        """Return the escape codes rich writes before and after text in ``style``."""
        codes = self._codes.get(style)
        if codes is None:
            found = self._out.get_style(style) if isinstance(style, str) else style
            if self._out.no_color and self._system:
                found = found.without_color  # as rich's render does without colour
            shown = found.render("\0", color_system=self._system) if found else "\0"
            before, _, after = shown.partition("\0")
            codes = self._codes[style] = (before, after)
        return codes

    def add(self, guides: str, stretches: list[_Line]) -> None:
        """Add one line that is never wrapped: ``guides``, then the ``stretches``."""
        page, wrap = self._page, self._wrap
        page.append(("", guides, ""))
        for text, style in stretches:
            if text:
                before, after = wrap(style)
                page.append((before, text, after))
        page.append(("", "\n", ""))

    def add_details(self, outer: str, details: list[_Detail]) -> None:
        """Add a checkpoint's detail lines under ``outer`` guides, wrapping long ones."""
        for index, (line, under) in enumerate(details):
            final = index == len(details) - 1
            self._add_wrapped(outer, "└── " if final else "├── ", line)
            inner = outer + ("    " if final else "│   ")
            for sub, child in enumerate(under):
                self._add_wrapped(inner, "└── " if sub == len(under) - 1 else "├── ", child)

    def _add_wrapped(self, outer: str, branch: str, line: _Line) -> None:
        text, style = line
        room = max(self._width - len(outer) - 4, 8)  # the line's width after its guides
        if "\n" not in text and "\t" not in text and _cells(text) <= room:
            self.add(outer + branch, [line])
            return
        out = self._out
        rich_line = Text(text, style=style)
        parts = [rich_line] if rich_line.cell_len <= room else rich_line.wrap(out, room)
        continued = "    " if branch.startswith("└") else "│   "
        options = out.options.update(no_wrap=True, overflow="ignore")  # print's soft_wrap
        for part, wrapped in enumerate(parts):
            drawn = Text(outer + (branch if part == 0 else continued))
            drawn.append_text(wrapped)
            for segment in out.render(drawn, options):
                if segment.text:
                    before, after = self._wrap(segment.style or "")
                    self._page.append((before, segment.text, after))

    def flush(self) -> None:
        """Write the page (its trailing whitespace stripped, then a line feed) and flush."""
        page = self._page
        while page and not page[-1][1].rstrip():
            page.pop()
        if not page:
            return
        before, text, after = page[-1]
        page[-1] = (before, text.rstrip(), after)
        page.append(("", "\n", ""))
        chunk = "".join(chain.from_iterable(page))
        page.clear()
        out = self._out
        if out.legacy_windows:  # the Windows console API, not escape codes: rich writes it
            out.print(Text.from_ansi(chunk, end=""), soft_wrap=True)
            return
        write_laid_out(out, chunk)


def _cells(text: str) -> int:
    """Return how many cells ``text`` (no tab, no line feed, controls made visible) takes.

    ``rich.cells.cell_len`` sums every character's width in Python; printable ASCII is one
    cell a character, so only the rest is measured (a detail line starts with a symbol).
    """
    if text.isascii():
        return len(text)
    rest = text[1:]
    return cell_len(text[0]) + len(rest) if rest.isascii() else cell_len(text)


def entry_tree(entry: LogEntry, current: datetime | None = None, *, verbose: bool = False) -> Tree:
    """Return one checkpoint of a timeline as a tree: its header, then what it recorded.

    ``current`` is the moment local times are shown against (now by default); ``verbose``
    adds each step's arguments and result.
    """
    current = current or now()
    node = Tree(Text.assemble(*_entry_header(entry, TimelineTimes(current))))
    for line, under in _entry_details(entry, current, verbose=verbose):
        branch = node.add(Text(*line))
        for child in under:
            branch.add(Text(*child))
    return node


def print_checkpoint(checkpoint: Checkpoint) -> None:
    """Show one checkpoint: a header line, then its record as stored (times in UTC)."""
    out = stdout()
    current = now()
    out.print(
        Text.assemble(
            (checkpoint.checkpoint_id, "bold"),
            f" · {checkpoint.kind} · {checkpoint.workflow_name} · "
            f"{time_with_age(checkpoint.timestamp, current, millis=True)}",
        )
    )
    out.print(render_value(checkpoint.to_dict()))


def print_export(result: ExportResult) -> None:
    """Write the exported document to stdout, or say where it was written."""
    if result.output is None:
        out = stdout().file
        for chunk in result.chunks:
            out.write(chunk)
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
            *_updated_columns(current, updated_rank=1, age_rank=3),
        )
        statuses: dict[str, Text] = {}  # one cell per status, as the runs table has
        rows: list[list[Cell]] = []
        for item in report.removed:
            status = statuses.get(item.status)
            if status is None:
                status = statuses[item.status] = status_text(item.status)
            rows.append(
                [item.run_id, item.workflow_name, status, *_updated_cells(item.updated, current)]
            )
        title = f"{verb} {len(report.removed)} run(s)"
        print_table(out, fitted_table(columns, rows, out.width, title=title))
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
