"""Lineage verification of a directory written by the agent framework's ``FileCheckpointStorage``.

That storage writes one JSON file per checkpoint, ``<checkpoint_id>.json`` (a uuid4 by default),
holding the ``WorkflowCheckpoint`` fields: ``workflow_name``, ``graph_signature_hash``,
``checkpoint_id``, ``previous_checkpoint_id``, ``timestamp`` (ISO 8601, UTC), ``messages``,
``state``, ``pending_request_info_events``, ``iteration_count``, ``metadata`` and ``version``.
Values that are not plain JSON are pickled and embedded as base64 (``{"__pickled__": ...,
"__type__": ...}``). Only the four plain lineage fields are read here; nothing is unpickled, no
payload is decoded and the framework is never imported.

The format has no run id: its ``get_latest(workflow_name=...)`` picks the newest checkpoint of a
workflow by timestamp and restores from it, so every checkpoint of one workflow is checked as
one lineage, the way that storage sees it (report 004: two roots, one record unreachable).
"""

from __future__ import annotations

import asyncio
import fnmatch
import itertools
import json
import os
from collections import defaultdict
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from wfctl._errors import WfctlError

from ._lineage import LineageReport, RunVerdict, listed
from ._regular import NotRegularFileError, read_regular_file

__all__ = ["UNREADABLE", "verify_agent_framework_dir"]

#: The ``run_id`` of the verdict that collects files whose workflow cannot be read.
UNREADABLE = "(unreadable files)"
_OLDEST = datetime.min.replace(tzinfo=UTC)


@dataclass(frozen=True, slots=True)
class _Record:
    """The lineage fields of one checkpoint file."""

    checkpoint_id: str
    parent: str | None
    workflow_name: str
    timestamp: datetime
    file: str

    @property
    def label(self) -> str:
        """The file, and the id too when the file is not named after it."""
        named = self.file == f"{self.checkpoint_id}.json"
        return self.file if named else f"{self.checkpoint_id} (in {self.file})"


async def verify_agent_framework_dir(
    path: str | os.PathLike[str],
    *,
    workflow_name: str | None = None,
    pattern: str | None = None,
) -> LineageReport:
    """Verify the checkpoint lineage in an agent framework ``FileCheckpointStorage`` directory.

    One verdict per workflow name (its ``run_id`` is the workflow name): more than one root,
    records unreachable from the head (the newest by timestamp), missing parents, cycles,
    duplicate ids and files whose name is not their id are problems. Files that cannot be read
    as a checkpoint are named as problems of their workflow, or, when not even that can be read,
    of an extra verdict with ``run_id`` :data:`UNREADABLE`.

    Args:
        path: the storage directory.
        workflow_name: check only this workflow (an absent one gets a "not found" verdict).
        pattern: check only the workflows whose name matches this ``fnmatch`` pattern, as
            ``--workflow`` matches in every command (files of no readable workflow are still
            reported).

    Returns:
        The report, workflows in name order.

    Raises:
        WfctlError: ``path`` is not a directory.
    """
    groups, problems = await asyncio.to_thread(_scan, Path(path))
    owners = {r.checkpoint_id: name for name, records in groups.items() for r in records}
    names = sorted(set(groups) | (set(problems) - {UNREADABLE}))
    if workflow_name is not None:
        names = [workflow_name]
    if pattern is not None:
        names = [name for name in names if fnmatch.fnmatchcase(name, pattern)]
    verdicts = [_verdict(n, groups.get(n, []), problems.get(n, []), owners) for n in names]
    if problems.get(UNREADABLE):
        verdicts.append(RunVerdict(UNREADABLE, None, 0, None, tuple(problems[UNREADABLE])))
    return LineageReport(tuple(verdicts))


def _scan(directory: Path) -> tuple[dict[str, list[_Record]], dict[str, list[str]]]:
    """Read every ``*.json`` file of ``directory``: records and problems by workflow name."""
    if not directory.is_dir():
        raise WfctlError(f"{directory}: not a directory of agent framework checkpoints")
    groups: dict[str, list[_Record]] = defaultdict(list)
    problems: dict[str, list[str]] = defaultdict(list)
    for file in sorted(directory.glob("*.json")):
        record, problem, owner = _read_file(file)
        if record is not None:
            groups[record.workflow_name].append(record)
        if problem is not None:
            problems[owner or UNREADABLE].append(problem)
    return groups, problems


def _read_file(file: Path) -> tuple[_Record | None, str | None, str | None]:
    """Return a file's record (or None), its problem (or None) and its workflow (if known)."""
    try:
        raw = json.loads(read_regular_file(file))
    except NotRegularFileError as exc:
        return None, f"{file.name}: not read: {exc.strerror}", None
    except (OSError, ValueError, RecursionError) as exc:
        return None, f"{file.name}: unreadable ({type(exc).__name__}: {exc})", None
    if not isinstance(raw, dict):
        return None, f"{file.name}: not a JSON object", None
    name, cid, parent, stamp = (
        raw.get(key)
        for key in ("workflow_name", "checkpoint_id", "previous_checkpoint_id", "timestamp")
    )
    if not isinstance(name, str):
        return None, f"{file.name}: no workflow_name", None
    if not isinstance(cid, str) or not cid or not (parent is None or isinstance(parent, str)):
        return None, f"{file.name}: missing or invalid checkpoint_id/previous_checkpoint_id", name
    when, problem = _parse_time(stamp)
    record = _Record(cid, parent, name, when, file.name)
    if problem:
        return record, f"{record.label}: {problem}", name
    if file.name != f"{cid}.json":
        return (
            record,
            f"{record.label}: the file is not named {cid}.json, so load() misses it",
            name,
        )
    return record, None, name


def _parse_time(stamp: object) -> tuple[datetime, str | None]:
    """Parse an ISO 8601 timestamp (naive ones are taken as UTC)."""
    try:
        when = datetime.fromisoformat(stamp) if isinstance(stamp, str) else None
    except ValueError:
        when = None
    if when is None:
        return _OLDEST, f"invalid timestamp {stamp!r} (get_latest cannot order it)"
    return (when if when.tzinfo else when.replace(tzinfo=UTC)), None


def _verdict(
    name: str, records: list[_Record], problems: list[str], owners: dict[str, str]
) -> RunVerdict:
    """Judge the checkpoints of one workflow as one lineage."""
    if not records:
        missing = "no readable checkpoint" if problems else f"workflow {name!r} not found"
        return RunVerdict(name, name, 0, None, (*problems, missing))
    notes: list[str] = []
    by_id: dict[str, _Record] = {}
    for record in records:
        twin = by_id.setdefault(record.checkpoint_id, record)
        if twin is not record:
            problems.append(
                f"duplicate checkpoint id {record.checkpoint_id}: in {twin.file} and {record.file}"
            )
    roots = [r for r in records if r.parent is None]
    if len(roots) != 1:
        named = f": {listed([r.label for r in roots])}" if roots else ""
        problems.append(f"{len(roots)} roots (exactly one expected){named}")
    children: dict[str, list[_Record]] = defaultdict(list)
    for record in records:
        if record.parent is None:
            continue
        children[record.parent].append(record)
        if record.parent not in by_id:
            other = owners.get(record.parent)
            where = f"belongs to workflow {other!r}" if other else "not found"
            problems.append(f"{record.label}: parent {record.parent} {where}")
    for parent, kids in sorted(children.items()):
        if len(kids) > 1:
            problems.append(f"{parent} has {len(kids)} children: {listed([k.label for k in kids])}")
    problems.extend(_cycles(by_id))
    head = _head(records, children, notes)
    reached: set[str] = set()
    cursor: _Record | None = head
    while cursor is not None and cursor.checkpoint_id not in reached:
        reached.add(cursor.checkpoint_id)
        cursor = by_id.get(cursor.parent) if cursor.parent is not None else None
    lost = [r.label for r in records if r.checkpoint_id not in reached]
    if lost:
        problems.append(
            f"{len(lost)} record(s) unreachable from the head {head.label} (the newest): "
            f"{listed(lost)}"
        )
    if len(roots) > 1 and not _families_overlap(by_id):
        notes.append(
            f"the {len(roots)} lineages do not overlap in time: they may be separate "
            "runs, which this format cannot tell apart (get_latest resumes the newest)"
        )
    return RunVerdict(name, name, len(records), head.checkpoint_id, tuple(problems), tuple(notes))


def _head(records: list[_Record], children: dict[str, list[_Record]], notes: list[str]) -> _Record:
    """Return the newest record, preferring, among equal timestamps, one with no child."""
    newest = max(r.timestamp for r in records)
    tied = sorted((r for r in records if r.timestamp == newest), key=lambda r: r.checkpoint_id)
    leaves = [r for r in tied if r.checkpoint_id not in children] or tied
    if len(leaves) > 1:
        notes.append(
            f"{len(leaves)} records share the newest timestamp; the head is ambiguous: "
            f"{listed([r.label for r in leaves])}"
        )
    return leaves[0]


def _cycles(by_id: dict[str, _Record]) -> list[str]:
    """Name each cycle of parent links once."""
    state: dict[str, int] = {}  # 1: on the current walk, 2: done
    found: list[str] = []
    for start in by_id:
        path: list[str] = []
        cursor: str | None = start
        while cursor is not None and cursor in by_id and cursor not in state:
            state[cursor] = 1
            path.append(cursor)
            cursor = by_id[cursor].parent
        if cursor is not None and state.get(cursor) == 1:
            loop = path[path.index(cursor) :]
            found.append(f"cycle of parent links: {' -> '.join([*loop, cursor])}")
        for visited in path:
            state[visited] = 2
    return found


def _families_overlap(by_id: dict[str, _Record]) -> bool:
    """Return whether the time spans of the lineage families (by their root) overlap."""
    family: dict[str, str] = {}

    def root_of(cid: str) -> str:
        walked: dict[str, None] = {}  # ordered and O(1) membership, for long chains
        while cid not in family and cid not in walked:
            walked[cid] = None
            parent = by_id[cid].parent
            if parent is None or parent not in by_id:
                break
            cid = parent
        top = family.get(cid, cid)
        family.update(dict.fromkeys(walked, top))
        return top

    spans: dict[str, tuple[datetime, datetime]] = {}
    for record in by_id.values():
        root, when = root_of(record.checkpoint_id), record.timestamp
        low, high = spans.get(root, (when, when))
        spans[root] = (min(low, when), max(high, when))
    ordered = sorted(spans.values())
    return any(later[0] <= earlier[1] for earlier, later in itertools.pairwise(ordered))
