"""Which checkpoints of a LangGraph thread a prune keeps: decided from facts read of its rows.

LangGraph loads a thread's state from its newest root checkpoint (``get_tuple`` without an id
takes the largest ``checkpoint_id``). What that load reads is kept, per namespace:

- the namespace's head (its largest id); a subgraph call's namespace (``name:<task id>``) only
  while the root head is the checkpoint the call started from (``metadata.parents[""]``), as
  LangGraph's own ``prune`` does; a ``checkpointer=True`` subgraph's namespace (no ``:``) keeps
  its head always;
- the head's parent when the head predates checkpoint format 4 (its pending sends live there);
- for every DeltaChannel the namespace uses, each ancestor the head's value is rebuilt from: the
  walk LangGraph makes by ``parent_checkpoint_id`` from the head's parent back to the first
  checkpoint that holds a value for the channel (its snapshot), or to the root.

A thread whose walk meets a missing parent or a loop cannot be proven: it is declined.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

__all__ = ["Facts", "Kept", "UnprovenThreadError", "kept_checkpoints"]


class UnprovenThreadError(Exception):
    """Raised when what a thread's head needs cannot be proven from its rows; ``reason`` says
    why. The thread is then left as it is (never a wfctl error: the other threads go on)."""

    def __init__(self, reason: str) -> None:
        self.reason = reason
        super().__init__(reason)


@dataclass(frozen=True, slots=True)
class Facts:
    """What the keep decision reads of one checkpoint row.

    ``seeds`` are the channels the checkpoint holds a value for (where a DeltaChannel walk
    stops); ``delta`` the channels it names as DeltaChannels; ``root`` its
    ``metadata.parents[""]``; ``version`` its checkpoint format ``v``.
    """

    parent: str | None
    seeds: frozenset[str]
    delta: frozenset[str]
    root: str | None
    version: int


@dataclass(frozen=True, slots=True)
class Kept:
    """Per namespace: the ids kept (empty: the whole namespace goes), and the kept ids whose
    parent goes (their ``parent_checkpoint_id`` becomes NULL)."""

    kept: Mapping[str, frozenset[str]]
    orphans: Mapping[str, frozenset[str]]


def kept_checkpoints(namespaces: Mapping[str, Mapping[str, Facts]]) -> Kept:
    """Decide what a prune keeps of one thread, given ``namespace -> id -> facts``.

    Raises:
        UnprovenThreadError: the thread has no root namespace, or a DeltaChannel walk meets a
            missing parent or a loop.
    """
    if not namespaces.get(""):
        raise UnprovenThreadError("it has no checkpoint in the root namespace")
    root_head = max(namespaces[""])
    kept: dict[str, frozenset[str]] = {}
    orphans: dict[str, frozenset[str]] = {}
    for ns, rows in namespaces.items():
        head = max(rows)
        if ns and ":" in ns and rows[head].root != root_head:
            kept[ns] = frozenset()
            orphans[ns] = frozenset()
            continue
        ids = {head}
        parent = rows[head].parent
        if rows[head].version < 4 and parent is not None and parent in rows:
            ids.add(parent)
        # a namespace's DeltaChannels are its own graph's: a subgraph's state is not its parent's
        delta = frozenset().union(*(facts.delta for facts in rows.values()))
        for channel in sorted(delta):
            if channel not in rows[head].seeds:
                ids.update(_delta_chain(ns, rows, head, channel))
        kept[ns] = frozenset(ids)
        orphans[ns] = frozenset(i for i in ids if rows[i].parent not in (None, *ids))
    return Kept(kept, orphans)


def _delta_chain(ns: str, rows: Mapping[str, Facts], head: str, channel: str) -> list[str]:
    """The ancestors of ``head`` a DeltaChannel's value is rebuilt from, nearest first."""
    chain: list[str] = []
    current = rows[head].parent
    while current is not None:
        if current not in rows:
            raise UnprovenThreadError(
                f"the DeltaChannel {channel!r} of namespace {ns!r} is rebuilt from checkpoint "
                f"{current}, which is missing"
            )
        if current in chain:
            raise UnprovenThreadError(f"the parents of namespace {ns!r} loop at {current}")
        chain.append(current)
        if channel in rows[current].seeds:
            break
        current = rows[current].parent
    return chain
