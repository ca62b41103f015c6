"""Pruning and removing threads of LangGraph stores written by LangGraph itself, SQLite and
PostgreSQL: LangGraph loads every thread the same after a prune, a DeltaChannel's value too;
``remove`` takes exactly its threads' rows; a report changes nothing."""

from __future__ import annotations

import hashlib
import sqlite3
import warnings
from pathlib import Path
from typing import Any

import pytest
from langgraph.graph import END, START, StateGraph
from langgraph.types import Command, interrupt

from tests.langgraph.prune_stores import ALL_THREADS, Store, fill_all, written_store
from tests.langgraph.stores import State, config, question_graph
from tests.postgres.conftest import pg_server  # noqa: F401  # the private server, a fixture
from wfctl._errors import RunNotFoundError
from wfctl._storage._langgraph import apply, plan_prune, plan_remove


@pytest.fixture(params=["sqlite", "postgresql"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Store:
    """A store of each backend holding every thread, written by LangGraph."""
    return written_store(request, tmp_path, "lgprune")


def _file_digest(store: Store) -> str:
    return hashlib.sha256(Path(store.target).read_bytes()).hexdigest()


def test_prune_keeps_what_langgraph_loads_of_every_thread(store: Store) -> None:
    before = store.states()
    counts = {thread: store.count(thread) for thread in ALL_THREADS}
    report = apply(plan_prune(store.location))
    assert report.applied
    assert {c.thread_id for c in report.threads} == set(ALL_THREADS)
    assert all(c.declined is None for c in report.threads)
    assert store.states() == before
    for change in report.threads:
        assert store.count(change.thread_id) == change.kept_checkpoints
        assert change.checkpoints == counts[change.thread_id] - change.kept_checkpoints
    assert _dangling(store) == []
    # a pruned store prunes to itself
    again = plan_prune(store.location).report
    assert all(c.checkpoints == 0 and c.writes == 0 for c in again.threads)


def _dangling(store: Store) -> list[tuple[object, ...]]:
    """What names a checkpoint that is not there: a parent, or a write's checkpoint (the
    lineage verify-lineage checks)."""
    writes = "writes" if store.backend == "sqlite" else "checkpoint_writes"
    missing = (
        "NOT EXISTS (SELECT 1 FROM checkpoints p WHERE p.thread_id = c.thread_id"
        " AND p.checkpoint_ns = c.checkpoint_ns AND p.checkpoint_id = c.{})"
    )
    parents = store.rows(
        "SELECT 'parent', thread_id, checkpoint_id FROM checkpoints c"
        " WHERE parent_checkpoint_id IS NOT NULL AND " + missing.format("parent_checkpoint_id")
    )
    owners = store.rows(
        f"SELECT DISTINCT 'write', thread_id, checkpoint_id FROM {writes} c WHERE "
        + missing.format("checkpoint_id")
    )
    return parents + owners


def test_prune_keeps_a_delta_channel_s_ancestors_back_to_its_snapshot(store: Store) -> None:
    before = store.states(("delta",))
    assert before["delta"][0]["items"] == [0, 10, 20, 30, 40]
    report = apply(plan_prune(store.location, ["delta"]))
    (change,) = report.threads
    # the head holds no value of items: its ancestors back to the snapshot stay
    assert change.kept_checkpoints > 1
    assert change.checkpoints > 0
    assert store.states(("delta",)) == before


def test_a_delta_chain_that_cannot_be_proven_is_left_whole(store: Store) -> None:
    heads = store.rows(
        "SELECT checkpoint_id, parent_checkpoint_id FROM checkpoints"
        " WHERE thread_id = 'delta' ORDER BY checkpoint_id DESC LIMIT 1"
    )
    # the head's parent goes missing: the chain its value is rebuilt from is broken
    store.rows("DELETE FROM checkpoints WHERE checkpoint_id = ? RETURNING 1", (heads[0][1],))
    before = store.digests()
    report = apply(plan_prune(store.location))
    declined = {c.thread_id: c.declined for c in report.threads if c.declined}
    assert list(declined) == ["delta"]
    assert "DeltaChannel 'items'" in str(declined["delta"])
    after = store.digests()
    assert {k: v for k, v in after.items() if k[1] == "delta"} == {
        k: v for k, v in before.items() if k[1] == "delta"
    }


def test_a_paused_thread_resumes_after_a_prune_as_before(store: Store) -> None:
    apply(plan_prune(store.location, ["paused"]))
    with store.saver() as saver, warnings.catch_warnings():
        warnings.simplefilter("ignore")
        result = question_graph(saver).invoke(Command(resume="yes"), config("paused"))
    assert result == {"n": 2, "log": ["a", "answer:yes", "checked"]}


def test_remove_takes_exactly_the_named_threads(store: Store) -> None:
    before = store.digests()
    states = store.states(("paused", "failed", "delta"))
    report = apply(plan_remove(store.location, ["done", "nested"]))
    assert [c.thread_id for c in report.threads] == ["done", "nested"]
    after = store.digests()
    assert {k[1] for k in after} == set(ALL_THREADS) - {"done", "nested"}
    assert after == {k: v for k, v in before.items() if k[1] not in ("done", "nested")}
    assert store.states(("paused", "failed", "delta")) == states


def test_a_report_changes_nothing(store: Store) -> None:
    before = _file_digest(store) if store.backend == "sqlite" else store.digests()
    pruned = plan_prune(store.location).report
    removed = plan_remove(store.location, list(ALL_THREADS)).report
    assert not pruned.applied and not removed.applied
    assert pruned.bytes > 0 and removed.bytes > pruned.bytes
    after = _file_digest(store) if store.backend == "sqlite" else store.digests()
    assert after == before


def test_an_unknown_thread_is_refused_before_anything_changes(store: Store) -> None:
    before = store.digests()
    with pytest.raises(RunNotFoundError, match="nope"):
        plan_remove(store.location, ["done", "nope"])
    assert store.digests() == before


def _paused_in_subgraph(saver: Any) -> Any:
    """An outer graph whose node ``sub`` is a subgraph that asks a question (interrupts)."""
    inner = StateGraph(State)
    inner.add_node("first", lambda state: {"log": ["first"]})
    inner.add_node("ask", lambda state: {"log": [f"answer:{interrupt('go on?')}"]})
    inner.add_edge(START, "first")
    inner.add_edge("first", "ask")
    inner.add_edge("ask", END)
    outer = StateGraph(State)
    outer.add_node("before", lambda state: {"n": state["n"] + 1})
    outer.add_node("sub", inner.compile())
    outer.add_edge(START, "before")
    outer.add_edge("before", "sub")
    outer.add_edge("sub", END)
    return outer.compile(checkpointer=saver)


def test_a_thread_paused_in_a_subgraph_keeps_the_subgraph_and_resumes(store: Store) -> None:
    thread = config("in-sub")
    with store.saver() as saver, warnings.catch_warnings():
        warnings.simplefilter("ignore")
        graph = _paused_in_subgraph(saver)
        graph.invoke({"n": 1, "log": []}, thread)
        for twin in ("in-sub-2", "unpruned"):  # a second run, for history; its twin stays
            graph.invoke({"n": 1, "log": []}, config(twin))
            graph.invoke(Command(resume="no"), config(twin))
            graph.invoke({"n": 5, "log": []}, config(twin))
        before = graph.get_state(thread, subgraphs=True)
    report = apply(plan_prune(store.location, ["in-sub", "in-sub-2"]))
    assert all(c.declined is None for c in report.threads)
    assert store.rows("SELECT count(*) FROM checkpoints WHERE checkpoint_ns <> ''")[0][0] >= 1
    with store.saver() as saver, warnings.catch_warnings():
        warnings.simplefilter("ignore")
        graph = _paused_in_subgraph(saver)
        after = graph.get_state(thread, subgraphs=True)
        assert (after.values, after.next) == (before.values, before.next)
        assert [t.state.values for t in after.tasks] == [t.state.values for t in before.tasks]
        resumed = graph.invoke(Command(resume="yes"), thread)
        second = graph.invoke(Command(resume="yes"), config("in-sub-2"))
        twin = graph.invoke(Command(resume="yes"), config("unpruned"))
    assert resumed == {"n": 2, "log": ["first", "answer:yes"]}
    assert second == twin


def test_a_thread_the_database_stays_locked_for_is_left_whole(tmp_path: Path) -> None:
    path = tmp_path / "checkpoints.sqlite"
    store = Store("sqlite", str(path))
    with store.saver() as saver:
        fill_all(saver)
    plan = plan_prune(store.location, ["done"])
    before = store.digests()
    holder = sqlite3.connect(path, isolation_level=None)
    try:
        holder.execute("BEGIN IMMEDIATE")  # another writer holds the lock throughout
        report = apply(plan, busy_timeout=0.05)
    finally:
        holder.close()
    (change,) = report.threads
    assert change.declined is not None and "another writer" in change.declined
    assert store.digests() == before
