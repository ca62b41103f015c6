"""A directory written by agent-framework's ``FileCheckpointStorage`` (or exported from its
Cosmos DB storage), as a read-only source.

That storage writes one JSON file per checkpoint (``<checkpoint_id>.json``); the Cosmos DB
storage keeps the same JSON per document, with ``id`` (``<workflow_name>_<checkpoint_id>``) and
Cosmos's own ``_rid``, ``_ts``, ``_etag``, ``_self`` and ``_attachments``, which are ignored
here, so a directory of exported documents (one per file) reads the same. Neither records a
run: a run is one chain of a workflow's checkpoints (:func:`~wfctl._inspect._af_runs.split_runs`:
linked by ``previous_checkpoint_id``, and a functional workflow's roots that carry a run on),
named by its first checkpoint's id (a unique start of it, or the workflow's name when the
workflow has one run, finds it too). Its records are its checkpoints, parents first, oldest
first by stored time (the checkpoint id breaks ties): a tree, since concurrent steps fork that
history (several roots). A value the framework pickled (``{"__pickled__": b64, "__type__":
"mod:qual"}``) is never unpickled: it is given as an opaque marker with a static scan and
reading of its opcodes (:mod:`wfctl._sources._af_summary`). The framework is never imported.

The format records no end: a run is ``paused`` when its head holds pending requests,
``completed`` when its head can only have been written after the workflow returned (a functional
workflow's last save, a graph workflow's checkpoint with nothing in flight), else ``unknown``.
"""

from __future__ import annotations

import itertools
import json
import os
import stat
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from wfctl._errors import (
    AmbiguousRunError,
    CheckpointCorruptError,
    CheckpointNotFoundError,
    RunNotFoundError,
    WfctlError,
)
from wfctl._inspect._af_lineage import CheckpointFile, Scan, judge, scan_directory, when
from wfctl._inspect._af_runs import parents_first, split_runs
from wfctl._inspect._regular import read_regular_file

from ._af_summary import channel_sizes, opaque, part_sizes, summary_facts
from ._protocol import ClosingSource, Entry, KindSize, RunInfo, RunState, SizeInfo, by_kind

if TYPE_CHECKING:
    from wfctl._inspect._lineage import LineageReport

__all__ = ["AgentFrameworkSource", "is_checkpoint_dir", "opaque"]

#: The fields every checkpoint file of that storage holds (what detection looks for).
CHECKPOINT_FIELDS = frozenset(
    {"workflow_name", "checkpoint_id", "previous_checkpoint_id", "timestamp", "state"}
)
#: How many files detection reads at most.
DETECT_FILES = 3
#: How many candidates an ambiguous checkpoint id prefix names.
_CANDIDATES = 5


@dataclass(frozen=True, slots=True)
class _Run:
    """One run: its id (its first checkpoint's), its workflow, its checkpoints parents first,
    and whether its head ends it."""

    run_id: str
    workflow: str
    members: tuple[CheckpointFile, ...]
    ended: bool


class AgentFrameworkSource(ClosingSource):
    """A directory of agent-framework checkpoint files as a :class:`Source`.

    Raises:
        WfctlError: (from the constructor) the path is not a directory.
    """

    def __init__(self, directory: str | os.PathLike[str]) -> None:
        self._directory = Path(directory)
        if not self._directory.is_dir():
            raise WfctlError(f"{directory}: not a directory of agent framework checkpoints")

    @property
    def kind(self) -> str:
        """``agent-framework``."""
        return "agent-framework"

    @property
    def location(self) -> str:
        """The directory."""
        return str(self._directory)

    def _index(self, *, parts: bool = False) -> list[CheckpointFile]:
        """Every readable checkpoint: one read of each file (with ``parts``, its bytes by part
        and by executor or step too)."""
        return _checkpoints(self._scan(parts=parts))

    def _scan(self, *, parts: bool = False) -> Scan:
        return scan_directory(self._directory, extra=_parts if parts else None)

    def _runs(self, items: list[CheckpointFile]) -> list[_Run]:
        """The runs of ``items``, workflows in name order, each workflow's in start order
        (split as ``verify`` splits them)."""
        groups: dict[str, list[CheckpointFile]] = {}
        for item in items:
            groups.setdefault(item.workflow_name, []).append(item)
        runs = []
        for name in sorted(groups):
            ordered = parents_first(groups[name], lambda i: (i.checkpoint_id, i.parent), when)
            of_shape = {id(i.shape): i for i in ordered}
            for split in split_runs(i.shape for i in ordered):
                members = tuple(of_shape[id(shape)] for shape in split.members)
                runs.append(_Run(split.run_id, name, members, split.ended))
        return runs

    def _run(self, run_id: str, items: list[CheckpointFile] | None = None) -> _Run:
        """The run ``run_id`` names: its id, a unique start of it, or a workflow's name when
        the workflow has one run.

        Raises:
            RunNotFoundError: none (a workflow with several runs suggests their ids).
            AmbiguousRunError: several runs start with it.
        """
        runs = self._runs(self._index() if items is None else items)
        exact = [r for r in runs if r.run_id == run_id]
        if exact:
            return exact[0]
        started = [r for r in runs if r.run_id.startswith(run_id)] if run_id else []
        if len(started) == 1:
            return started[0]
        if started:
            ids = sorted(r.run_id for r in started)
            raise AmbiguousRunError(run_id, ids[: AmbiguousRunError.SHOWN], len(ids))
        named = [r for r in runs if r.workflow == run_id]
        if len(named) == 1:
            return named[0]
        raise RunNotFoundError(run_id, [r.run_id for r in named][-3:])

    def runs(self, *, workflow: str | None = None) -> Iterator[RunInfo]:
        """Yield each run (of ``workflow``), oldest first, judged as ``verify`` judges it."""
        scan = self._scan()
        items = [i for i in _checkpoints(scan) if workflow in (None, i.workflow_name)]
        runs = self._runs(items)
        verdicts = {v.run_id: v for v in judge(scan).runs} if runs else {}
        infos = [_info(run, verdicts.get(run.run_id)) for run in runs]
        yield from sorted(infos, key=lambda info: (info.created_at, info.run_id))

    def records(self, run_id: str) -> Iterator[Entry]:
        """Yield the run's checkpoints, parents first, oldest first, each read when it is
        given.

        Raises:
            RunNotFoundError: no such run (at once).
            AmbiguousRunError: several runs start with ``run_id`` (at once).
            CheckpointCorruptError: a file changed or went since it was listed (while
                iterating).
        """
        run = self._run(run_id)
        return self._entries(run)

    def _entries(self, run: _Run) -> Iterator[Entry]:
        for order, item in enumerate(run.members):
            yield self._entry(run, item, order)

    def _entry(self, run: _Run, item: CheckpointFile, order: int) -> Entry:
        raw, size = _read(self._directory / item.file)
        if not isinstance(raw, dict) or raw.get("checkpoint_id") != item.checkpoint_id:
            raise CheckpointCorruptError(item.file, "changed or removed while it was read")
        pending = raw.get("pending_request_info_events")
        requests = sorted(pending) if isinstance(pending, dict) else []
        data = opaque(raw)
        return Entry(
            entry_id=item.checkpoint_id,
            run_id=run.run_id,
            parent_ids=() if item.parent is None else (item.parent,),
            order=order,
            kind="request" if requests else "checkpoint",
            time=item.stamp,
            summary={
                "workflow": item.workflow_name,
                "file": item.file,
                "iteration_count": raw.get("iteration_count"),
                "pending_request_ids": requests,
                "version": raw.get("version"),
                # A functional workflow's count is always 0: its steps are what it ran.
                **({"iteration": item.iteration} if item.shape.cache is None else {}),
                **summary_facts(data, _cached_before(run, order)),
            },
            data=data,
            size_bytes=size,
        )

    def record(self, entry_id: str) -> Entry:
        """Return the checkpoint whose id is ``entry_id`` or starts with it, numbered as in
        its run's :meth:`records`.

        Raises:
            CheckpointNotFoundError: no checkpoint has that id.
            WfctlError: several checkpoints start with it (some named).
        """
        items = self._index()
        found = [i for i in items if i.checkpoint_id == entry_id]
        if not found and entry_id:
            found = [i for i in items if i.checkpoint_id.startswith(entry_id)]
        ids = sorted({i.checkpoint_id for i in found})
        if len(ids) > 1:
            more = " and more" if len(ids) > _CANDIDATES else ""
            raise WfctlError(
                f"checkpoint id {entry_id!r} is ambiguous: "
                f"{', '.join(ids[:_CANDIDATES])}{more}; give more of it"
            )
        for run in self._runs(items) if ids else []:
            for order, peer in enumerate(run.members):
                if peer.checkpoint_id == ids[0]:
                    return self._entry(run, peer, order)
        raise CheckpointNotFoundError(entry_id)

    def sizes(self, run_id: str | None = None) -> Iterator[SizeInfo]:
        """Yield each run's bytes: its checkpoint files, by part (``by_kind``: the
        checkpoints' own fields, ``state``, ``messages``, ``requests``, ``step_cache``; only
        ``checkpoint`` counts records, so the counts still add up) and by executor or step
        (``by_channel``). Each file is read once.

        Raises:
            RunNotFoundError: ``run_id`` names no run.
        """
        items = self._index(parts=True)
        runs = [self._run(run_id, items)] if run_id is not None else self._runs(items)
        for run in runs:
            yield _size_info(run)

    def verify(self, run_id: str | None = None) -> LineageReport:
        """Judge each run's checkpoints as one lineage, as ``verify-lineage
        --agent-framework`` does (:func:`~wfctl._inspect._af_lineage.verify_agent_framework_dir`):
        a ``*.json`` entry that is not a regular file (a link, a FIFO) is a problem of the
        report, never read.

        Raises:
            RunNotFoundError: ``run_id`` names no run.
        """
        from wfctl._inspect._lineage import LineageReport

        scan = self._scan()
        report = judge(scan)
        if run_id is None:
            return report
        run = self._run(run_id, _checkpoints(scan))
        return LineageReport(tuple(v for v in report.runs if v.run_id == run.run_id))


def _checkpoints(scan: Scan) -> list[CheckpointFile]:
    return [item for records in scan.groups.values() for item in records]


def _parts(raw: dict[str, Any]) -> tuple[dict[str, int], dict[str, int]]:
    return part_sizes(raw), channel_sizes(raw)


def _cached_before(run: _Run, order: int) -> frozenset[str]:
    """The step cache's keys of the run's checkpoint saved before checkpoint ``order`` (``log``
    shows the entries each save adds; not its parent's: concurrent steps' saves name a stale
    parent)."""
    before = run.members[order - 1].shape.cache if order else None
    return before or frozenset()


def _info(run: _Run, verdict: Any) -> RunInfo:
    """A run as ``runs`` lists it, with its verdict's head and problems."""
    members = run.members
    head_id = verdict.head if verdict is not None and verdict.head else members[-1].checkpoint_id
    head = next((i for i in members if i.checkpoint_id == head_id), members[-1])
    problems: tuple[str, ...] = verdict.problems if verdict is not None else ()
    status: RunState = "unknown"
    if head.requests:
        status = "paused"
    elif run.ended and head is members[-1]:
        status = "completed"
    facts: dict[str, Any] = {}
    if head.shape.cache is None:
        facts["iterations"] = head.iteration
    else:
        facts["steps"] = len(head.shape.cache)
    if head.requests:
        facts["pending_requests"] = head.requests
    return RunInfo(
        run_id=run.run_id,
        workflow=run.workflow,
        status=status,
        head_id=head.checkpoint_id,
        created_at=min(i.stamp for i in members),
        updated_at=max(i.stamp for i in members),
        record_count=len(members),
        size_bytes=sum(i.size for i in members),
        problem=f"{problems[0]} (and {len(problems) - 1} more)"
        if len(problems) > 1
        else (problems[0] if problems else None),
        details=facts,
    )


def _size_info(run: _Run) -> SizeInfo:
    """A run's bytes by part and by executor or step."""
    kinds: dict[str, list[int]] = {"checkpoint": [0, 0]}
    channels: dict[str, int] = {}
    for item in run.members:
        by_part, by_channel = item.extra or ({}, {})
        kinds["checkpoint"][0] += 1
        kinds["checkpoint"][1] += max(0, item.size - sum(by_part.values()))
        for part, size in by_part.items():
            if size:
                kinds.setdefault(part, [0, 0])[1] += min(size, item.size)
        for channel, size in by_channel.items():
            channels[channel] = channels.get(channel, 0) + size
    ranked = sorted(channels.items(), key=lambda pair: (-pair[1], pair[0]))
    return SizeInfo(
        run.run_id,
        sum(i.size for i in run.members),
        len(run.members),
        by_kind(kinds),
        by_channel=tuple(KindSize(name, 0, size) for name, size in ranked),
    )


def _read(file: Path) -> tuple[Any, int]:
    """A file's JSON (None if it is not JSON) and its size in bytes.

    Only a regular file of the directory is read (:func:`~wfctl._inspect._regular.read_regular_file`):
    a link is not followed out of it and a FIFO or device is not opened for reading.
    """
    try:
        data = read_regular_file(file)
    except OSError:
        return None, 0
    try:
        return json.loads(data), len(data)
    except (ValueError, RecursionError):
        return None, len(data)


def is_checkpoint_dir(path: Path) -> bool:
    """Whether ``path`` is a directory whose first JSON files (at most :data:`DETECT_FILES`)
    hold agent-framework checkpoint fields."""
    if not path.is_dir():
        return False
    regular = (file for file in sorted(path.glob("*.json")) if _is_regular(file))
    for file in itertools.islice(regular, DETECT_FILES):  # links and FIFOs neither read nor counted
        raw, _ = _read(file)
        if isinstance(raw, dict) and raw.keys() >= CHECKPOINT_FIELDS:
            return True
    return False


def _is_regular(file: Path) -> bool:
    """Whether ``file`` is a regular file itself (not a link to one)."""
    try:
        return stat.S_ISREG(file.lstat().st_mode)
    except OSError:
        return False
