"""LangGraph's checkpointers (SQLite and PostgreSQL) as a read-only source.

One LangGraph thread is a run; its checkpoints are the entries, each with its
``parent_checkpoint_id`` as parent, so an ``update_state`` or a replay forks the tree. A
subgraph's checkpoints (namespace ``sub:<task id>``) come after the checkpoint of the parent
namespace that ran them (``metadata.parents``), their first one a child of it. The writes
stored against a checkpoint (what the tasks run from it wrote, interrupts, resumes, errors,
the functional API's task results) belong to its entry.

Values are decoded by :mod:`._msgpack`: descriptions of what an extension names, never the
object; a pickle is never unpickled. The backends (:mod:`._langgraph_sql`) read with
read-only connections and stream rows; this module holds what both share.

A thread's state, in wfctl's words: ``failed`` when its head has an ``__error__`` write,
``paused`` when its head has an ``__interrupt__`` no ``__resume__`` answers, ``completed`` when
its head was written by the loop (metadata ``source`` ``loop``) and schedules no task (no
``branch:to:*``, ``__start__`` or ``__pregel_tasks`` value), else ``unknown`` (a head written
by ``update_state``, new input not yet run, or a run stopped between steps: the store does
not say which).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Iterator, Sequence
from typing import TYPE_CHECKING, Any

from wfctl._errors import CheckpointNotFoundError, RunNotFoundError, WfctlError

from ._langgraph_model import (
    Backend,
    Checkpoint,
    Listing,
    Summary,
    Write,
    id_step,
    parent_ns,
    parents_of,
)
from ._msgpack import UNDECODABLE, problems_in
from ._protocol import ClosingSource, Entry, KindSize, RunInfo, RunState, SizeInfo, by_kind

if TYPE_CHECKING:
    from wfctl._inspect._lineage import LineageReport

__all__ = ["NEWEST_FORMAT", "LangGraphSource", "format_problem"]

#: The newest checkpoint format (``v``) this reader knows.
NEWEST_FORMAT = 4
_ERROR, _INTERRUPT, _RESUME, _RETURN = "__error__", "__interrupt__", "__resume__", "__return__"
_NULL_TASK = "00000000-0000-0000-0000-000000000000"
_FORKS = frozenset({"update", "fork", "input"})
#: How many candidates an ambiguous id prefix names.
_CANDIDATES = 5


def format_problem(checkpoint: Any) -> str | None:
    """What makes a decoded checkpoint unreadable or untrusted, if anything."""
    if isinstance(checkpoint, dict) and UNDECODABLE in checkpoint:
        return f"checkpoint cannot be decoded: {checkpoint.get('problem')}"
    if isinstance(checkpoint, dict) and "$opaque" in checkpoint:
        return None  # a pickle is shown opaque, not judged
    if not isinstance(checkpoint, dict):
        return "checkpoint is not a map"
    version = checkpoint.get("v")
    if isinstance(version, int) and version > NEWEST_FORMAT:
        return (
            f"checkpoint format v{version} is newer than wfctl reads (up to v{NEWEST_FORMAT}): "
            "shown as stored, it may be misread"
        )
    return None


class LangGraphSource(ClosingSource):
    """A LangGraph checkpoint database (through its :class:`Backend`) as a :class:`Source`."""

    def __init__(self, backend: Backend) -> None:
        self._backend = backend

    @property
    def kind(self) -> str:
        """``langgraph-sqlite`` or ``langgraph-postgresql``."""
        return self._backend.kind

    @property
    def location(self) -> str:
        """The file, or the URL with its password hidden."""
        return self._backend.location

    def close(self) -> None:
        """Close the connection."""
        self._backend.close()

    def runs(self, *, workflow: str | None = None) -> Iterator[RunInfo]:
        """Yield one run per thread, in thread order, from one statement (each thread's
        aggregate, its head outlined and its first checkpoint's time), streamed."""
        for listed in self._backend.listing():
            info = _run_info(listed)
            if workflow is None or info.workflow == workflow:
                yield info

    def run_info(self, run_id: str) -> RunInfo:
        """Return one thread as :meth:`runs` lists it, from the listing's statement over that
        thread's rows only.

        Raises:
            RunNotFoundError: no checkpoint of that thread.
        """
        for listed in self._backend.listing(run_id):
            return _run_info(listed)
        raise RunNotFoundError(run_id)

    def records(self, run_id: str) -> Iterator[Entry]:
        """Yield the thread's checkpoints as a tree, streamed (module docstring).

        Raises:
            RunNotFoundError: no checkpoint of that thread (at once).
        """
        if next(self._backend.summaries(run_id), None) is None:
            raise RunNotFoundError(run_id)
        return self._entries(run_id)

    def _entries(self, thread: str) -> Iterator[Entry]:
        spawned: dict[tuple[str, str], list[str]] = {}
        for ns, first in self._backend.namespaces(thread):
            row = self._backend.checkpoint(thread, ns, first)
            parents = parents_of(row.metadata) if row is not None else {}
            key = (parent_ns(ns), parents.get(parent_ns(ns), ""))
            spawned.setdefault(key, []).append(ns)
        placed: set[str] = set()
        order = 0
        for entry in self._namespace(thread, "", spawned, placed, None):
            yield _numbered(entry, order)
            order += 1
        for key in sorted(spawned):  # namespaces whose spawning checkpoint is missing
            for ns in spawned[key]:
                if ns not in placed:
                    for entry in self._namespace(thread, ns, spawned, placed, None):
                        yield _numbered(entry, order)
                        order += 1

    def _namespace(
        self,
        thread: str,
        ns: str,
        spawned: dict[tuple[str, str], list[str]],
        placed: set[str],
        spawner: str | None,
    ) -> Iterator[Entry]:
        placed.add(ns)
        for row in self._backend.checkpoints(thread, ns):
            parent = row.parent_id or (spawner if ns else None)
            yield self._entry(row, parent)
            for child in spawned.get((ns, row.checkpoint_id), ()):
                if child not in placed:
                    yield from self._namespace(thread, child, spawned, placed, row.checkpoint_id)

    def _entry(self, row: Checkpoint, parent: str | None) -> Entry:
        writes = self._backend.writes(row.thread_id, row.ns, row.checkpoint_id)
        checkpoint = row.checkpoint
        problem = format_problem(checkpoint)
        problems = [] if problem is None else [problem]
        if _decoded(checkpoint):
            checkpoint = {**checkpoint, "channel_values": self._backend.values(row)}
            problems += problems_in(checkpoint, "$.checkpoint")
        metadata = row.metadata if isinstance(row.metadata, dict) else {}
        pending = [_write_document(w) for w in writes]
        problems += problems_in(row.metadata, "$.metadata") + problems_in(pending, "$.writes")
        data = {
            "thread_id": row.thread_id,
            "checkpoint_ns": row.ns,
            "checkpoint": checkpoint,
            "metadata": row.metadata,
            "pending_writes": pending,
        }
        return Entry(
            entry_id=row.checkpoint_id,
            run_id=row.thread_id,
            parent_ids=() if parent is None else (parent,),
            order=0,
            kind=str(metadata.get("source", "checkpoint")),
            time=_time(row),
            summary=_summary(row, metadata, writes, problems),
            data=data,
            size_bytes=row.size + sum(w.size for w in writes),
        )

    def child_counts(self, run_id: str) -> tuple[dict[str, int], int]:
        """How many children each checkpoint of the thread has in :meth:`records` (a subgraph's
        first checkpoint a child of the one that ran it), and how many checkpoints there are,
        from their lineage fields alone (nothing decoded but metadata).

        Raises:
            RunNotFoundError: no checkpoint of that thread.
        """
        children: dict[str, int] = {}
        total = 0
        for item in self._backend.links(run_id):
            total += 1
            parent = item.parent_id or (item.parents.get(parent_ns(item.ns)) if item.ns else None)
            if parent is not None:
                children[parent] = children.get(parent, 0) + 1
        if not total:
            raise RunNotFoundError(run_id)
        return children, total

    def record(self, entry_id: str) -> Entry:
        """Return the checkpoint whose id is ``entry_id`` or starts with it, numbered as in its
        thread's :meth:`records`.

        Raises:
            CheckpointNotFoundError: no checkpoint has that id.
            WfctlError: several checkpoints start with it (some named).
        """
        found = self._backend.find(entry_id)
        exact = [f for f in found if f[2] == entry_id]
        if len(exact) == 1 or (exact and len({f[0] for f in exact}) == 1):
            found = exact[:1]
        if not found:
            raise CheckpointNotFoundError(entry_id)
        if len(found) > 1:
            names = ", ".join(f"{cid} (thread {thread})" for thread, _, cid in found[:_CANDIDATES])
            more = " and more" if len(found) > _CANDIDATES else ""
            raise WfctlError(
                f"checkpoint id {entry_id!r} is ambiguous: {names}{more}; give more of it"
            )
        thread, _, checkpoint_id = found[0]
        for entry in self._entries(thread):
            if entry.entry_id == checkpoint_id:
                return entry
        raise CheckpointNotFoundError(entry_id)

    def sizes(self, run_id: str | None = None) -> Iterator[SizeInfo]:
        """Yield each thread's bytes: checkpoints, writes and blobs (``by_kind``; only
        checkpoints are records, writes and blobs count bytes), and by channel (``by_channel``,
        largest first: values stored inline or as blobs, and writes, with how many).

        Raises:
            RunNotFoundError: ``run_id`` names no thread.
        """
        if run_id is not None and next(self._backend.summaries(run_id), None) is None:
            raise RunNotFoundError(run_id)
        thread: str | None = None
        kinds: dict[str, list[int]] = {}
        for name, kind, rows, size in self._backend.kind_sizes(run_id):
            if thread is not None and name != thread:
                yield self._size(thread, kinds)
                kinds = {}
            thread = name
            # writes and blobs are stored against checkpoints, not records of their own: their
            # kinds count bytes, and no record (the suite's by_kind partitions the records)
            kinds[kind] = [rows if kind == "checkpoints" else 0, size]
        if thread is not None:
            yield self._size(thread, kinds)

    def _size(self, thread: str, kinds: dict[str, list[int]]) -> SizeInfo:
        channels = sorted(
            (KindSize(c, n, b) for c, n, b in self._backend.channel_sizes(thread)),
            key=lambda k: (-k.size_bytes, k.kind),
        )
        return SizeInfo(
            run_id=thread,
            size_bytes=sum(size for _, size in kinds.values()),
            record_count=kinds.get("checkpoints", [0, 0])[0],
            by_kind=by_kind(kinds),
            by_channel=tuple(channels),
        )

    def verify(self, run_id: str | None = None) -> LineageReport:
        """Judge each thread by LangGraph's own lineage rules (see :mod:`._langgraph_verify`).

        Raises:
            RunNotFoundError: ``run_id`` names no thread.
        """
        from wfctl._inspect._lineage import LineageReport

        from ._langgraph_verify import verify_thread

        verdicts = []
        for summary in self._backend.summaries(run_id):
            head = (
                None
                if summary.head is None
                else self._backend.checkpoint(summary.thread_id, "", summary.head)
            )
            verdicts.append(
                verify_thread(self._backend, summary, _workflow(head), self._decoding(summary))
            )
        if run_id is not None and not verdicts:
            raise RunNotFoundError(run_id)
        return LineageReport(tuple(verdicts))

    def _decoding(self, summary: Summary) -> list[str]:
        """What cannot be decoded in the thread's checkpoints and writes, each named."""
        found: list[str] = []
        for entry in self._entries(summary.thread_id):
            for problem in entry.summary.get("problems", ()):
                found.append(f"checkpoint {entry.entry_id}: {problem}")
        return found


def _run_info(listed: Listing) -> RunInfo:
    summary, head = listed.summary, listed.head
    problem = None if head is None else format_problem(head.checkpoint)
    status: RunState = "unknown"
    if head is None:
        problem = "no checkpoint in the root namespace"
    elif _opaque(head.checkpoint):  # a pickle: its writes still say failed or paused
        status = _status(head, listed.signals)
        problem = (
            f"the head checkpoint is stored as {head.checkpoint['$opaque']} "
            "(never unpickled): its values are not shown"
        )
    elif not _decoded(head.checkpoint):
        status = "unreadable"
    else:
        status = _status(head, listed.signals)
    return RunInfo(
        run_id=summary.thread_id,
        workflow=_workflow(head),
        status=status,
        head_id=summary.head,
        created_at=listed.first_time,
        updated_at=_time(head),
        record_count=summary.count,
        size_bytes=summary.size,
        problem=problem,
    )


def _numbered(entry: Entry, order: int) -> Entry:
    return dataclasses.replace(entry, order=order)


def _opaque(checkpoint: Any) -> bool:
    """Whether a checkpoint is stored in a form wfctl does not decode (a pickle)."""
    return isinstance(checkpoint, dict) and "$opaque" in checkpoint


def _decoded(checkpoint: Any) -> bool:
    """Whether a checkpoint was decoded into its map (not opaque, not undecodable)."""
    return (
        isinstance(checkpoint, dict)
        and UNDECODABLE not in checkpoint
        and ("$opaque" not in checkpoint)
    )


def _time(row: Checkpoint | None) -> str:
    if row is None or not isinstance(row.checkpoint, dict):
        return ""
    ts = row.checkpoint.get("ts")
    return ts if isinstance(ts, str) else ""


def _workflow(head: Checkpoint | None) -> str:
    """What LangGraph records of the graph: ``graph_id`` (set by its server), else nothing."""
    metadata = head.metadata if head is not None else None
    if isinstance(metadata, dict):
        for key in ("graph_id", "assistant_id"):
            if isinstance(metadata.get(key), str):
                return str(metadata[key])
    return ""


def _status(head: Checkpoint, signals: Sequence[tuple[str, str]]) -> RunState:
    """The thread's state from its head and the head's signal writes, (channel, task id)
    (module docstring)."""
    if any(channel == _ERROR for channel, _ in signals):
        return "failed"
    answered = {task for channel, task in signals if channel == _RESUME}
    if any(
        channel == _INTERRUPT and task not in answered and _NULL_TASK not in answered
        for channel, task in signals
    ):
        return "paused"
    metadata = head.metadata if isinstance(head.metadata, dict) else {}
    checkpoint = head.checkpoint if isinstance(head.checkpoint, dict) else {}
    values = checkpoint.get("channel_values")
    if (
        metadata.get("source") == "loop"
        and isinstance(values, dict)
        and not any(_schedules(channel) for channel in values)
    ):
        return "completed"
    return "unknown"


def _schedules(channel: str) -> bool:
    return channel.startswith("branch:to:") or channel in ("__start__", "__pregel_tasks")


def _node(task_path: str) -> str:
    """The node a task path names: ``~__pregel_pull, add`` -> ``add``; a functional API call
    ``~__pregel_push, ~__pregel_pull, doubles, 0000000000, ...`` -> ``doubles[0]``."""
    parts = [p.strip() for p in task_path.split(",") if p.strip()]
    if not parts:
        return ""
    if parts[0] == "~__pregel_pull" and len(parts) >= 2:
        return parts[1]
    if parts[0] == "~__pregel_push" and len(parts) >= 3 and parts[1] == "~__pregel_pull":
        index = parts[3].lstrip("0") or "0" if len(parts) > 3 else "?"
        return f"{parts[2]}[{index}]"
    return ", ".join(parts)


def _summary(
    row: Checkpoint, metadata: dict[str, Any], writes: Sequence[Write], problems: list[str]
) -> dict[str, Any]:
    """What a listing shows of a checkpoint: its step and source, the nodes that ran from it
    (their writes are stored against it), interrupts and resumes with their values, errors,
    the functional API's task results, and what could not be decoded."""
    nodes: list[str] = []
    for write in writes:
        name = _node(write.task_path)
        if name and write.channel != _RETURN and write.task_id != _NULL_TASK and name not in nodes:
            nodes.append(name)
    step = metadata.get("step")
    return {
        "thread_id": row.thread_id,
        "checkpoint_ns": row.ns,
        "step": step if isinstance(step, int) else id_step(row.checkpoint_id),
        "source": metadata.get("source"),
        "nodes": nodes,
        "interrupts": _flat(_interrupt(w.value) for w in writes if w.channel == _INTERRUPT),
        "resumes": _flat(
            w.value for w in writes if w.channel == _RESUME and w.task_id != _NULL_TASK
        ),
        "errors": [w.value for w in writes if w.channel == _ERROR],
        "tasks": [
            {"task": _node(w.task_path), "result": w.value} for w in writes if w.channel == _RETURN
        ],
        "problems": problems,
    }


def _flat(values: Iterable[Any]) -> list[Any]:
    """Values stored as lists (LangGraph's interrupts and resumes of one task) one by one."""
    flat: list[Any] = []
    for value in values:
        flat.extend(value if isinstance(value, list) else [value])
    return flat


def _interrupt(value: Any) -> Any:
    """An interrupt's value (LangGraph stores a list of ``Interrupt`` descriptions)."""
    if isinstance(value, list):
        return [_interrupt(item) for item in value]
    if isinstance(value, dict) and str(value.get("$type", "")).endswith(".Interrupt"):
        args = value.get("$args")
        if isinstance(args, dict) and "value" in args:
            return args["value"]
    return value


def _write_document(write: Write) -> dict[str, Any]:
    return {
        "task_id": write.task_id,
        "task_path": write.task_path,
        "idx": write.idx,
        "channel": write.channel,
        "type": write.kind,
        "value": write.value,
    }
