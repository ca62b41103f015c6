"""One run as its page shows it: the timeline of its records, the lineage and the verdict.

Read through the port: the run's records (:meth:`Source.records`, at most :data:`MAX_ROWS`),
its ``verify-lineage`` verdict (:meth:`Source.verify`) with each problem pointing at the
records whose id it names, and the drawing (:mod:`._lineage`). Each record's facts are the
summary the port gives (what ``wfctl log`` shows of it: steps with their durations, retried
attempts with their errors and waits, failures, requests and answers), its value folded as
:mod:`._values` folds it. The commands that act on what the page shows are spelled out, never
run.
"""

from __future__ import annotations

import itertools
import shlex
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Final

from wfctl._errors import CheckpointCorruptError
from wfctl._inspect._query import summary_time
from wfctl._sources._protocol import Entry, RunInfo, Source

from ._lineage import Drawing, draw_lineage, problem_nodes
from ._values import Shown, shown

__all__ = ["MAX_ROWS", "Row", "RunView", "run_view"]

#: The most records a run's page reads and shows.
MAX_ROWS: Final = 1000
#: Summary facts shown as the record's headline, not in its details.
_HEADLINE: Final = ("detail", "workflow")
#: Summary facts that make a record a failure or a retry on the timeline.
_FAILING: Final = ("error", "failures")
_RETRYING: Final = ("attempts",)


@dataclass(frozen=True, slots=True)
class Row:
    """One record on the timeline: when, how long after its parent, its facts and its value."""

    entry: Entry
    seconds: float | None
    headline: str
    facts: tuple[tuple[str, Shown], ...]
    value: Shown
    failing: bool
    retrying: bool
    broken: bool


@dataclass(frozen=True, slots=True)
class RunView:
    """What a run's page shows. ``more``: the run has records past :data:`MAX_ROWS`.

    A record that cannot be trusted ends the timeline (``stopped`` says which and why); the
    records before it are shown, and the verdict names what is broken.
    """

    run_id: str
    info: RunInfo | None
    rows: tuple[Row, ...]
    more: bool
    drawing: Drawing
    problems: tuple[tuple[str, tuple[int, ...]], ...]
    notes: tuple[str, ...]
    commands: tuple[tuple[str, str], ...]
    #: Why the records stop early: the one that cannot be trusted (None: all were read).
    stopped: str | None = None


def _moment(entry: Entry | None) -> datetime | None:
    return None if entry is None else summary_time(entry.time)


def _present(value: Any) -> bool:
    return value not in (None, "", [], {}, 0)


def _row(entry: Entry, parent: Entry | None, broken: bool) -> Row:
    start, end = _moment(parent), _moment(entry)
    seconds = (end - start).total_seconds() if start and end else None
    summary = entry.summary
    facts = tuple(
        (key, shown(value))
        for key, value in summary.items()
        if key not in _HEADLINE and _present(value)
    )
    return Row(
        entry=entry,
        seconds=seconds,
        headline=str(summary.get("detail") or ""),
        facts=facts,
        value=shown(entry.data),
        failing=any(_present(summary.get(key)) for key in _FAILING),
        retrying=any(_present(summary.get(key)) for key in _RETRYING),
        broken=broken,
    )


def _commands(source: Source, info: RunInfo | None, run_id: str) -> tuple[tuple[str, str], ...]:
    """The commands that act on the run, as a person would type them."""
    store = ("--store", source.location)
    if not source.kind.startswith("wfctl-"):
        return (
            ("read its records", shlex.join(["wfctl", "log", run_id, *store])),
            ("export it as JSON", shlex.join(["wfctl", "export", run_id, *store])),
        )
    commands = [("export it", shlex.join(["wfctl", "export", run_id, *store]))]
    if info is not None and info.head_id:
        commands.append(
            ("replay it from its head", shlex.join(["wfctl", "replay", "-c", info.head_id, *store]))
        )
    if info is not None and info.status in ("paused", "failed", "interrupted"):
        commands.append(("resume it", shlex.join(["wfctl", "resume", run_id, *store])))
    return tuple(commands)


def run_view(source: Source, run_id: str, info: RunInfo | None) -> RunView:
    """Return the page of run ``run_id`` (``info``: its listing, None if the listing lacks it).

    Raises:
        RunNotFoundError, InvalidIdError: no such run.
    """
    read: list[Entry] = []
    stopped = None
    try:
        read.extend(itertools.islice(source.records(run_id), MAX_ROWS + 1))
    except CheckpointCorruptError as error:  # the records before it are shown, and the verdict
        stopped = str(error)
    entries, more = read[:MAX_ROWS], len(read) > MAX_ROWS
    # the run as its records name it: a reader may find it by a start of its id, or by name
    named = {run_id, *(entry.run_id for entry in read[:1])}
    verdicts = [verdict for verdict in source.verify(run_id).runs if verdict.run_id in named]
    problems = tuple(p for verdict in verdicts for p in verdict.problems)
    notes = tuple(n for verdict in verdicts for n in verdict.notes)
    pointed = problem_nodes(entries, problems)
    broken = {order for orders in pointed.values() for order in orders}
    by_id = {entry.entry_id: entry for entry in entries}
    rows = tuple(
        _row(
            entry,
            by_id.get(entry.parent_ids[0]) if entry.parent_ids else None,
            entry.order in broken,
        )
        for entry in entries
    )
    return RunView(
        run_id=run_id,
        info=info,
        rows=rows,
        more=more,
        drawing=draw_lineage(entries, broken),
        problems=tuple((problem, tuple(pointed[problem])) for problem in problems),
        notes=notes,
        commands=_commands(source, info, run_id),
        stopped=stopped,
    )
