"""Rendering ``wfctl log``: a run's timeline, written a page at a time.

The lines are the ones :mod:`._runs`' timeline writes (its :class:`~._runs._Timeline`, the
tree rich draws), byte for byte; what this module adds is a shorter road for the lines nearly
every checkpoint of a long run has (its header, and a step's one line): each is built as one
string with its style's escape codes, without a list of styled stretches per line.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from rich.cells import cell_len

from wfctl._visible import visible

from ._common import Text, status_text, stdout
from ._runs import _LOG_PAGE, _entry_details, _Timeline
from ._time import TimelineTimes, now, time_with_age

if TYPE_CHECKING:
    from datetime import datetime

    from rich.console import Console
    from rich.text import Text as RichText

    from wfctl._inspect._entries import LogEntry
    from wfctl._inspect._log import RunLog
    from wfctl._storage import RunSummary

__all__ = ["print_log"]

#: The cells the check mark starting a step's line takes.
_CHECK_CELLS = cell_len("✓")


def print_log(log: RunLog, *, verbose: bool = False) -> None:
    """Show a run's chain as a timeline, one checkpoint and its details per group of lines.

    Entries are rendered as they are read, a page at a time, never as one tree of the whole run:
    the first lines show at once and memory stays flat however long the run is. ``verbose``
    adds what each executed step received and returned. The lines are the ones rich draws for
    the run as a ``Tree`` (guides, wrapping, styles), written without rich's per-line layout.
    If reading an entry fails (a record that does not verify), the entries before it are
    written before the error goes on.
    """
    summary = log.summary
    out = stdout()
    current = now()
    out.print(_title(summary, current))
    listed, head_seq = log.seqs, summary.head_seq
    if not listed:
        if listed.start > head_seq:
            out.print(f"no checkpoint from seq {listed.start} on: the head is seq {head_seq}")
        else:
            out.print("no checkpoint listed (--limit 0)")
        return
    if listed.start:
        out.print(f"… {_checkpoints(0, listed.start - 1)} before, verified, not shown", style="dim")
    timeline = _LogTimeline(out, current, verbose=verbose)
    last_seq = listed[-1]
    try:
        for count, entry in enumerate(log.entries, 1):
            timeline.add_entry(entry, last=entry.seq == last_seq)
            if count % _LOG_PAGE == 0:
                timeline.flush()
    finally:
        timeline.flush()
    if last_seq < head_seq:
        later = _checkpoints(last_seq + 1, head_seq)
        out.print(f"… {later} after, not shown (next page: --from {last_seq + 1})", style="dim")


def _checkpoints(first: int, last: int) -> str:
    """``N checkpoints (seq FIRST to LAST)``, or one."""
    if first == last:
        return f"1 checkpoint (seq {first})"
    return f"{last - first + 1:,} checkpoints (seq {first} to {last})"


def _title(summary: RunSummary, current: datetime) -> RichText:
    title = Text.assemble(
        f"run {summary.run_id} · {summary.workflow_name} · ", status_text(summary.status)
    )
    if summary.origin_checkpoint_id:
        title.append(f" · restored from {summary.origin_checkpoint_id}")
    if summary.created:
        title.append(f" · started {time_with_age(summary.created, current)}")
    return title


class _LogTimeline(_Timeline):
    """The timeline's writer, with each checkpoint's common lines made as one string each.

    A page holds ``(before, text, after)`` stretches; a line made here is one stretch (its
    guides, styled texts and line feed joined), which the page's flush treats as the
    separate stretches would be: a line's last text never ends in whitespace here, so the
    trailing whitespace stripped at a page's end is the same. Any other line (a step's data
    with ``-v``, cached keys, requests, answers, errors, a line too long or holding a tab or a
    line feed) goes through the general writer.
    """

    def __init__(self, out: Console, current: datetime, *, verbose: bool) -> None:
        super().__init__(out)
        self._current = current
        self._shown_time = TimelineTimes(current)
        self._verbose = verbose
        self._bold = self._wrap("bold")
        self._cyan = self._wrap("cyan")
        self._green = self._wrap("green")
        self._room = max(self._width - 8, 8)  # a step line's width after its guides

    def add_entry(self, entry: LogEntry, *, last: bool) -> None:
        """Add a checkpoint's header line and its details (``last``: the chain's head)."""
        (bold_on, bold_off), (cyan_on, cyan_off) = self._bold, self._cyan
        kind = visible(f"{entry.kind:<9}")
        rest = visible(f" {self._shown_time(entry.timestamp)}  {entry.checkpoint_id}")
        guides, outer = ("└── ", "    ") if last else ("├── ", "│   ")
        page = self._page
        page.append(
            ("", f"{guides}{bold_on}{entry.seq:>3} {bold_off}{cyan_on}{kind}{cyan_off}{rest}\n", "")
        )  # the header's last text (a checkpoint id) ends in a digit
        if (
            self._verbose
            or entry.attempts
            or entry.failures
            or entry.served
            or entry.served_count
            or entry.requests
            or entry.answers
            or entry.error
            or entry.detail
        ):
            self.add_details(outer, _entry_details(entry, self._current, verbose=self._verbose))
            return
        green_on, green_off = self._green
        room = self._room
        steps = entry.steps
        final = len(steps) - 1
        for index, step in enumerate(steps):
            took = f" ({step.duration * 1000:.1f} ms)" if step.duration is not None else ""
            text = visible(f"✓ {step.key}{took}")
            branch = "└── " if index == final else "├── "
            rest = text[1:]  # after the check mark: ASCII, one cell a character, as a rule
            if (
                "\n" in text
                or "\t" in text
                or _CHECK_CELLS + (len(rest) if rest.isascii() else cell_len(rest)) > room
                or (green_off and text[-1:].isspace())
            ):
                self._add_wrapped(outer, branch, (text, "green"))
            else:
                page.append(("", f"{outer}{branch}{green_on}{text}{green_off}\n", ""))
