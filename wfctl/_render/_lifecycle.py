"""Rendering ``cancel``, ``rm``, ``copy`` and ``log --follow`` for people; what ``rm --force`` broke."""

from __future__ import annotations

from typing import TYPE_CHECKING

from rich.cells import cell_len

from ._common import Text, status_text, stderr, stdout
from ._runs import _entry_details, _entry_header, _Timeline, entry_tree
from ._time import TimelineTimes, now

if TYPE_CHECKING:
    from wfctl._inspect._cancel import CancelReport
    from wfctl._inspect._copy import CopyReport
    from wfctl._inspect._entries import LogEntry
    from wfctl._inspect._follow import FollowEnd
    from wfctl._inspect._remove import RemoveReport

__all__ = [
    "FollowPrinter",
    "print_cancel",
    "print_copied",
    "print_dangling",
    "print_removed",
]


def print_cancel(report: CancelReport) -> None:
    """Confirm that a run was cancelled, and by which record (or that its driver was asked)."""
    if report.checkpoint_id is None:  # --no-wait: asked, not waited for
        stdout().print(
            f"run {report.run_id} ({report.workflow_name}) is running: asked to cancel at its "
            "next step boundary ('wfctl runs' shows it cancelled then)",
            soft_wrap=True,
        )
        return
    line = Text.assemble(
        f"run {report.run_id} ({report.workflow_name}) ",
        status_text("cancelled"),
        f" at {report.checkpoint_id} (it was {report.previous_status})",
    )
    if report.reason is not None:
        line.append(f": {report.reason}")
    stdout().print(line, soft_wrap=True)


def print_removed(report: RemoveReport) -> None:
    """List the runs ``rm`` removed."""
    out = stdout()
    for run in report.removed:
        name = f"{run.workflow_name}, " if run.workflow_name else ""  # unknown: a corrupt run
        out.print(Text.assemble(f"removed run {run.run_id} ({name}", status_text(run.status), ")"))


def print_copied(report: CopyReport) -> None:
    """Say what ``copy`` did with each run, then count them (refusals on stderr too)."""
    from wfctl._inspect._copy import CopyOutcome

    out, err = stdout(), stderr()
    for run in report.runs:
        name = f" ({run.workflow_name})" if run.workflow_name else ""
        if run.outcome == CopyOutcome.COPIED:
            kept = run.checkpoint_count - run.written_count
            already = f", {kept} there already" if kept else ""
            out.print(
                f"copied run {run.run_id}{name}: {run.written_count} checkpoint(s){already}",
                soft_wrap=True,
            )
        elif run.outcome == CopyOutcome.ALREADY_COPIED:
            out.print(f"run {run.run_id}{name} is in the destination already", soft_wrap=True)
        else:
            err.print(
                Text(f"wfctl: run {run.run_id}{name} not copied: {run.problem}", style="red"),
                soft_wrap=True,
            )
    out.print(
        f"{report.count(CopyOutcome.COPIED)} run(s) copied, "
        f"{report.count(CopyOutcome.ALREADY_COPIED)} there already, "
        f"{report.count(CopyOutcome.REFUSED)} not copied "
        f"(from {report.source} to {report.destination})",
        soft_wrap=True,
    )


def print_dangling(report: RemoveReport) -> None:
    """Name, on stderr, each run whose origin ``rm --force`` removed."""
    err = stderr()
    for item in report.dangling:
        err.print(
            Text(
                f"wfctl: warning: run {item.run_id} was restored from {item.origin_checkpoint_id}, "
                f"which is gone now: its origin dangles (verify-lineage reports it)",
                style="yellow",
            ),
            soft_wrap=True,
        )


class FollowPrinter:
    """Prints a followed run's checkpoints as they arrive, then how the run ended.

    A checkpoint is the tree :func:`entry_tree` draws, its lines written as ``wfctl log``
    writes its own (see :class:`._runs._Timeline`): rich lays out only the lines that must
    wrap, and a checkpoint whose header is too wide for the terminal or whose lines hold a tab
    or a line feed (a tree lays its text out from the text's own start, not from the line's).
    One console and one writer serve every checkpoint; the terminal's width is read for each.
    """

    def __init__(self, *, verbose: bool = False) -> None:
        self._out = stdout()
        self._timeline = _Timeline(self._out)
        self._verbose = verbose  # each step's arguments and result, as ``log -v``

    def __call__(self, item: LogEntry | FollowEnd) -> None:
        """Print ``item`` and flush: a pipe (| grep, | tee) sees each checkpoint when it is
        committed."""
        from wfctl._inspect._follow import FollowEnd

        out = self._out
        if isinstance(item, FollowEnd):
            out.print(
                Text.assemble(
                    f"run {item.run_id} ",
                    status_text(item.status),
                    f" at {item.head_checkpoint_id}",
                )
            )
        elif not self._write(item):
            out.print(entry_tree(item, verbose=self._verbose))
        out.file.flush()

    def _write(self, entry: LogEntry) -> bool:
        """Write a checkpoint's tree as its lines; False if rich must lay it out."""
        width = self._out.width
        current = now()
        header = _entry_header(entry, TimelineTimes(current))
        if sum(cell_len(text) for text, _ in header) > width:
            return False
        details = _entry_details(entry, current, verbose=self._verbose)
        texts = [line[0] for line, _ in details] + [c[0] for _, under in details for c in under]
        if any("\t" in text or "\n" in text for text in texts):
            return False
        timeline = self._timeline
        timeline._width = width  # the terminal may have been resized since the last one
        timeline.add("", header)
        timeline.add_details("", details)
        timeline.flush()
        return True
