"""Helpers of the prune tests: a LangGraph store of either backend, its threads' states as
LangGraph loads them, and digests of its rows.

A DeltaChannel thread (``delta``) is added to :data:`tests.langgraph.stores.THREADS`: five
runs of a graph whose ``items`` is ``DeltaChannel(..., snapshot_frequency=3)``, so its head
holds no value for ``items`` and LangGraph rebuilds it from the ancestors' writes back to a
snapshot.
"""

from __future__ import annotations

import hashlib
import sqlite3
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, TypedDict
from urllib.parse import urlencode

import psycopg
import pytest
from langgraph.channels.delta import DeltaChannel
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.graph import END, START, StateGraph
from psycopg.conninfo import conninfo_to_dict

from tests.langgraph.stores import (
    THREADS,
    config,
    fill,
    fresh_database,
    functional,
    nested_graph,
    postgres_saver,
    question_graph,
    sqlite_saver,
)

__all__ = ["ALL_THREADS", "Store", "delta_graph", "fill_all", "written_store"]

ALL_THREADS = (*THREADS, "delta")


def _extend(state: list[int], writes: list[list[int]]) -> list[int]:
    out = list(state)
    for write in writes:
        out.extend(write)
    return out


class DeltaState(TypedDict):
    """A number, and a list kept as a DeltaChannel."""

    n: int
    items: Annotated[list[int], DeltaChannel(_extend, snapshot_frequency=3)]


def delta_graph(saver: BaseCheckpointSaver[Any]) -> Any:
    """One node ``add`` appending ``n`` to ``items``."""
    graph = StateGraph(DeltaState)
    graph.add_node("add", lambda state: {"items": [state["n"]], "n": state["n"] + 1})
    graph.add_edge(START, "add")
    graph.add_edge("add", END)
    return graph.compile(checkpointer=saver)


def fill_all(saver: BaseCheckpointSaver[Any]) -> None:
    """Write :data:`ALL_THREADS` with ``saver``."""
    fill(saver)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # DeltaChannel is LangGraph's beta: its note is not ours
        graph = delta_graph(saver)
        for run in range(5):
            graph.invoke({"n": run * 10}, config("delta"))


_BUILDERS = {"nested": nested_graph, "functional": functional, "delta": delta_graph}
_TABLES = {
    "sqlite": ("checkpoints", "writes"),
    "postgresql": ("checkpoints", "checkpoint_blobs", "checkpoint_writes"),
}


@dataclass(frozen=True)
class Store:
    """A LangGraph store: ``backend`` (sqlite or postgresql), ``target`` (the file's path or
    the database's URL) and ``location`` (what ``--store`` takes)."""

    backend: str
    target: str

    @property
    def location(self) -> str:
        if self.backend == "sqlite":
            return "langgraph+sqlite://" + self.target
        params = conninfo_to_dict(self.target)
        query = urlencode({k: v for k, v in params.items() if k not in ("user", "dbname")})
        return f"langgraph+postgresql://{params.get('user', '')}@/{params['dbname']}?{query}"

    @contextmanager
    def saver(self) -> Iterator[BaseCheckpointSaver[Any]]:
        """LangGraph's own saver on the store."""
        if self.backend == "sqlite":
            with sqlite_saver(Path(self.target)) as saver:
                yield saver
        else:
            with postgres_saver(self.target) as saver:
                yield saver

    def states(self, threads: tuple[str, ...] = ALL_THREADS) -> dict[str, Any]:
        """Per thread, what LangGraph's ``get_state`` loads: values, next, tasks."""
        out: dict[str, Any] = {}
        with self.saver() as saver, warnings.catch_warnings():
            warnings.simplefilter("ignore")
            for thread in threads:
                graph = _BUILDERS.get(thread, question_graph)(saver)
                state = graph.get_state(config(thread))
                tasks = [(t.name, t.error is not None, t.interrupts) for t in state.tasks]
                out[thread] = (state.values, state.next, tasks)
        return out

    def rows(self, sql: str, params: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
        """The rows ``sql`` answers (``?`` placeholders for SQLite, ``%s`` for PostgreSQL)."""
        if self.backend == "sqlite":
            conn = sqlite3.connect(self.target)
            try:
                rows = conn.execute(sql, params).fetchall()
                conn.commit()
                return rows
            finally:
                conn.close()
        with psycopg.connect(self.target, autocommit=True) as conn:
            return conn.execute(sql.replace("?", "%s"), params).fetchall()

    def digests(self) -> dict[tuple[str, str], str]:
        """A digest of each thread's rows in each table, keyed by (table, thread)."""
        out: dict[tuple[str, str], str] = {}
        for table in _TABLES[self.backend]:
            rows = self.rows(f"SELECT * FROM {table}")
            by_thread: dict[str, list[str]] = {}
            for row in rows:
                by_thread.setdefault(str(row[0]), []).append(repr(row))
            for thread, texts in by_thread.items():
                out[table, thread] = hashlib.sha256("\n".join(sorted(texts)).encode()).hexdigest()
        return out

    def count(self, thread: str) -> int:
        """The thread's checkpoints."""
        return int(
            self.rows("SELECT count(*) FROM checkpoints WHERE thread_id = ?", (thread,))[0][0]
        )


def written_store(request: pytest.FixtureRequest, tmp_path: Path, name: str) -> Store:
    """A store of the backend ``request.param`` names (a file in ``tmp_path``, or the database
    ``name`` on the private server) holding :data:`ALL_THREADS`, written by LangGraph."""
    if request.param == "sqlite":
        made = Store("sqlite", str(tmp_path / "checkpoints.sqlite"))
    else:
        server = request.getfixturevalue("pg_server")
        made = Store("postgresql", fresh_database(server.url, name))
    with made.saver() as saver:
        fill_all(saver)
    return made
