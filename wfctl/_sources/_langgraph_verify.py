"""LangGraph's lineage rules, judged per thread and namespace (``verify-lineage``).

Per namespace: exactly one root; every parent exists; no cycle; a child's step is its
parent's plus one (a ``fork`` copy excepted) and every id carries its step (LangGraph's ids
are UUIDv6 whose clock sequence is the step). Per thread: the head (the newest root-namespace
checkpoint, the one LangGraph resumes) has no child; a subgraph's first checkpoint names a
parent checkpoint that exists; every write's checkpoint exists; every blob version a
checkpoint names exists (PostgreSQL); every stored value decodes. A checkpoint with several
children is a legitimate fork when at most one child was written by the loop
(``update_state`` writes ``update``, a replay ``fork``, new input ``input``); two ``loop``
children (two runs of one thread at once, or corruption) break the lineage.
"""

from __future__ import annotations

from collections import defaultdict
from typing import TYPE_CHECKING

from wfctl._inspect._lineage import RunVerdict, listed

from ._langgraph_model import Link, id_step, parent_ns

if TYPE_CHECKING:
    from ._langgraph_model import Backend, Summary

__all__ = ["verify_thread"]


def verify_thread(
    backend: Backend, summary: Summary, workflow: str, problems: list[str]
) -> RunVerdict:
    """The verdict on one thread: ``problems`` (values that do not decode) and its lineage's."""
    thread = summary.thread_id
    found = list(problems)
    namespaces: dict[str, list[Link]] = defaultdict(list)
    for item in backend.links(thread):
        namespaces[item.ns].append(item)
    if "" not in namespaces:
        found.append(f"thread {thread}: no checkpoint in the root namespace")
    for ns in sorted(namespaces):
        found.extend(_namespace(thread, ns, namespaces[ns]))
        if ns:
            found.extend(_spawner(thread, ns, namespaces))
    if summary.head is not None:
        children = [i.checkpoint_id for i in namespaces[""] if i.parent_id == summary.head]
        if children:
            found.append(
                f"thread {thread}: the head {summary.head} has children: {listed(children)}"
            )
    for ns, cid in backend.orphan_writes(thread):
        found.append(
            f"thread {thread}{_in(ns)}: writes stored against checkpoint {cid}, which does not exist"
        )
    for ns, cid, channel, version in backend.missing_blobs(thread):
        found.append(
            f"thread {thread}{_in(ns)}: checkpoint {cid} names {channel} version {version},"
            " which no blob holds"
        )
    return RunVerdict(thread, workflow, summary.count, summary.head, tuple(found))


def _in(ns: str) -> str:
    return f" namespace {ns}" if ns else ""


def _namespace(thread: str, ns: str, items: list[Link]) -> list[str]:
    where = f"thread {thread}{_in(ns)}"
    found: list[str] = []
    by_id = {item.checkpoint_id: item for item in items}
    roots = [item.checkpoint_id for item in items if item.parent_id is None]
    if len(roots) != 1:
        found.append(f"{where}: {len(roots)} roots (exactly one expected): {listed(roots)}")
    children: dict[str, list[Link]] = defaultdict(list)
    for item in items:
        marked = id_step(item.checkpoint_id)
        if item.step is not None and marked is not None and marked != item.step:
            found.append(
                f"{where}: checkpoint {item.checkpoint_id} is step {item.step} but its id"
                f" says step {marked}"
            )
        if item.parent_id is None:
            continue
        parent = by_id.get(item.parent_id)
        if parent is None:
            found.append(
                f"{where}: checkpoint {item.checkpoint_id}: parent {item.parent_id} is missing"
            )
            continue
        children[item.parent_id].append(item)
        if (
            item.source != "fork"
            and item.step is not None
            and parent.step is not None
            and item.step != parent.step + 1
        ):
            found.append(
                f"{where}: checkpoint {item.checkpoint_id} is step {item.step} after its parent"
                f" {parent.checkpoint_id} at step {parent.step} (expected {parent.step + 1})"
            )
    for parent_id, kids in children.items():
        loops = sorted(k.checkpoint_id for k in kids if k.source == "loop")
        if len(loops) > 1:
            found.append(
                f"{where}: checkpoint {parent_id} has {len(loops)} loop children "
                f"({listed(loops)}): two runs of the thread at once, or corruption"
            )
    found.extend(_cycles(where, by_id))
    return found


def _cycles(where: str, by_id: dict[str, Link]) -> list[str]:
    """Each cycle of parent links, named once by its smallest id."""
    state: dict[str, int] = {}
    found: list[str] = []
    for start in sorted(by_id):
        path: list[str] = []
        current: str | None = start
        while current is not None and current in by_id and state.get(current, 0) == 0:
            state[current] = 1
            path.append(current)
            current = by_id[current].parent_id
        if current is not None and state.get(current) == 1 and current in path:
            ring = path[path.index(current) :]
            found.append(f"{where}: a cycle of parent links: {listed(sorted(ring))}")
        for item in path:
            state[item] = 2
    return found


def _spawner(thread: str, ns: str, namespaces: dict[str, list[Link]]) -> list[str]:
    """A subgraph namespace's first checkpoint names a parent checkpoint that exists."""
    first = min(namespaces[ns], key=lambda item: item.checkpoint_id)
    above = parent_ns(ns)
    spawner = first.parents.get(above)
    if spawner is None:
        return [f"thread {thread}{_in(ns)}: its first checkpoint names no parent checkpoint"]
    if all(item.checkpoint_id != spawner for item in namespaces.get(above, ())):
        return [
            f"thread {thread}{_in(ns)}: its parent checkpoint {spawner}{_in(above)} does not exist"
        ]
    return []
