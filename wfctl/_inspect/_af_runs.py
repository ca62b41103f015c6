"""How an agent-framework checkpoint directory splits into runs.

The format records no run: a checkpoint names its workflow and its parent
(``previous_checkpoint_id``) only. A run is one chain of a workflow's checkpoints, so the
checkpoints linked by parents are one run. Functional workflows (those whose state holds a
``_step_cache``) also start chains of their own inside one run, as agent-framework 1.13 to 1.26
writes them: concurrent steps' saves each write a root (the seeds' fork), and a run resumed
with answers alone (``run(responses=...)``) starts a new root. Such a root carries the run on:
it is a functional workflow's root whose step cache holds every entry of the checkpoint written
just before it, for the same input (``_original_message``), when that checkpoint did not end
its run. A new run's first checkpoint holds one step at most, so it holds every entry of the
previous run's last checkpoint only when that run had stopped after the same first step on the
same input (a crash, a retry): then they read as one run.

A functional run's end is provable: the save after the workflow function returned repeats its
predecessor's step cache (every per-step save adds the step it follows) and asks nothing. A
graph workflow's checkpoint with no message in flight and no pending request leaves nothing
to run: its run is over.
"""

from __future__ import annotations

import heapq
import json
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

__all__ = ["CheckpointShape", "RunSplit", "parents_first", "shape_of", "split_runs"]

T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class CheckpointShape:
    """What splitting reads of one checkpoint: its lineage, whether it asks (``pending``),
    whether messages are in flight, and, for a functional workflow, its step cache's keys
    and its input (``original``, as JSON text); ``cache`` is None for a graph workflow."""

    checkpoint_id: str
    parent: str | None
    pending: bool = False
    in_flight: bool = False
    cache: frozenset[str] | None = None
    original: str | None = None


@dataclass(slots=True)
class RunSplit:
    """One run: its id (its first checkpoint's), its checkpoints in the order given, and
    which of them end it (``ends``)."""

    run_id: str
    members: list[CheckpointShape] = field(default_factory=list)
    ends: set[str] = field(default_factory=set)

    @property
    def ended(self) -> bool:
        """Whether the run's newest checkpoint ends it (see the module's rules)."""
        return bool(self.members) and self.members[-1].checkpoint_id in self.ends


def split_runs(ordered: Iterable[CheckpointShape]) -> list[RunSplit]:
    """Split one workflow's checkpoints, given parents first and oldest first, into runs, in
    the order their first checkpoints come."""
    runs: dict[str, RunSplit] = {}
    run_of: dict[str, RunSplit] = {}
    shapes: dict[str, CheckpointShape] = {}
    before: CheckpointShape | None = None
    for shape in ordered:
        parent = shapes.get(shape.parent) if shape.parent is not None else None
        if parent is not None:
            run = run_of[parent.checkpoint_id]
        elif before is not None and _carries_on(before, shape, run_of[before.checkpoint_id]):
            run = run_of[before.checkpoint_id]
        else:
            run = runs.setdefault(shape.checkpoint_id, RunSplit(shape.checkpoint_id))
        previous = before if before is not None and run_of[before.checkpoint_id] is run else None
        if _ends(shape, parent, previous):
            run.ends.add(shape.checkpoint_id)
        run.members.append(shape)
        run_of[shape.checkpoint_id] = run
        shapes.setdefault(shape.checkpoint_id, shape)
        before = shape
    return list(runs.values())


def _carries_on(before: CheckpointShape, root: CheckpointShape, run: RunSplit) -> bool:
    """Whether the functional root ``root`` continues the run of ``before``, the checkpoint
    written just before it."""
    return (
        root.cache is not None
        and before.cache is not None
        and root.original == before.original
        and root.cache >= before.cache
        and before.checkpoint_id not in run.ends
    )


def _ends(
    shape: CheckpointShape, parent: CheckpointShape | None, previous: CheckpointShape | None
) -> bool:
    """Whether ``shape`` is its run's last save. A graph workflow's: nothing in flight, nothing
    asked. A functional workflow's: it asks nothing and repeats the step cache of the checkpoint
    saved before it in its run (each per-step save's snapshot, taken as its step completes,
    adds that step), of its parent (a save that ran after the workflow returned), or of the
    paused checkpoint whose answers it follows (a root: the framework starts a new chain)."""
    if shape.cache is None:
        return not shape.in_flight and not shape.pending
    if shape.pending:
        return False
    if parent is not None and shape.cache == parent.cache:
        return True
    if previous is None or shape.cache != previous.cache:
        return False
    return shape.parent is not None or previous.pending


def shape_of(raw: dict[str, Any], checkpoint_id: str, parent: str | None) -> CheckpointShape:
    """What splitting reads of one checkpoint's JSON (nothing is decoded: the step cache's
    keys are plain text, its values are not read)."""
    state = raw.get("state")
    cache = state.get("_step_cache") if isinstance(state, dict) else None
    messages = raw.get("messages")
    in_flight = isinstance(messages, dict) and any(messages.values())
    functional = isinstance(cache, dict)
    return CheckpointShape(
        checkpoint_id,
        parent,
        pending=bool(raw.get("pending_request_info_events")),
        in_flight=in_flight,
        cache=frozenset(cache) if isinstance(cache, dict) else None,
        original=json.dumps(state.get("_original_message"), sort_keys=True, default=str)
        if functional and isinstance(state, dict)
        else None,
    )


def parents_first(
    items: Sequence[T],
    identity: Callable[[T], tuple[str, str | None]],
    key: Callable[[T], Any],
) -> list[T]:
    """``items`` in ``key`` order (oldest first), except that a record never comes before its
    parent (a clock that went back). ``identity`` gives an item's id and parent. Records on a
    cycle of parent links, which have no first, come last, in ``key`` order."""
    ids = {identity(item)[0] for item in items}
    children: dict[str, list[int]] = {}
    ready: list[tuple[Any, int]] = []
    for index, item in enumerate(items):
        cid, parent = identity(item)
        if parent is None or parent not in ids or parent == cid:
            heapq.heappush(ready, (key(item), index))
        else:
            children.setdefault(parent, []).append(index)
    ordered: list[T] = []
    placed: set[int] = set()
    while ready:
        _, index = heapq.heappop(ready)
        ordered.append(items[index])
        placed.add(index)
        for child in children.pop(identity(items[index])[0], []):
            heapq.heappush(ready, (key(items[child]), child))
    rest = [index for index in range(len(items)) if index not in placed]
    return ordered + [items[index] for index in sorted(rest, key=lambda i: key(items[i]))]
