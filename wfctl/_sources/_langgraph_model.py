"""The model both LangGraph backends share: the rows they give, what verify reads of them,
and the statements a backend answers (:class:`Backend`)."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any, Protocol

__all__ = [
    "Backend",
    "Checkpoint",
    "Link",
    "Listing",
    "Summary",
    "Write",
    "id_step",
    "link",
    "parent_ns",
    "parents_of",
    "signals_of",
]


@dataclass(frozen=True, slots=True)
class Checkpoint:
    """One checkpoint row, its checkpoint decoded (channel values not yet resolved)."""

    thread_id: str
    ns: str
    checkpoint_id: str
    parent_id: str | None
    checkpoint: Any
    metadata: Any
    size: int


@dataclass(frozen=True, slots=True)
class Write:
    """One pending write stored against a checkpoint, its value decoded."""

    task_id: str
    task_path: str
    idx: int
    channel: str
    kind: str | None
    value: Any
    size: int


@dataclass(frozen=True, slots=True)
class Summary:
    """A thread as one aggregate row gives it: checkpoints, namespaces, head, bytes."""

    thread_id: str
    count: int
    subgraphs: int
    head: str | None
    first: str | None
    size: int


@dataclass(frozen=True, slots=True)
class Listing:
    """A thread as ``runs`` lists it, from one statement: its summary, its head (the checkpoint
    outlined: format, time and channel names, values not decoded), its first checkpoint's time,
    and the head's signal writes as (channel, task id): errors, interrupts, resumes."""

    summary: Summary
    head: Checkpoint | None
    first_time: str
    signals: tuple[tuple[str, str], ...]


@dataclass(slots=True)
class Link:
    """What verify reads of one checkpoint: its place in the tree, never its values."""

    ns: str
    checkpoint_id: str
    parent_id: str | None
    source: str | None
    step: int | None
    parents: dict[str, str] = field(default_factory=dict)


class Backend(Protocol):
    """The SQL of one checkpointer: each method one statement (or a stream of rows)."""

    kind: str
    location: str

    def summaries(self, thread_id: str | None = None) -> Iterator[Summary]:
        """One aggregate row per thread (of ``thread_id`` only), in thread order."""
        ...

    def listing(self, thread_id: str | None = None) -> Iterator[Listing]:
        """Each thread (or only ``thread_id``) as ``runs`` lists it, in thread order, from
        one statement."""
        ...

    def checkpoint(self, thread_id: str, ns: str, checkpoint_id: str) -> Checkpoint | None:
        """One checkpoint row."""
        ...

    def namespaces(self, thread_id: str) -> list[tuple[str, str]]:
        """Each subgraph namespace of the thread with its first checkpoint id."""
        ...

    def checkpoints(self, thread_id: str, ns: str) -> Iterator[Checkpoint]:
        """The namespace's checkpoints in id order, streamed."""
        ...

    def writes(self, thread_id: str, ns: str, checkpoint_id: str) -> list[Write]:
        """The writes stored against one checkpoint, by task and index."""
        ...

    def values(self, checkpoint: Checkpoint) -> dict[str, Any]:
        """The checkpoint's channel values, those stored apart (blobs) resolved."""
        ...

    def find(self, prefix: str) -> list[tuple[str, str, str]]:
        """(thread, namespace, id) of the checkpoints whose id starts with ``prefix`` (a few)."""
        ...

    def links(self, thread_id: str) -> Iterator[Link]:
        """Every checkpoint of the thread, its lineage fields only."""
        ...

    def orphan_writes(self, thread_id: str) -> list[tuple[str, str]]:
        """(namespace, id) of writes whose checkpoint does not exist."""
        ...

    def missing_blobs(self, thread_id: str) -> list[tuple[str, str, str, str]]:
        """(namespace, checkpoint, channel, version) a checkpoint names but no blob holds."""
        ...

    def kind_sizes(self, thread_id: str | None) -> Iterator[tuple[str, str, int, int]]:
        """(thread, kind, rows, bytes) per thread and kind (checkpoints, writes, blobs)."""
        ...

    def channel_sizes(self, thread_id: str) -> Iterator[tuple[str, int, int]]:
        """(channel, values, bytes) of the thread's stored values by channel."""
        ...

    def close(self) -> None:
        """Let go of the connection."""
        ...


def id_step(checkpoint_id: str) -> int | None:
    """The step LangGraph put in a checkpoint id (its UUIDv6 clock sequence), None if the id is
    not a UUID."""
    try:
        sequence = uuid.UUID(checkpoint_id).clock_seq
    except ValueError:
        return None
    return sequence - 0x4000 if sequence >= 0x2000 else sequence


def link(ns: str, checkpoint_id: str, parent: str | None, metadata: Any) -> Link:
    """The lineage fields of one checkpoint from its columns and its decoded metadata."""
    known = metadata if isinstance(metadata, dict) else {}
    source, step = known.get("source"), known.get("step")
    return Link(
        ns,
        checkpoint_id,
        parent,
        source if isinstance(source, str) else None,
        step if isinstance(step, int) and not isinstance(step, bool) else None,
        parents_of(known),
    )


def parent_ns(ns: str) -> str:
    """The namespace of the graph that ran the subgraph of namespace ``ns``."""
    return ns.rsplit("|", 1)[0] if "|" in ns else ""


def parents_of(metadata: Any) -> dict[str, str]:
    parents = metadata.get("parents") if isinstance(metadata, dict) else None
    if not isinstance(parents, dict):
        return {}
    return {str(k): v for k, v in parents.items() if isinstance(v, str)}


def signals_of(text: str | None) -> tuple[tuple[str, str], ...]:
    """The head's signal writes from their aggregated text (``channel<TAB>task`` lines)."""
    if not text:
        return ()
    pairs = (line.split("\t", 1) for line in text.split("\n"))
    return tuple((pair[0], pair[1]) for pair in pairs if len(pair) == 2)
