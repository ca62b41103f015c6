"""Checkpoint stores written by the real LangGraph, for the tests of what wfctl reads of them.

Each writer runs LangGraph's own graphs and functional workflows with its own checkpointers
(``SqliteSaver`` on a file, ``PostgresSaver`` on a database of the private server), so the
rows are exactly LangGraph's. The threads written, by id:

- ``paused``: a graph stopped at an ``interrupt`` (a question pending at the head);
- ``done``: the same graph answered and run to its end, then forked with ``update_state`` at
  an older checkpoint (a legitimate fork: source ``update``);
- ``failed``: the graph answered, then a node raising ``ValueError`` (an ``__error__`` write
  at the head);
- ``nested``: a graph whose node is a subgraph (checkpoints in namespace ``sub:<task id>``);
- ``functional``: an ``@entrypoint`` calling the ``@task`` ``double`` twice (its results exist
  only as writes).
"""

from __future__ import annotations

import operator
import sqlite3
import warnings
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import Annotated, Any, TypedDict

# the test extra installs langgraph and both checkpointers: missing, the tests fail
from langgraph.channels.delta import DeltaChannel
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.func import entrypoint, task
from langgraph.graph import END, START, StateGraph
from langgraph.types import Command, interrupt

__all__ = [
    "THREADS",
    "Unencodable",
    "fill",
    "fresh_database",
    "fresh_url",
    "postgres_saver",
    "sqlite_saver",
    "write_long_thread",
    "write_pickled_delta",
    "write_postgres",
    "write_sqlite",
]

#: The threads :func:`fill` writes.
THREADS = ("paused", "done", "failed", "nested", "functional")


class State(TypedDict):
    """The graphs' state: a number and a log that grows (a reducer channel)."""

    n: int
    log: Annotated[list[str], operator.add]


def _add(state: State) -> dict[str, Any]:
    return {"n": state["n"] + 1, "log": ["a"]}


def _ask(state: State) -> dict[str, Any]:
    answer = interrupt({"question": "go on?", "n": state["n"]})
    return {"log": [f"answer:{answer}"]}


def _check(state: State) -> dict[str, Any]:
    if state["n"] > 100:
        raise ValueError(f"n is too big: {state['n']}")
    return {"log": ["checked"]}


def question_graph(saver: BaseCheckpointSaver[Any]) -> Any:
    """``add`` -> ``ask`` (interrupts) -> ``check`` (fails when n > 100)."""
    graph = StateGraph(State)
    graph.add_node("add", _add)
    graph.add_node("ask", _ask)
    graph.add_node("check", _check)
    graph.add_edge(START, "add")
    graph.add_edge("add", "ask")
    graph.add_edge("ask", "check")
    graph.add_edge("check", END)
    return graph.compile(checkpointer=saver)


def nested_graph(saver: BaseCheckpointSaver[Any]) -> Any:
    """A graph whose one node ``sub`` is a compiled subgraph with one node ``inner``."""
    inner = StateGraph(State)
    inner.add_node("inner", lambda state: {"log": ["inner"]})
    inner.add_edge(START, "inner")
    inner.add_edge("inner", END)
    outer = StateGraph(State)
    outer.add_node("sub", inner.compile())
    outer.add_edge(START, "sub")
    outer.add_edge("sub", END)
    return outer.compile(checkpointer=saver)


def functional(saver: BaseCheckpointSaver[Any]) -> Any:
    """An entrypoint adding ``double(x)`` and ``double(x + 1)``."""

    @task
    def double(x: int) -> int:
        return x * 2

    @entrypoint(checkpointer=saver)
    def doubles(x: int) -> int:
        return double(x).result() + double(x + 1).result()

    return doubles


def config(thread: str) -> dict[str, Any]:
    """LangGraph's run configuration naming ``thread``."""
    return {"configurable": {"thread_id": thread}}


def fill(saver: BaseCheckpointSaver[Any]) -> None:
    """Write the :data:`THREADS` with ``saver``."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # LangGraph's own deprecation notes are not ours
        graph = question_graph(saver)
        graph.invoke({"n": 1, "log": []}, config("paused"))
        graph.invoke({"n": 1, "log": []}, config("done"))
        graph.invoke(Command(resume="yes"), config("done"))
        older = list(graph.get_state_history(config("done")))[-2].config
        graph.update_state(older, {"n": 50})
        graph.invoke({"n": 200, "log": []}, config("failed"))
        with suppress(ValueError):
            graph.invoke(Command(resume="yes"), config("failed"))
        nested_graph(saver).invoke({"n": 1, "log": []}, config("nested"))
        functional(saver).invoke(3, config("functional"))


@contextmanager
def sqlite_saver(path: Path) -> Iterator[SqliteSaver]:
    """LangGraph's ``SqliteSaver`` on the file ``path`` (created), closed after."""
    conn = sqlite3.connect(path, check_same_thread=False)
    try:
        yield SqliteSaver(conn)
    finally:
        conn.close()


def write_sqlite(path: Path) -> Path:
    """Write the :data:`THREADS` into a new SQLite file at ``path``; return it."""
    with sqlite_saver(path) as saver:
        fill(saver)
    return path


def fresh_database(server_url: str, name: str) -> str:
    """Create the empty database ``name`` on the server at ``server_url`` (dropping one of that
    name first); return its URL."""
    import psycopg
    from psycopg.conninfo import conninfo_to_dict, make_conninfo

    with psycopg.connect(server_url, autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        conn.execute(f'CREATE DATABASE "{name}"')
    params = conninfo_to_dict(server_url)
    params["dbname"] = name
    return make_conninfo("", **params)


def fresh_url(server_url: str, name: str) -> str:
    """:func:`fresh_database`, its ``postgresql://`` URL returned (the server's URL with the
    database's name in place of the server's)."""
    from urllib.parse import urlsplit, urlunsplit

    fresh_database(server_url, name)
    parts = urlsplit(server_url)
    return urlunsplit(parts._replace(path=f"/{name}"))


@contextmanager
def postgres_saver(url: str) -> Iterator[Any]:
    """LangGraph's ``PostgresSaver`` on the database at ``url``, its tables set up."""
    from langgraph.checkpoint.postgres import PostgresSaver

    with PostgresSaver.from_conn_string(url) as saver:
        saver.setup()
        yield saver


def write_postgres(url: str) -> str:
    """Write the :data:`THREADS` into the database at ``url`` (which holds no thread yet)."""
    with postgres_saver(url) as saver:
        fill(saver)
    return url


class _Long(TypedDict):
    """A long thread's state: a counter and a payload replaced at every step."""

    i: int
    payload: str


def write_long_thread(saver: BaseCheckpointSaver[Any], thread: str, steps: int, size: int) -> None:
    """Write the thread ``thread`` of about ``steps`` checkpoints, each holding ``size`` bytes
    of payload (a node looping on itself)."""
    graph = StateGraph(_Long)
    graph.add_node("step", lambda s: {"i": s["i"] + 1, "payload": f"{s['i']:08d}" * (size // 8)})
    graph.add_edge(START, "step")
    graph.add_conditional_edges("step", lambda s: END if s["i"] >= steps else "step")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        compiled = graph.compile(checkpointer=saver)
        compiled.invoke({"i": 0, "payload": ""}, {**config(thread), "recursion_limit": steps + 10})


class Unencodable:
    """A value msgpack cannot encode: LangGraph's pickle fallback pickles it."""


class _Delta(TypedDict):
    items: Annotated[list[str], DeltaChannel(operator.add, snapshot_frequency=2)]
    thing: object


def write_pickled_delta(path: Path, thread: str = "delta", runs: int = 3) -> Path:
    """A SQLite file where ``thread`` ran ``runs`` times a graph whose state holds a
    DeltaChannel (a snapshot every second update) and a value only pickle encodes, with
    LangGraph's serializer's ``pickle_fallback`` on (its checkpoints and those writes are
    ``pickle`` rows)."""
    from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer

    graph = StateGraph(_Delta)
    graph.add_node("node", lambda state: {"items": ["x"], "thing": Unencodable()})
    graph.add_edge(START, "node")
    graph.add_edge("node", END)
    conn = sqlite3.connect(path, check_same_thread=False)
    try:
        saver = SqliteSaver(conn, serde=JsonPlusSerializer(pickle_fallback=True))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            compiled = graph.compile(checkpointer=saver)
            for _ in range(runs):
                compiled.invoke({"items": ["a"]}, config(thread))
    finally:
        conn.close()
    return path
