"""The text pipeline on each engine, and what its store holds after it.

Every engine runs the same pipeline: the run's input is a text, and each of N steps in turn
takes the text and returns it with one sentence replaced (:func:`_prose.edit`, a pure function of
the text, so every engine makes the same texts). Each function here runs it into a fresh store
under ``where`` and returns a :class:`Stored`: the final text and the store's bytes, with what
was measured. One that cannot run here raises :class:`Unavailable`.
"""

from __future__ import annotations

import asyncio
import sqlite3
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypedDict

import _prose
from engines._common import disk_usage

__all__ = ["ENGINES", "Stored", "Unavailable"]


class Unavailable(Exception):
    """The engine cannot run here (not installed, no server): its row says why, no figure."""


@dataclass(frozen=True)
class Stored:
    """What one engine's run left: its final text, and the bytes its store holds."""

    output: str
    total_bytes: int
    measured: str
    detail: dict[str, Any] = field(default_factory=dict)


def _pipeline(step: Any, workflow: Any, steps: int) -> Any:
    """The pipeline as a ``@workflow`` of ``steps`` ``@step`` calls, each given the text (its
    argument recorded): wfctl's decorators, or agent-framework's (the API wfctl mirrors)."""

    @step
    async def revise(text: str) -> str:
        return _prose.edit(text)

    @workflow(name="text_pipeline")
    async def pipeline(text: str) -> str:
        for _ in range(steps):
            text = await revise(text)
        return text

    return pipeline


def wfctl_file(prose: str, steps: int, where: Path) -> Stored:
    """wfctl's file store, default durability: every file under the store (one run)."""
    from wfctl import FileCheckpointStorage, step, workflow

    store = where / "wfctl-file"
    wf = _pipeline(step, workflow, steps).build(checkpoint_storage=FileCheckpointStorage(store))
    result = asyncio.run(wf.run(prose))
    files, size, _ = disk_usage(store)
    measured = "every file under the store (one run)"
    return Stored(result.get_outputs()[-1], size, measured, {"files": files})


def wfctl_file_answered(prose: str, steps: int, where: Path) -> Stored:
    """wfctl's file store, the run asking a question after each step, each answered by a
    ``resume`` (a new writer each time, as a process answering a paused run): every file under
    the store (one run, its pause and resume records too)."""
    from wfctl import FileCheckpointStorage, RunContext, step, workflow

    @step
    async def revise(text: str) -> str:
        return _prose.edit(text)

    @workflow(name="text_pipeline_answered")
    async def pipeline(text: str, *, ctx: RunContext) -> str:
        for i in range(steps):
            text = await revise(text)
            await ctx.request_info({"step": i}, str, request_id=f"ok{i}")
        return text

    store = where / "wfctl-file-answered"
    wf = pipeline.build(checkpoint_storage=FileCheckpointStorage(store))

    async def answered() -> Any:
        result = await wf.run(prose)
        for i in range(steps):
            result = await wf.resume(result.run_id, responses={f"ok{i}": "yes"})
        return result

    result = asyncio.run(answered())
    files, size, _ = disk_usage(store)
    measured = "every file under the store (one run, with a pause and a resume a step)"
    return Stored(result.get_outputs()[-1], size, measured, {"files": files})


#: Bytes of every table of the database, its indexes and TOAST included.
_RELATIONS = "SELECT coalesce(sum(pg_total_relation_size(relid)), 0) FROM pg_stat_user_tables"
#: The records as wfctl wrote them (octet_length) and as the server keeps them (after TOAST's
#: compression of a large value: pg_column_size).
_RECORDS = (
    "SELECT count(*), coalesce(sum(octet_length(record)), 0),"
    " coalesce(sum(pg_column_size(record)), 0) FROM wfctl_checkpoints"
)


def wfctl_postgres(prose: str, steps: int, where: Path) -> Stored:
    """wfctl's PostgreSQL store on a private server: the tables' growth over the run."""
    try:
        import psycopg

        from wfctl import step, workflow
        from wfctl.storage import open_storage
        from wfctl.storage.testing import PostgresUnavailableError, private_postgres
    except ImportError as exc:
        raise Unavailable(f"not installed ({exc.name})") from None

    async def run(url: str) -> tuple[str, int, tuple[Any, ...] | None]:
        storage = open_storage(url)
        try:
            await storage.get_latest(run_id="none")  # creates the schema: not the run's bytes
            with psycopg.connect(url, autocommit=True) as db:
                before = db.execute(_RELATIONS).fetchone()
            wf = _pipeline(step, workflow, steps).build(checkpoint_storage=storage)
            result = await wf.run(prose)
        finally:
            await storage.aclose()
        with psycopg.connect(url, autocommit=True) as db:
            after = db.execute(_RELATIONS).fetchone()
            try:
                records = db.execute(_RECORDS).fetchone()
            except psycopg.Error:  # another schema: the tables' growth still says it all
                records = None
        growth = int(after[0]) - int(before[0]) if after and before else 0
        return result.get_outputs()[-1], growth, records

    try:
        with private_postgres() as server:
            output, growth, records = asyncio.run(run(server.url))
    except PostgresUnavailableError as exc:
        raise Unavailable(str(exc).splitlines()[0]) from None
    detail: dict[str, Any] = {}
    if records is not None:
        detail = {"records": records[0], "record_bytes": records[1], "stored_bytes": records[2]}
    measured = "growth of pg_total_relation_size of every table (indexes, TOAST; no VACUUM)"
    return Stored(output, growth, measured, detail)


class _State(TypedDict):
    text: str
    done: int


def langgraph_sqlite(prose: str, steps: int, where: Path) -> Stored:
    """LangGraph's ``SqliteSaver`` under a StateGraph of one node looping ``steps`` times: the
    file after ``VACUUM``, and the sum of its checkpoint, metadata and write blobs."""
    try:
        from langgraph.checkpoint.sqlite import SqliteSaver
        from langgraph.graph import END, START, StateGraph
    except ImportError as exc:
        raise Unavailable(f"not installed ({exc.name})") from None

    def revise(state: _State) -> _State:
        return {"text": _prose.edit(state["text"]), "done": state["done"] + 1}

    def route(state: _State) -> str:
        return "revise" if state["done"] < steps else END

    builder = StateGraph(_State)
    builder.add_node("revise", revise)
    builder.add_edge(START, "revise")
    builder.add_conditional_edges("revise", route)
    path = where / "langgraph.sqlite"
    connection = sqlite3.connect(path, check_same_thread=False)
    try:
        graph = builder.compile(checkpointer=SqliteSaver(connection))
        config: Any = {"configurable": {"thread_id": "text"}, "recursion_limit": steps + 10}
        state = graph.invoke({"text": prose, "done": 0}, config)
    finally:
        connection.close()
    # One connection, closed at the end: the last to close folds the WAL into the file and
    # removes it, so the file alone holds the store (a connection left open keeps the WAL).
    db = sqlite3.connect(path, isolation_level=None)  # VACUUM cannot run in a transaction
    try:
        blobs = db.execute(
            "SELECT (SELECT coalesce(sum(length(checkpoint) + length(metadata)), 0)"
            " FROM checkpoints), (SELECT coalesce(sum(length(value)), 0) FROM writes),"
            " (SELECT count(*) FROM checkpoints), (SELECT count(*) FROM writes)"
        ).fetchone()
        db.execute("VACUUM")
        db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    finally:
        db.close()
    files, size, _ = disk_usage(where)
    detail = {
        "blob_bytes": blobs[0] + blobs[1],
        "checkpoint_blob_bytes": blobs[0],
        "write_blob_bytes": blobs[1],
        "checkpoints": blobs[2],
        "writes": blobs[3],
        "files": files,
    }
    measured = "the SQLite file after VACUUM (every file of the store: no WAL left)"
    return Stored(state["text"], size, measured, detail)


def agent_framework(prose: str, steps: int, where: Path) -> Stored:
    """agent-framework's functional workflow on ``FileCheckpointStorage``: the directory."""
    try:
        from agent_framework import FileCheckpointStorage, step, workflow
    except ImportError as exc:
        raise Unavailable(f"not installed ({exc.name})") from None
    # The functional API is marked experimental; the warning is noise in a benchmark.
    warnings.filterwarnings("ignore", message=r".*\bexperimental\b")

    store = where / "agent-framework"
    wf = _pipeline(step, workflow, steps).build(checkpoint_storage=FileCheckpointStorage(store))
    result = asyncio.run(wf.run(prose))
    files, size, _ = disk_usage(store)
    return Stored(result.get_outputs()[-1], size, "the checkpoint directory", {"files": files})


#: Engine -> (label, the pipeline's run), in table order.
ENGINES: dict[str, tuple[str, Callable[[str, int, Path], Stored]]] = {
    "wfctl_file": ("wfctl, file store", wfctl_file),
    "wfctl_file_answered": ("wfctl, file store, answered each step", wfctl_file_answered),
    "wfctl_postgres": ("wfctl, PostgreSQL store", wfctl_postgres),
    "langgraph_sqlite": ("LangGraph, SqliteSaver", langgraph_sqlite),
    "agent_framework": ("agent-framework, FileCheckpointStorage", agent_framework),
}
