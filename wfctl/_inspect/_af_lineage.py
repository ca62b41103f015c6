"""Lineage verification of a directory written by the agent framework's ``FileCheckpointStorage``.

That storage writes one JSON file per checkpoint, ``<checkpoint_id>.json`` (a uuid4 by default),
holding the ``WorkflowCheckpoint`` fields: ``workflow_name``, ``graph_signature_hash``,
``checkpoint_id``, ``previous_checkpoint_id``, ``timestamp`` (ISO 8601, UTC), ``messages``,
``state``, ``pending_request_info_events``, ``iteration_count``, ``metadata`` and ``version``.
Values that are not plain JSON are pickled and embedded as base64 (``{"__pickled__": ...,
"__type__": ...}``). The lineage fields are read here, and what splitting a workflow into runs
needs (:mod:`._af_runs`: whether a checkpoint asks, holds messages, its step cache's keys and
its input); nothing is unpickled, no payload is decoded and the framework is never imported.

The format has no run id: the checkpoints of a workflow are split into runs, chains of
checkpoints (:func:`~._af_runs.split_runs`), and each run is judged as one lineage: a run with
several roots is the seeds' fork (report 004), or a functional run resumed with answers alone.
"""

from __future__ import annotations

import asyncio
import fnmatch
import json
import os
from collections import defaultdict
from collections.abc import Callable, Container
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from wfctl._errors import WfctlError

from ._af_runs import CheckpointShape, parents_first, shape_of, split_runs
from ._lineage import LineageReport, RunVerdict, listed
from ._regular import NotRegularFileError, read_regular_file

__all__ = [
    "UNREADABLE",
    "CheckpointFile",
    "Scan",
    "judge",
    "scan_directory",
    "verify_agent_framework_dir",
    "when",
]

#: The ``run_id`` of the verdict that collects files whose workflow cannot be read.
UNREADABLE = "(unreadable files)"
_OLDEST = datetime.min.replace(tzinfo=UTC)
#: The fields Cosmos DB adds to a document (an exported checkpoint of its storage holds them).
_COSMOS_FIELDS = frozenset({"_rid", "_ts", "_etag", "_self"})


@dataclass(frozen=True, slots=True)
class CheckpointFile:
    """What one read of a checkpoint file keeps: its lineage fields (``timestamp`` parsed,
    ``stamp`` as stored), what run splitting reads of it, its size in bytes, how many pending
    requests it holds, and what the scan's ``extra`` made of its JSON (never its payload
    otherwise)."""

    checkpoint_id: str
    parent: str | None
    workflow_name: str
    timestamp: datetime
    file: str
    shape: CheckpointShape
    iteration: int | None = None
    stamp: str = ""
    size: int = 0
    requests: int = 0
    extra: Any = None

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

    One verdict per run (its ``run_id`` its first checkpoint's id; the runs of a workflow in the
    order they started): more than one root, records unreachable from the run's head (its
    newest by timestamp), missing parents, a checkpoint with two children, cycles, duplicate
    ids, files whose name is not their id and a graph workflow's iteration gap (a checkpoint the
    framework did not save) are problems; checkpoints sharing a timestamp are a note. Files that
    cannot be read as a checkpoint are named as problems of their run (of the workflow's newest
    when no checkpoint can be read from them), or, when not even their workflow can be read, of
    an extra verdict with ``run_id`` :data:`UNREADABLE`; a workflow with no readable checkpoint
    gets one verdict with its name as ``run_id``.

    Args:
        path: the storage directory.
        workflow_name: check only this workflow (an absent one gets a "not found" verdict).
        pattern: check only the workflows whose name matches this ``fnmatch`` pattern, as
            ``--workflow`` matches in every command (files of no readable workflow are still
            reported).

    Returns:
        The report, workflows in name order, each workflow's runs in the order they started.

    Raises:
        WfctlError: ``path`` is not a directory.
    """
    return judge(
        await asyncio.to_thread(scan_directory, Path(path)),
        workflow_name=workflow_name,
        pattern=pattern,
    )


@dataclass(frozen=True, slots=True)
class Scan:
    """One read of a directory: its checkpoints by workflow name (files in name order), and
    the problems of the files, by workflow name (:data:`UNREADABLE` when not even that can be
    read)."""

    groups: dict[str, list[CheckpointFile]]
    problems: dict[str, list[str]]


def judge(
    scan: Scan, *, workflow_name: str | None = None, pattern: str | None = None
) -> LineageReport:
    """The report :func:`verify_agent_framework_dir` gives, of a directory already read."""
    groups, problems = scan.groups, scan.problems
    owners = {r.checkpoint_id: name for name, records in groups.items() for r in records}
    names = sorted(set(groups) | (set(problems) - {UNREADABLE}))
    if workflow_name is not None:
        names = [workflow_name]
    if pattern is not None:
        names = [name for name in names if fnmatch.fnmatchcase(name, pattern)]
    verdicts = [
        verdict
        for n in names
        for verdict in _verdicts(n, groups.get(n, []), problems.get(n, []), owners)
    ]
    if problems.get(UNREADABLE):
        verdicts.append(RunVerdict(UNREADABLE, None, 0, None, tuple(problems[UNREADABLE])))
    return LineageReport(tuple(verdicts))


def scan_directory(
    directory: Path, *, extra: Callable[[dict[str, Any]], Any] | None = None
) -> Scan:
    """Read every ``*.json`` file of ``directory`` once (a regular file only: a link or a
    FIFO is a problem, never opened for reading); ``extra`` is called on each checkpoint's JSON
    and kept as its :attr:`CheckpointFile.extra`.

    Raises:
        WfctlError: ``directory`` is not a directory.
    """
    if not directory.is_dir():
        raise WfctlError(f"{directory}: not a directory of agent framework checkpoints")
    groups: dict[str, list[CheckpointFile]] = defaultdict(list)
    problems: dict[str, list[str]] = defaultdict(list)
    with os.scandir(directory) as entries:  # names only: sorting paths costs more
        names = sorted(entry.name for entry in entries if entry.name.endswith(".json"))
    for name in names:
        record, problem, owner = _read_file(directory / name, extra)
        if record is not None:
            groups[record.workflow_name].append(record)
        if problem is not None:
            problems[owner or UNREADABLE].append(problem)
    return Scan(dict(groups), dict(problems))


def _read_file(
    file: Path, extra: Callable[[dict[str, Any]], Any] | None = None
) -> tuple[CheckpointFile | None, str | None, str | None]:
    """Return a file's record (or None), its problem (or None) and its workflow (if known)."""
    try:
        data = read_regular_file(file)
        raw = json.loads(data)
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
    iteration = raw.get("iteration_count")
    pending = raw.get("pending_request_info_events")
    record = CheckpointFile(
        cid,
        parent,
        name,
        when,
        file.name,
        shape_of(raw, cid, parent),
        iteration if isinstance(iteration, int) and not isinstance(iteration, bool) else None,
        stamp if isinstance(stamp, str) else "",
        len(data),
        len(pending) if isinstance(pending, dict) else 0,
        None if extra is None else extra(raw),
    )
    if problem:
        return record, f"{record.label}: {problem}", name
    if _COSMOS_FIELDS & raw.keys():  # an exported Cosmos DB document: load() queries its id
        document_id = raw.get("id")
        if document_id != f"{name}_{cid}":
            return (
                record,
                f"{record.label}: document id {document_id!r} is not {name}_{cid}, as the "
                "Cosmos DB storage writes it",
                name,
            )
        return record, None, name
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


def _verdicts(
    name: str, records: list[CheckpointFile], problems: list[str], owners: dict[str, str]
) -> list[RunVerdict]:
    """Judge the checkpoints of one workflow: one verdict per run (:mod:`._af_runs`), in the
    order the runs started; the workflow's problems that belong to no checkpoint go to its
    newest run."""
    if not records:
        missing = "no readable checkpoint" if problems else f"workflow {name!r} not found"
        return [RunVerdict(name, name, 0, None, (*problems, missing))]
    ordered = parents_first(records, lambda r: (r.checkpoint_id, r.parent), when)
    splits = split_runs(r.shape for r in ordered)
    by_shape = {id(r.shape): r for r in records}
    runs = [[by_shape[id(shape)] for shape in split.members] for split in splits]
    run_of = {id(r): index for index, members in enumerate(runs) for r in members}
    found: list[tuple[list[str], list[str]]] = [([], []) for _ in runs]
    by_id: dict[str, CheckpointFile] = {}
    for record in records:
        twin = by_id.setdefault(record.checkpoint_id, record)
        if twin is not record:
            found[run_of[id(twin)]][0].append(
                f"duplicate checkpoint id {record.checkpoint_id}: in {twin.file} and {record.file}"
            )
    labelled = {r.label: r for r in records}
    for problem in problems:
        owner = next((r for label, r in labelled.items() if problem.startswith(label)), None)
        found[run_of[id(owner)] if owner is not None else len(runs) - 1][0].append(problem)
    _workflow_links(records, by_id, owners, run_of, found)
    _ties(records, run_of, found)
    verdicts = []
    for index, members in enumerate(runs):
        run_problems, notes = found[index]
        verdicts.append(_verdict(name, members, by_id, run_problems, notes))
    return verdicts


def when(record: CheckpointFile) -> tuple[datetime, str]:
    """The order of a workflow's checkpoints: stored time, then id."""
    return record.timestamp, record.checkpoint_id


def _workflow_links(
    records: list[CheckpointFile],
    by_id: dict[str, CheckpointFile],
    owners: dict[str, str],
    run_of: dict[int, int],
    found: list[tuple[list[str], list[str]]],
) -> None:
    """Missing parents, forks (a checkpoint with several children), skipped checkpoints (an
    iteration gap) and cycles, each charged to its run."""
    children: dict[str, list[CheckpointFile]] = defaultdict(list)
    for record in records:
        if record.parent is None:
            continue
        children[record.parent].append(record)
        parent = by_id.get(record.parent)
        if parent is None:
            other = owners.get(record.parent)
            where = f"belongs to workflow {other!r}" if other else "not found"
            found[run_of[id(record)]][0].append(f"{record.label}: parent {record.parent} {where}")
        elif (
            record.shape.cache is None
            and record.iteration is not None
            and parent.iteration is not None
            and record.iteration > parent.iteration + 1
        ):
            lowest, highest = parent.iteration + 1, record.iteration - 1
            missing = (
                f"the checkpoint of iteration {lowest} was"
                if lowest == highest
                else f"the checkpoints of iterations {lowest} to {highest} were"
            )
            found[run_of[id(record)]][0].append(
                f"{record.label}: iteration {record.iteration} follows its parent's "
                f"{parent.iteration}: {missing} not saved (agent-framework skips a checkpoint "
                "it cannot encode and parents the next one to the last it saved)"
            )
    for parent_id, kids in sorted(children.items()):
        if len(kids) > 1:
            found[run_of[id(kids[0])]][0].append(
                f"{parent_id} has {len(kids)} children: {listed([k.label for k in kids])}"
            )
    for cycle, first in _cycles(by_id):
        found[run_of[id(by_id[first])]][0].append(cycle)


def _ties(
    records: list[CheckpointFile], run_of: dict[int, int], found: list[tuple[list[str], list[str]]]
) -> None:
    """Note checkpoints of the workflow that share a timestamp: agent-framework's
    ``get_latest`` orders by timestamp, and its versions that break a tie by id alone may
    restore the older checkpoint of the two (upstream #8513, #8514)."""
    by_time: dict[datetime, list[CheckpointFile]] = defaultdict(list)
    for record in records:
        if record.timestamp != _OLDEST:
            by_time[record.timestamp].append(record)
    for when, tied in sorted(by_time.items()):
        if len(tied) > 1:
            found[run_of[id(tied[0])]][1].append(
                f"{len(tied)} checkpoints share the timestamp {when.isoformat()}: "
                f"{listed([r.label for r in tied])} (get_latest that breaks the tie by id "
                "alone may restore the older one)"
            )


def _verdict(
    name: str,
    members: list[CheckpointFile],
    by_id: dict[str, CheckpointFile],
    problems: list[str],
    notes: list[str],
) -> RunVerdict:
    """Judge one run's checkpoints as one lineage."""
    roots = [r for r in members if r.parent is None]
    if len(roots) > 1:
        problems.insert(
            0, f"{len(roots)} roots (exactly one expected): {listed([r.label for r in roots])}"
        )
    ids = {r.checkpoint_id for r in members}
    has_child = {r.parent for r in members if r.parent in ids}
    head = _head(members, has_child, notes)
    reached: set[str] = set()
    cursor: CheckpointFile | None = head
    while cursor is not None and cursor.checkpoint_id not in reached:
        reached.add(cursor.checkpoint_id)
        cursor = by_id.get(cursor.parent) if cursor.parent is not None else None
    lost = [r.label for r in members if r.checkpoint_id not in reached]
    if lost:
        problems.append(
            f"{len(lost)} record(s) unreachable from the head {head.label} (the newest): "
            f"{listed(lost)}"
        )
    run_id = members[0].checkpoint_id
    return RunVerdict(run_id, name, len(members), head.checkpoint_id, tuple(problems), tuple(notes))


def _head(
    records: list[CheckpointFile], children: Container[str | None], notes: list[str]
) -> CheckpointFile:
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


def _cycles(by_id: dict[str, CheckpointFile]) -> list[tuple[str, str]]:
    """Name each cycle of parent links once, with the id it starts from."""
    state: dict[str, int] = {}  # 1: on the current walk, 2: done
    found: list[tuple[str, str]] = []
    for start in by_id:
        path: list[str] = []
        cursor: str | None = start
        while cursor is not None and cursor in by_id and cursor not in state:
            state[cursor] = 1
            path.append(cursor)
            cursor = by_id[cursor].parent
        if cursor is not None and state.get(cursor) == 1:
            loop = path[path.index(cursor) :]
            found.append((f"cycle of parent links: {' -> '.join([*loop, cursor])}", cursor))
        for visited in path:
            state[visited] = 2
    return found
