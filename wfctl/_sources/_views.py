"""What the inspecting commands show of a source of another engine than wfctl.

``verify-lineage``, ``runs``, ``log``, ``show`` and ``export`` read wfctl's own stores by their
own paths; a store of another kind (an agent-framework directory) is opened as a
:class:`~wfctl._sources._protocol.Source` by :func:`~wfctl._sources._open.open_other_source`
and read through it, here, as one report or one ``--json`` document per command. Values are
as the reader gives them: JSON decoded, pickles as opaque markers, never unpickled.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Iterable, Iterator, Sequence
from typing import TYPE_CHECKING, Any

from wfctl._errors import NothingVerifiedError, WfctlError
from wfctl._inspect._query import RunQuery, SortField

from ._protocol import Entry, RunInfo, Source

if TYPE_CHECKING:
    from wfctl._inspect._lineage import LineageReport

__all__ = [
    "a_kind",
    "entry_document",
    "export_document",
    "log_document",
    "log_tree",
    "run_document",
    "runs_document",
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


def source_runs(source: Source, query: RunQuery) -> tuple[list[RunInfo], int, int]:
    """The runs ``wfctl runs`` lists of a source: those shown, how many matched, how many
    the source holds.

    Raises:
        WfctlError: a filter its records cannot answer (a time) was given.
    """
    _only_workflow_filters(source, query, statuses=True)
    every = list(source.runs())
    matching = [
        info
        for info in every
        if (query.workflow is None or fnmatch.fnmatchcase(info.workflow, query.workflow))
        and (not query.statuses or info.status in query.statuses)
    ]
    key = {
        SortField.CREATED: lambda i: (i.created_at or "", i.run_id),
        SortField.UPDATED: lambda i: (i.updated_at or "", i.run_id),
        SortField.RUN_ID: lambda i: ("", i.run_id),
        SortField.WORKFLOW: lambda i: (i.workflow, i.run_id),
        SortField.STATUS: lambda i: (i.status, i.run_id),
    }[query.sort]
    shown = sorted(matching, key=key, reverse=query.descending)
    if query.limit is not None:
        shown = shown[: query.limit]
    return shown, len(matching), len(every)


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


def runs_document(source: Source, query: RunQuery) -> dict[str, Any]:
    """``wfctl runs --json`` of a source (``wfctl/source-runs@1``)."""
    shown, matching, total = source_runs(source, query)
    return {
        "schema": "wfctl/source-runs@1",
        "source": source.kind,
        "store": source.location,
        "run_count": len(shown),
        "matching_run_count": matching,
        "total_run_count": total,
        "runs": [run_document(info) for info in shown],
    }


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
    run = next((info for info in source.runs(workflow=None) if info.run_id == found), None)
    return {
        "schema": "wfctl/source-export@1",
        "source": source.kind,
        "store": source.location,
        "run": None if run is None else run_document(run),
        "records": records,
    }
