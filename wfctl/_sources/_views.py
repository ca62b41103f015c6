"""What the inspecting commands show of a source of another engine than wfctl.

``verify-lineage``, ``runs``, ``log``, ``show`` and ``export`` read wfctl's own stores by their
own paths; a store of another kind (an agent-framework directory) is opened as a
:class:`~wfctl._sources._protocol.Source` by :func:`~wfctl._sources._open.open_other_source`
and read through it, here, as one report or one ``--json`` document per command. Values are
as the reader gives them: JSON decoded, pickles as opaque markers, never unpickled.
"""

from __future__ import annotations

import fnmatch
import heapq
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from wfctl._errors import NothingVerifiedError, RunNotFoundError, WfctlError
from wfctl._inspect._query import RunQuery, SortField

from ._protocol import Entry, RunInfo, Source

if TYPE_CHECKING:
    from wfctl._inspect._lineage import LineageReport

__all__ = [
    "RunCounts",
    "a_kind",
    "entry_document",
    "export_document",
    "listed_runs",
    "log_document",
    "log_tree",
    "run_document",
    "runs_document",
    "runs_head",
    "runs_tail",
    "show_document",
    "source_runs",
    "tree",
    "verify_source",
]


def a_kind(kind: str) -> str:
    """``kind`` with its article: an agent-framework, a langgraph-sqlite."""
    return f"{'an' if kind[:1] in 'aeiou' else 'a'} {kind}"


def _only_workflow_filters(source: Source, query: RunQuery, *, statuses: bool = False) -> None:
    """Refuse the filters the source's records cannot answer."""
    if query.statuses and not statuses:
        raise WfctlError(
            f"{source.kind} records have no run status or creation time: "
            "filter them with --workflow only"
        )
    if query.since or query.until:
        allowed = "--workflow and --status" if statuses else "--workflow"
        raise WfctlError(
            f"{source.kind} records have no creation time wfctl can filter by: "
            f"filter them with {allowed} only"
        )


def verify_source(source: Source, run_ids: Sequence[str], query: RunQuery) -> LineageReport:
    """``verify-lineage`` of a source of another engine: its :meth:`Source.verify`, with the
    workflow pattern selecting verdicts (a verdict of no workflow, such as unreadable files,
    is always kept).

    Raises:
        NothingVerifiedError: the source holds no record, or none of a matching workflow.
        WfctlError: run ids, or filters its records cannot answer, were given.
    """
    from wfctl._inspect._lineage import LineageReport

    if run_ids:
        raise WfctlError(f"{a_kind(source.kind)} source is verified whole; give no run ids")
    _only_workflow_filters(source, query)
    report = source.verify()
    if query.workflow is not None:
        pattern = query.workflow
        report = LineageReport(
            tuple(
                verdict
                for verdict in report.runs
                if verdict.workflow_name is None
                or fnmatch.fnmatchcase(verdict.workflow_name, pattern)
            )
        )
    if not report.runs:
        if query.workflow is not None:
            raise NothingVerifiedError(
                f"no workflow matched --workflow {query.workflow!r} in {source.location}"
            )
        raise NothingVerifiedError(f"{source.location} holds no checkpoint")
    return report


@dataclass(slots=True)
class RunCounts:
    """What ``wfctl runs`` counts of a source as its runs pass: those shown, those that match
    the filters, those the source holds. Whole once the listing's runs are all read."""

    shown: int = 0
    matching: int = 0
    total: int = 0


def _sort_key(sort: SortField) -> Callable[[RunInfo], tuple[str, str]]:
    """The order ``runs --sort`` lists a source's runs in (ascending; ties by run id)."""
    return {
        SortField.CREATED: lambda i: (i.created_at or "", i.run_id),
        SortField.UPDATED: lambda i: (i.updated_at or "", i.run_id),
        SortField.RUN_ID: lambda i: ("", i.run_id),
        SortField.WORKFLOW: lambda i: (i.workflow, i.run_id),
        SortField.STATUS: lambda i: (i.status, i.run_id),
    }[sort]


def listed_runs(source: Source, query: RunQuery) -> tuple[Iterator[RunInfo], RunCounts]:
    """The runs ``wfctl runs`` lists of a source, in the order asked, and their counts (whole
    once the runs are read). Memory does not grow with the store's runs when the reader gives
    them in that order (``runs_by_created``: DBOS, for ``--sort created``), or when ``--limit
    N`` keeps the N first (a heap); else the matching runs are sorted, held whole.

    Raises:
        WfctlError: a filter its records cannot answer (a time) was given; a reader gave its
            runs out of the order it promised (while iterating).
    """
    _only_workflow_filters(source, query, statuses=True)
    counts = RunCounts()
    key = _sort_key(query.sort)
    ordered = getattr(source, "runs_by_created", None)
    if query.sort is SortField.CREATED and callable(ordered):
        given: Iterator[RunInfo] = ordered(newest_first=query.descending)
        return _in_order(source, _matching(given, query, counts), key, query, counts), counts
    matching = _matching(source.runs(), query, counts)
    if query.limit is None:
        shown = sorted(matching, key=key, reverse=query.descending)
    elif query.limit == 0:
        shown = []
        for _ in matching:  # heapq reads nothing to keep none: the runs are counted still
            pass
    elif query.descending:
        shown = heapq.nlargest(query.limit, matching, key=key)
    else:
        shown = heapq.nsmallest(query.limit, matching, key=key)
    counts.shown = len(shown)
    return iter(shown), counts


def _matching(runs: Iterator[RunInfo], query: RunQuery, counts: RunCounts) -> Iterator[RunInfo]:
    """The runs that match the query's filters, counting them and every run as they pass."""
    for info in runs:
        counts.total += 1
        if (query.workflow is None or fnmatch.fnmatchcase(info.workflow, query.workflow)) and (
            not query.statuses or info.status in query.statuses
        ):
            counts.matching += 1
            yield info


def _in_order(
    source: Source,
    runs: Iterator[RunInfo],
    key: Callable[[RunInfo], tuple[str, str]],
    query: RunQuery,
    counts: RunCounts,
) -> Iterator[RunInfo]:
    """The first ``--limit`` of runs given in the order asked, each checked against the one
    before it; the rest are read to be counted."""
    last: tuple[str, str] | None = None
    for info in runs:
        now = key(info)
        if last is not None and (now > last if query.descending else now < last):
            raise WfctlError(
                f"{source.kind} gave run {info.run_id!r} out of its order: "
                "the listing cannot be trusted"
            )
        last = now
        if query.limit is None or counts.shown < query.limit:
            counts.shown += 1
            yield info


def source_runs(source: Source, query: RunQuery) -> tuple[list[RunInfo], int, int]:
    """The runs ``wfctl runs`` lists of a source: those shown, how many matched, how many
    the source holds (:func:`listed_runs`, the shown runs held).

    Raises:
        WfctlError: a filter its records cannot answer (a time) was given.
    """
    runs, counts = listed_runs(source, query)
    shown = list(runs)
    return shown, counts.matching, counts.total


def run_document(info: RunInfo) -> dict[str, Any]:
    """One run of a source as ``--json`` shows it (``details``: the reader's own facts, ``{}`` when it has none)."""
    document: dict[str, Any] = {
        "run_id": info.run_id,
        "workflow": info.workflow,
        "status": info.status,
        "head_id": info.head_id,
        "created_at": info.created_at,
        "updated_at": info.updated_at,
        "record_count": info.record_count,
        "size_bytes": info.size_bytes,
        "problem": info.problem,
        "details": info.details,
    }
    return document


def runs_head(source: Source) -> dict[str, Any]:
    """What ``wfctl runs --json`` of a source says before its runs."""
    return {"schema": "wfctl/source-runs@1", "source": source.kind, "store": source.location}


def runs_tail(counts: RunCounts) -> dict[str, Any]:
    """What ``wfctl runs --json`` of a source says after its runs: the counts (known once the
    runs are read, so a streamed document gives them last)."""
    return {
        "run_count": counts.shown,
        "matching_run_count": counts.matching,
        "total_run_count": counts.total,
    }


def runs_document(source: Source, query: RunQuery) -> dict[str, Any]:
    """``wfctl runs --json`` of a source (``wfctl/source-runs@1``), its keys in the order the
    command writes them: ``runs`` before the counts."""
    runs, counts = listed_runs(source, query)
    shown = [run_document(info) for info in runs]
    return {**runs_head(source), "runs": shown, **runs_tail(counts)}


def entry_document(entry: Entry) -> dict[str, Any]:
    """One record of a source as ``--json`` shows it: its data as the reader gives it."""
    return {
        "entry_id": entry.entry_id,
        "run_id": entry.run_id,
        "parent_ids": list(entry.parent_ids),
        "order": entry.order,
        "kind": entry.kind,
        "time": entry.time,
        "size_bytes": entry.size_bytes,
        "summary": entry.summary,
        "data": entry.data,
    }


def tree(
    entries: Iterable[Entry], children: dict[str, int] | None = None
) -> Iterator[tuple[int, Entry]]:
    """Each entry with its depth in the run's tree: a child one deeper than its parent when
    the parent forks (has more than one child) or the entry is a later root, else level with
    it, so a straight history stays flat and each branch is indented under its fork.

    ``children`` (how many children each entry has), when the source can count them without
    reading its records, lets the entries be given as they are read; otherwise they are read
    whole first to count them."""
    if children is None:
        entries = list(entries)
        children = {}
        for entry in entries:
            for parent in entry.parent_ids:
                children[parent] = children.get(parent, 0) + 1
    depth: dict[str, int] = {}
    roots = 0
    for entry in entries:
        known = [p for p in entry.parent_ids if p in depth]
        if not known:
            level = 1 if roots else 0
            roots += 1
        else:
            parent = known[0]
            level = depth[parent] + (1 if children.get(parent, 0) > 1 else 0)
        depth[entry.entry_id] = level
        yield level, entry


def log_tree(source: Source, run_id: str) -> tuple[int | None, Iterator[tuple[int, Entry]]]:
    """The run's records with their depths, for ``wfctl log``: how many there are (None when
    unknown before reading them) and the records, streamed when the source counts each
    record's children without reading the records (LangGraph's ``child_counts``).

    Raises:
        RunNotFoundError: no such run.
    """
    counts = getattr(source, "child_counts", None)
    if callable(counts):
        children, total = counts(run_id)
        return total, tree(source.records(run_id), children)
    entries = list(source.records(run_id))
    return len(entries), tree(entries)


def log_document(source: Source, run_id: str) -> dict[str, Any]:
    """``wfctl log RUN --json`` of a source (``wfctl/source-log@1``): the run's records in
    order, each with its depth in the tree its parents make.

    Raises:
        RunNotFoundError: no such run.
        CheckpointCorruptError: a record cannot be trusted.
    """
    entries = list(source.records(run_id))
    return {
        "schema": "wfctl/source-log@1",
        "source": source.kind,
        "run_id": entries[0].run_id if entries else run_id,
        "records": [{**entry_document(entry), "depth": depth} for depth, entry in tree(entries)],
    }


def show_document(source: Source, entry_id: str) -> dict[str, Any]:
    """``wfctl show ID --json`` of a source (``wfctl/source-show@1``).

    Raises:
        CheckpointNotFoundError: no record has that id.
    """
    return {
        "schema": "wfctl/source-show@1",
        "source": source.kind,
        "record": entry_document(source.record(entry_id)),
    }


def export_document(source: Source, run_id: str) -> dict[str, Any]:
    """``wfctl export RUN`` of a source (``wfctl/source-export@1``): the run and its records.

    Raises:
        RunNotFoundError: no such run.
        CheckpointCorruptError: a record cannot be trusted.
    """
    records = [entry_document(entry) for entry in source.records(run_id)]
    found = records[0]["run_id"] if records else run_id  # a start of its id, found whole
    run = _run_of(source, found)
    return {
        "schema": "wfctl/source-export@1",
        "source": source.kind,
        "store": source.location,
        "run": None if run is None else run_document(run),
        "records": records,
    }


def _run_of(source: Source, run_id: str) -> RunInfo | None:
    """The run as the source lists it, read alone when the source can (``run_info``), else
    found in its listing; None when it lists no such run (a DBOS child, listed in its root)."""
    one = getattr(source, "run_info", None)
    if not callable(one):
        return next((info for info in source.runs() if info.run_id == run_id), None)
    try:
        info: RunInfo = one(run_id)
    except RunNotFoundError:
        return None
    return info
