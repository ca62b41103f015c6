"""DBOS's integrity rules, judged per run: the root workflow and the children nested in it.

Per workflow: a finished one's steps are numbered 1..N without a gap (an unfinished one's
step in flight has no row yet while a later one may: a ``DBOS.recv`` with a timeout writes its
``DBOS.sleep`` first: a note); a step that starts a child names a
workflow in the store whose ``parent_workflow_id`` is this workflow (or, for a step a fork
copied, the workflow it was forked from); ``forked_from`` names a workflow in the store marked
``was_forked_from``, and one marked so has a fork; every ``DBOS.recv`` that returned a message
has the notification it consumed; every ``DBOS.setEvent`` its ``workflow_events_history`` row;
a finished workflow (SUCCESS, ERROR) its ``workflow_output`` row; every stored value decodes.
A fork copies the steps before its start with their original times: a copied step that
started before the fork was created is legitimate.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from wfctl._inspect._lineage import RunVerdict, listed

from ._dbos_model import Workflow, decode_value, is_none

if TYPE_CHECKING:
    from ._dbos_sql import DbosStatements
    from ._protocol import RunInfo

__all__ = ["verify_run"]

_FINISHED = frozenset({"SUCCESS", "ERROR"})


def verify_run(backend: DbosStatements, info: RunInfo) -> RunVerdict:
    """The verdict on one run: its problem as listed, and each of its workflows' rules."""
    found: list[str] = [] if info.problem is None else [f"workflow {info.run_id}: {info.problem}"]
    notes: list[str] = []
    count = 0
    pending = [info.run_id]
    seen = {info.run_id}
    while pending:
        row = backend.workflow(pending.pop(0))
        if row is None:
            continue
        flow = Workflow.of(row)
        steps = list(backend.steps(flow.workflow_id))
        count += len(steps)
        found.extend(_workflow(backend, flow, steps, notes))
        for step in steps:
            child, nested = step[4], step[14]
            if child is not None and nested and str(child) not in seen:
                seen.add(str(child))
                pending.append(str(child))
    return RunVerdict(info.run_id, info.workflow, count, info.head_id, tuple(found), tuple(notes))


def _workflow(
    backend: DbosStatements, flow: Workflow, steps: list[Any], notes: list[str]
) -> list[str]:
    """The problems of one workflow (its notes added to ``notes``)."""
    name = f"workflow {flow.workflow_id}"
    found: list[str] = []
    ids = [int(step[0]) for step in steps]
    gaps = sorted(set(range(1, max(ids) + 1)) - set(ids)) if ids else []
    if gaps and flow.status in _FINISHED:
        found.append(f"{name}: no step {listed([str(g) for g in gaps])} (steps are 1..N)")
    elif gaps:
        notes.append(
            f"{name}: no step {listed([str(g) for g in gaps])} yet ({flow.status}: in flight"
            " when the store was read)"
        )
    for step in steps:
        found.extend(_step(backend, flow, step))
    has_output, forked_into = backend.facts(flow.workflow_id)
    if flow.status in _FINISHED and not has_output:
        found.append(f"{name}: {flow.status} but it has no workflow_output row")
    if flow.forked_from:
        origin = backend.workflow(flow.forked_from)
        if origin is None:
            found.append(f"{name}: forked from {flow.forked_from}, which is not in the store")
        elif not Workflow.of(origin).was_forked_from:
            found.append(
                f"{name}: forked from {flow.forked_from}, which is not marked was_forked_from"
            )
    if flow.was_forked_from and not forked_into:
        found.append(f"{name}: marked was_forked_from, but no workflow is forked from it")
    return found


def _step(backend: DbosStatements, flow: Workflow, step: Any) -> list[str]:
    fid, fname, output, error, child, _, _, serialization = step[:8]
    message, key = step[9], step[11]
    where = f"workflow {flow.workflow_id} step {fid} ({fname})"
    found: list[str] = []
    for label, text in (("output", output), ("error", error)):
        _, problem = decode_value(text, serialization)
        if problem:
            found.append(f"{where}: {label}: {problem}")
    if child is not None and not str(fname).startswith("DBOS."):
        row = backend.workflow(str(child))
        if row is None:
            found.append(f"{where}: its child workflow {child} is not in the store")
        else:
            parent = Workflow.of(row).parent
            if parent not in (flow.workflow_id, flow.forked_from):
                found.append(
                    f"{where}: its child workflow {child} names {parent or 'no'} parent, "
                    f"not {flow.workflow_id}"
                )
    if fname == "DBOS.recv" and message is None and output is not None:
        value, _ = decode_value(output, serialization)
        if not is_none(value):
            found.append(f"{where}: received a message, but no notification it consumed")
    if fname == "DBOS.setEvent" and key is None:
        found.append(f"{where}: set an event, but has no workflow_events_history row")
    return found
