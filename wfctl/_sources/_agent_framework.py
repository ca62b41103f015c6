"""A directory written by agent-framework's ``FileCheckpointStorage``, as a read-only source.

That storage writes one JSON file per checkpoint (``<checkpoint_id>.json``) and has no run id:
checkpoints are grouped by ``workflow_name``, the way its ``get_latest`` sees them and the way
:mod:`wfctl._inspect._af_lineage` verifies them, so a run here is a workflow name. Its records are the
checkpoints, oldest first by their stored time (the checkpoint id breaks ties), each with its
``previous_checkpoint_id`` as parent: a tree, since concurrent steps fork that history (several
roots). A value the framework pickled (``{"__pickled__": b64, "__type__": "mod:qual"}``) is
never unpickled or decoded: it is given as ``{"$opaque": "pickle", "type": ..., "bytes": N, "scan": ...}``
(:mod:`wfctl._sources._pickle`).
The framework is never imported.

The format records no end: a run is ``paused`` when its head holds pending requests, else
``unknown`` (a checkpoint after the last step looks the same as one before a crash).
"""

from __future__ import annotations

import base64
import binascii
import heapq
import itertools
import json
import os
import stat
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from wfctl._errors import (
    CheckpointCorruptError,
    CheckpointNotFoundError,
    RunNotFoundError,
    WfctlError,
)
from wfctl._inspect._regular import read_regular_file

from ._pickle import pickle_marker
from ._protocol import ClosingSource, Entry, RunInfo, RunState, SizeInfo, by_kind

if TYPE_CHECKING:
    from wfctl._inspect._lineage import LineageReport

__all__ = ["AgentFrameworkSource", "is_checkpoint_dir", "opaque"]

#: The fields every checkpoint file of that storage holds (what detection looks for).
CHECKPOINT_FIELDS = frozenset(
    {"workflow_name", "checkpoint_id", "previous_checkpoint_id", "timestamp", "state"}
)
#: How many files detection reads at most.
DETECT_FILES = 3
_PICKLED, _TYPE = "__pickled__", "__type__"


@dataclass(frozen=True, slots=True)
class _Indexed:
    """What is kept of one checkpoint file between reads: never its payload. ``pending``:
    it holds pending requests (a run whose head does is paused; its size counts as a
    ``request``'s)."""

    checkpoint_id: str
    parent: str | None
    workflow: str
    time: str
    file: str
    size: int
    pending: bool


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

    def _index(self, workflow: str | None = None) -> list[_Indexed]:
        """Every readable checkpoint (of ``workflow``), oldest first: one read of each file,
        keeping its lineage fields and whether it holds pending requests only."""
        found = []
        for file in sorted(self._directory.glob("*.json")):
            raw, size = _read(file)
            if not isinstance(raw, dict):
                continue
            name, cid, parent, when = (
                raw.get(key)
                for key in ("workflow_name", "checkpoint_id", "previous_checkpoint_id", "timestamp")
            )
            if not isinstance(name, str) or not isinstance(cid, str) or not cid:
                continue
            if workflow is not None and name != workflow:
                continue
            found.append(
                _Indexed(
                    cid,
                    parent if isinstance(parent, str) else None,
                    name,
                    when if isinstance(when, str) else "",
                    file.name,
                    size,
                    bool(raw.get("pending_request_info_events")),
                )
            )
        return _parents_first(found)

    def runs(self, *, workflow: str | None = None) -> Iterator[RunInfo]:
        """Yield one run per workflow name, in name order, judged as ``verify`` judges it."""
        groups: dict[str, list[_Indexed]] = {}
        for item in self._index(workflow):
            groups.setdefault(item.workflow, []).append(item)
        report = self.verify(workflow) if groups else None
        verdicts = {v.run_id: v for v in report.runs} if report else {}
        for name in sorted(groups):
            items = groups[name]
            verdict = verdicts.get(name)
            head = verdict.head if verdict is not None else items[-1].checkpoint_id
            problems = verdict.problems if verdict is not None else ()
            status: RunState = "unknown"
            held = next((i for i in items if i.checkpoint_id == head), None)
            if held is not None and held.pending:
                status = "paused"
            yield RunInfo(
                run_id=name,
                workflow=name,
                status=status,
                head_id=head,
                created_at=min(i.time for i in items),
                updated_at=max(i.time for i in items),
                record_count=len(items),
                size_bytes=sum(i.size for i in items),
                problem=f"{problems[0]} (and {len(problems) - 1} more)"
                if len(problems) > 1
                else (problems[0] if problems else None),
            )

    def records(self, run_id: str) -> Iterator[Entry]:
        """Yield the workflow's checkpoints, oldest first, each read when it is given.

        Raises:
            RunNotFoundError: no checkpoint of that workflow (at once).
            CheckpointCorruptError: a file changed or went since it was listed (while
                iterating).
        """
        items = self._index(run_id)
        if not items:
            raise RunNotFoundError(run_id)
        return self._entries(items)

    def _entries(self, items: list[_Indexed]) -> Iterator[Entry]:
        for order, item in enumerate(items):
            yield self._entry(item, order)

    def _entry(self, item: _Indexed, order: int) -> Entry:
        raw, size = _read(self._directory / item.file)
        if not isinstance(raw, dict) or raw.get("checkpoint_id") != item.checkpoint_id:
            raise CheckpointCorruptError(item.file, "changed or removed while it was read")
        pending = raw.get("pending_request_info_events")
        requests = sorted(pending) if isinstance(pending, dict) else []
        return Entry(
            entry_id=item.checkpoint_id,
            run_id=item.workflow,
            parent_ids=() if item.parent is None else (item.parent,),
            order=order,
            kind="request" if requests else "checkpoint",
            time=item.time,
            summary={
                "workflow": item.workflow,
                "file": item.file,
                "iteration_count": raw.get("iteration_count"),
                "pending_request_ids": requests,
                "version": raw.get("version"),
            },
            data=opaque(raw),
            size_bytes=size,
        )

    def record(self, entry_id: str) -> Entry:
        """Return the checkpoint ``entry_id``, numbered as in its workflow's :meth:`records`.

        Raises:
            CheckpointNotFoundError: no checkpoint has that id.
        """
        for item in self._index():
            if item.checkpoint_id == entry_id:
                for order, peer in enumerate(self._index(item.workflow)):
                    if peer == item:
                        return self._entry(item, order)
        raise CheckpointNotFoundError(entry_id)

    def sizes(self, run_id: str | None = None) -> Iterator[SizeInfo]:
        """Yield each workflow's bytes: its checkpoint files, by kind.

        Raises:
            RunNotFoundError: ``run_id`` names no workflow.
        """
        groups: dict[str, list[_Indexed]] = {}
        for item in self._index(run_id):
            groups.setdefault(item.workflow, []).append(item)
        if run_id is not None and not groups:
            raise RunNotFoundError(run_id)
        for name in sorted(groups):
            kinds: dict[str, list[int]] = {}
            total = 0
            for item in groups[name]:
                kind = "request" if item.pending else "checkpoint"
                counted = kinds.setdefault(kind, [0, 0])
                counted[0] += 1
                counted[1] += item.size
                total += item.size
            yield SizeInfo(name, total, len(groups[name]), by_kind(kinds))

    def verify(self, run_id: str | None = None) -> LineageReport:
        """Judge each workflow's checkpoints as one lineage, as ``verify-lineage
        --agent-framework`` does (:func:`~wfctl._inspect._af_lineage.verify_agent_framework_dir`):
        a ``*.json`` entry that is not a regular file (a link, a FIFO) is a problem of the
        report, never read.

        Raises:
            RunNotFoundError: ``run_id`` names no workflow.
        """
        import asyncio

        from wfctl._inspect._af_lineage import verify_agent_framework_dir

        report = asyncio.run(verify_agent_framework_dir(self._directory, workflow_name=run_id))
        if run_id is not None and all(v.checkpoints == 0 for v in report.runs):
            raise RunNotFoundError(run_id)
        return report


def _parents_first(items: list[_Indexed]) -> list[_Indexed]:
    """``items`` oldest first (stored time, then id), except that a record never comes before
    its parent (a clock that went back). Records on a cycle of parent links, which have no
    first, come last, oldest first (``verify`` names the cycle)."""
    key = {id(item): (item.time, item.checkpoint_id) for item in items}
    ids = {item.checkpoint_id for item in items}
    children: dict[str, list[_Indexed]] = {}
    ready: list[tuple[tuple[str, str], int, _Indexed]] = []
    for index, item in enumerate(items):
        if item.parent is None or item.parent not in ids or item.parent == item.checkpoint_id:
            heapq.heappush(ready, (key[id(item)], index, item))
        else:
            children.setdefault(item.parent, []).append(item)
    ordered: list[_Indexed] = []
    placed: set[int] = set()
    position = {id(item): index for index, item in enumerate(items)}
    while ready:
        _, _, item = heapq.heappop(ready)
        ordered.append(item)
        placed.add(id(item))
        for child in children.pop(item.checkpoint_id, []):
            heapq.heappush(ready, (key[id(child)], position[id(child)], child))
    rest = [item for item in items if id(item) not in placed]
    return ordered + sorted(rest, key=lambda item: key[id(item)])


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


def opaque(value: Any) -> Any:
    """Return ``value`` with every pickled value replaced by an opaque marker (never unpickled).

    The marker names the type the framework recorded, the pickle's size in bytes and what a
    static scan of its opcodes finds (:func:`~wfctl._sources._pickle.pickle_marker`); a
    ``__pickled__`` text that is not base64 gives ``"bytes": null`` and says so.
    """
    if isinstance(value, dict):
        if _PICKLED in value and _TYPE in value:
            raw = _decoded(value[_PICKLED])
            if raw is None:
                return {
                    "$opaque": "pickle",
                    "type": str(value[_TYPE]),
                    "bytes": None,
                    "scan": {"problem": "not base64"},
                }
            return pickle_marker(raw, str(value[_TYPE]))
        return {key: opaque(item) for key, item in value.items()}
    if isinstance(value, list):
        return [opaque(item) for item in value]
    return value


def _decoded(text: object) -> bytes | None:
    """The bytes a base64 text holds; None if it is not base64."""
    if not isinstance(text, str):
        return None
    try:
        return base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError):
        return None


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
