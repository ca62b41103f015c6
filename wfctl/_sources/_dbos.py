"""DBOS's system database (SQLite or PostgreSQL, dbos 3.x) as a read-only source.

A run is a *root* workflow: one no step of a parent starts (a child whose parent row or
starting step is missing is a root too, its problem named). Its entries are its steps
(``operation_outputs``) in ``function_id`` order, ids ``WORKFLOW.FUNCTION_ID``, each the child of
the step before it; a child workflow's steps follow the step that started it, the first one a
child of that step, so ``log`` shows them indented under it. DBOS's own operations are steps
too, named ``DBOS.recv`` (with the notification it consumed), ``DBOS.setEvent`` (with the event
history row it wrote), ``DBOS.sleep``, ``DBOS.getResult`` and so on. A workflow that ended with
a result (its ``workflow_output`` row: an output, or an error) has a last entry
``WORKFLOW.result`` (kind ``output`` or ``error``), after its last step.

Values are decoded by their ``serialization``: ``portable_json`` as JSON; ``py_pickle`` (and
NULL, DBOS's default serializer) never unpickled, given as the marker of
:func:`~._pickle.pickle_marker` (its size and what a static scan of its opcodes finds); any
other name is not decoded and is named as a problem.

Statuses, in wfctl's words: SUCCESS ``completed``, ERROR ``failed``, CANCELLED ``cancelled``,
ENQUEUED and DELAYED ``queued``, MAX_RECOVERY_ATTEMPTS_EXCEEDED ``interrupted`` (DBOS stopped
recovering it; nothing to answer), PENDING ``unknown``: DBOS records no heartbeat, so a
workflow whose process is executing it and one whose process died (to be recovered) look the
same in the store. DBOS's own status is in the run's ``details``.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Any, NamedTuple

from wfctl._errors import CheckpointNotFoundError, RunNotFoundError

from ._dbos_model import NEWEST_MIGRATION, STATUSES, Workflow, decode_value, epoch_ms
from ._dbos_sql import DbosStatements
from ._protocol import ClosingSource, Entry, RunInfo, SizeInfo, by_kind

if TYPE_CHECKING:
    from wfctl._inspect._lineage import LineageReport

__all__ = ["RESULT", "DbosSource", "Result"]

#: The entry id's suffix of a workflow's own result (``WORKFLOW.result``).
RESULT = "result"


class DbosSource(ClosingSource):
    """A DBOS system database (through its backend) as a :class:`Source`."""

    def __init__(self, backend: DbosStatements) -> None:
        self._backend = backend
        try:
            self._migration = backend.migration()
        except BaseException:
            backend.close()
            raise

    @property
    def kind(self) -> str:
        """``dbos-sqlite`` or ``dbos-postgresql``."""
        return self._backend.kind

    @property
    def location(self) -> str:
        """The file, or the URL with its password hidden."""
        return self._backend.location

    def close(self) -> None:
        """Close the connection."""
        self._backend.close()

    def schema_problem(self) -> str | None:
        """What the system database's migration version says, when it is newer than known."""
        if self._migration is not None and self._migration > NEWEST_MIGRATION:
            return (
                f"DBOS system database version {self._migration} is newer than wfctl reads "
                f"(up to {NEWEST_MIGRATION}): shown as stored, it may be misread"
            )
        return None

    def runs(self, *, workflow: str | None = None) -> Iterator[RunInfo]:
        """Yield each root workflow, oldest first, from one statement, streamed."""
        return self._listed(workflow, None)

    def runs_by_created(self, *, newest_first: bool) -> Iterator[RunInfo]:
        """Yield every root workflow in the order of ``wfctl runs --sort created`` (by
        ``created_at``, then run id; newest first when asked), sorted by the database and
        streamed, so the command holds none of them."""
        return self._listed(None, newest_first)

    def run_info(self, run_id: str) -> RunInfo:
        """Return one root workflow as :meth:`runs` lists it, from the listing's statement
        narrowed to its id.

        Raises:
            RunNotFoundError: no root workflow has that id (a child is listed in its root).
        """
        for info in self._listed(None, None, run_id):
            return info
        raise RunNotFoundError(run_id)

    def _listed(
        self, workflow: str | None, newest_first: bool | None, workflow_id: str | None = None
    ) -> Iterator[RunInfo]:
        schema = self.schema_problem()
        for row in self._backend.listing(newest_first, workflow_id):
            flow = Workflow.of(row)
            if workflow is not None and flow.name != workflow:
                continue
            count, head, parent_rows, result = row[12], row[13], row[14], row[15]
            if result:
                head = RESULT
            problem = _parent_problem(flow, int(parent_rows or 0))
            yield self._run_info(flow, int(count or 0), head, problem or schema)

    def _run_info(self, flow: Workflow, count: int, head: Any, problem: str | None) -> RunInfo:
        status = STATUSES.get(flow.status, "unknown")
        if flow.status not in STATUSES:
            problem = f"status {flow.status!r} is not one wfctl knows"
        return RunInfo(
            run_id=flow.workflow_id,
            workflow=flow.name,
            status=status,
            head_id=None if head is None else f"{flow.workflow_id}.{head}",
            created_at=epoch_ms(flow.created_at),
            updated_at=epoch_ms(flow.completed_at or flow.updated_at),
            record_count=count,
            origin=flow.forked_from,
            problem=problem,
            details=flow.details(),
        )

    def records(self, run_id: str) -> Iterator[Entry]:
        """Yield the workflow's steps, its children's nested (module docstring), streamed.

        Raises:
            RunNotFoundError: no such workflow (at once).
        """
        flow = self._workflow(run_id)
        if flow is None:
            raise RunNotFoundError(run_id)
        return self._numbered(flow)

    def _workflow(self, workflow_id: str) -> Workflow | None:
        row = self._backend.workflow(workflow_id)
        return None if row is None else Workflow.of(row)

    def _numbered(self, flow: Workflow) -> Iterator[Entry]:
        walk = self._walk(flow, None, {flow.workflow_id})
        for order, (step, row, before) in enumerate(walk):
            if isinstance(row, Result):
                yield _result_entry(step, flow.workflow_id, row, before, order)
            else:
                yield _entry(step, flow.workflow_id, row, before, order)

    def _walk(
        self, flow: Workflow, spawner: str | None, seen: set[str]
    ) -> Iterator[tuple[Workflow, Any, str | None]]:
        """Each step row of ``flow`` with its workflow and the entry id before it, a nested
        child's rows right after the step that started it (each child once), then the
        workflow's :class:`Result` when it has one."""
        before = spawner
        for row in self._backend.steps(flow.workflow_id):
            yield flow, row, before
            before = f"{flow.workflow_id}.{row[0]}"
            child_id, nested = row[4], row[14]
            if child_id is not None and nested and str(child_id) not in seen:
                seen.add(str(child_id))
                child = self._workflow(str(child_id))
                if child is not None:
                    yield from self._walk(child, before, seen)
        result = self._backend.result(flow.workflow_id)
        if result is not None:
            yield flow, Result(*result), before

    def child_counts(self, run_id: str) -> tuple[dict[str, int], int]:
        """How many children each entry of the run has, and how many entries there are,
        from the step rows (no value decoded), so ``log`` prints each step as it is read.

        Raises:
            RunNotFoundError: no such workflow.
        """
        flow = self._workflow(run_id)
        if flow is None:
            raise RunNotFoundError(run_id)
        children: dict[str, int] = {}
        total = 0
        for _, _, before in self._walk(flow, None, {run_id}):
            total += 1
            if before is not None:
                children[before] = children.get(before, 0) + 1
        return children, total

    def record(self, entry_id: str) -> Entry:
        """Return the step ``WORKFLOW.FUNCTION_ID`` as the log of the run it is nested in
        (its root workflow) gives it.

        Raises:
            CheckpointNotFoundError: no such step.
        """
        workflow_id, dot, function_id = entry_id.rpartition(".")
        known = function_id.isdigit() or function_id == RESULT
        flow = self._workflow(workflow_id) if dot and known else None
        if flow is None:
            raise CheckpointNotFoundError(entry_id)
        root = self._root(flow)
        for entry in self._numbered(root):
            if entry.entry_id == entry_id:
                return entry
        raise CheckpointNotFoundError(entry_id)

    def _root(self, flow: Workflow) -> Workflow:
        """The root workflow ``flow`` is nested in (itself when it is one)."""
        seen = {flow.workflow_id}
        while flow.parent and flow.parent not in seen:
            parent = self._workflow(flow.parent)
            if parent is None or not self._starts(parent, flow.workflow_id):
                break
            seen.add(parent.workflow_id)
            flow = parent
        return flow

    def _starts(self, parent: Workflow, child_id: str) -> bool:
        return any(
            row[4] == child_id and row[14] for row in self._backend.steps(parent.workflow_id)
        )

    def sizes(self, run_id: str | None = None) -> Iterator[SizeInfo]:
        """Yield each run's bytes by kind: ``steps`` and ``outputs`` (the records: the steps'
        and the workflows' outputs and errors), ``inputs``, ``events``, ``notifications``,
        ``streams`` (bytes only); a run's nested children counted with it.

        Raises:
            RunNotFoundError: ``run_id`` names no workflow.
        """
        if run_id is not None and self._workflow(run_id) is None:
            raise RunNotFoundError(run_id)
        root: str | None = None
        kinds: dict[str, list[int]] = {}
        for name, kind, rows, size in self._backend.sizes(run_id):
            if root is not None and name != root:
                yield _size(root, kinds)
                kinds = {}
            root = name
            kinds[kind] = [rows, size]
        if root is not None:
            yield _size(root, kinds)
        elif run_id is not None:
            yield _size(run_id, {})

    def verify(self, run_id: str | None = None) -> LineageReport:
        """Judge each run by DBOS's own rules (see :mod:`._dbos_verify`).

        Raises:
            RunNotFoundError: ``run_id`` names no workflow.
        """
        from wfctl._inspect._lineage import LineageReport

        from ._dbos_verify import verify_run

        infos = list(self.runs())
        if run_id is not None:
            flow = self._workflow(run_id)
            if flow is None:
                raise RunNotFoundError(run_id)
            infos = [i for i in infos if i.run_id == run_id]
            if not infos:  # a nested child, asked for by name
                infos = [self._run_info(flow, 0, None, self.schema_problem())]
        return LineageReport(tuple(verify_run(self._backend, info) for info in infos))


class Result(NamedTuple):
    """A workflow's own output and error, as ``workflow_output`` holds them."""

    output: Any
    error: Any


def _parent_problem(flow: Workflow, parent_rows: int) -> str | None:
    """What is wrong with a root that names a parent: the parent is missing, or none of its
    steps starts it."""
    if flow.parent and not parent_rows:
        return f"its parent workflow {flow.parent} is not in the store"
    if flow.parent:
        return f"no step of its parent workflow {flow.parent} starts it"
    return None


def _result_entry(
    flow: Workflow, run_id: str, result: Result, before: str | None, order: int
) -> Entry:
    """The entry ``WORKFLOW.result``: what the workflow returned or raised."""
    problems: list[str] = []
    output, problem = decode_value(result.output, flow.serialization)
    problems += [f"output: {problem}"] if problem else []
    error, problem = decode_value(result.error, flow.serialization)
    problems += [f"error: {problem}"] if problem else []
    summary: dict[str, Any] = {"nodes": [flow.name]}
    if flow.workflow_id != run_id:
        summary["workflow"] = flow.workflow_id
    if result.output is not None:
        summary["tasks"] = [{"task": f"{flow.name} returned", "result": output}]
    if result.error is not None:
        summary["errors"] = [error]
    if problems:
        summary["problems"] = problems
    data = {
        "workflow_id": flow.workflow_id,
        "workflow_name": flow.name,
        "status": flow.status,
        "completed_at": epoch_ms(flow.completed_at),
        "serialization": flow.serialization,
        "output": output,
        "error": error,
    }
    return Entry(
        entry_id=f"{flow.workflow_id}.{RESULT}",
        run_id=run_id,
        parent_ids=() if before is None else (before,),
        order=order,
        kind="error" if result.error is not None else "output",
        time=epoch_ms(flow.completed_at or flow.updated_at),
        summary=summary,
        data=data,
        size_bytes=sum(len(str(v).encode()) for v in result if v is not None),
    )


def _size(root: str, kinds: dict[str, list[int]]) -> SizeInfo:
    return SizeInfo(
        run_id=root,
        size_bytes=sum(size for _, size in kinds.values()),
        record_count=kinds.get("steps", [0, 0])[0] + kinds.get("outputs", [0, 0])[0],
        by_kind=by_kind(kinds),
    )


def _kind(name: str, child: Any) -> str:
    if name.startswith("DBOS."):
        return name[len("DBOS.") :]
    return "workflow" if child is not None else "step"


def _entry(flow: Workflow, run_id: str, row: Any, before: str | None, order: int) -> Entry:
    fid, name, output, error, child, started, completed, serialization = row[:8]
    topic, message, message_ser, key, value, value_ser = row[8:14]
    name = str(name or "")
    problems: list[str] = []
    result, problem = decode_value(output, serialization)
    problems += [f"output: {problem}"] if problem else []
    failure, problem = decode_value(error, serialization)
    problems += [f"error: {problem}"] if problem else []
    data: dict[str, Any] = {
        "workflow_id": flow.workflow_id,
        "workflow_name": flow.name,
        "function_id": fid,
        "function_name": name,
        "started_at": epoch_ms(started),
        "completed_at": epoch_ms(completed),
        "serialization": serialization,
        "output": result,
        "error": failure,
        "child_workflow_id": child,
    }
    tasks: list[dict[str, Any]] = []
    if message is not None:
        received, problem = decode_value(message, message_ser)
        problems += [f"message: {problem}"] if problem else []
        data["message"] = {"topic": topic, "value": received}
        tasks.append({"task": f"received {topic}", "result": received})
    if key is not None:
        event, problem = decode_value(value, value_ser)
        problems += [f"event: {problem}"] if problem else []
        data["event"] = {"key": key, "value": event}
        tasks.append({"task": f"set {key}", "result": event})
    if child is not None:
        tasks.append({"task": "child workflow", "result": child})
    if output is not None and message is None:
        tasks.append({"task": name, "result": result})
    summary: dict[str, Any] = {"step": fid, "nodes": [name]}
    if flow.workflow_id != run_id:
        summary["workflow"] = flow.workflow_id
    if row[15]:  # a fork copies the steps before its start, their times with them
        summary["copied_from"] = flow.forked_from
    if tasks:
        summary["tasks"] = tasks
    if error is not None:
        summary["errors"] = [failure]
    if problems:
        summary["problems"] = problems
    size = sum(len(str(v).encode()) for v in (output, error) if v is not None)
    return Entry(
        entry_id=f"{flow.workflow_id}.{fid}",
        run_id=run_id,
        parent_ids=() if before is None else (before,),
        order=order,
        kind=_kind(name, child),
        time=epoch_ms(started),
        summary=summary,
        data=data,
        size_bytes=size,
    )
