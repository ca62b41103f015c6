"""The stores the LangGraph reader is tested on hold what :mod:`tests.langgraph.stores` says."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from tests.langgraph.stores import THREADS, write_sqlite


def test_sqlite_store_holds_every_thread_and_its_shapes(tmp_path: Path) -> None:
    path = write_sqlite(tmp_path / "checkpoints.sqlite")
    with sqlite3.connect(path) as conn:
        threads = {row[0] for row in conn.execute("SELECT DISTINCT thread_id FROM checkpoints")}
        sources = dict(
            conn.execute(
                "SELECT thread_id, group_concat(json_extract(metadata, '$.source'))"
                " FROM checkpoints WHERE checkpoint_ns = '' GROUP BY thread_id"
            ).fetchall()
        )
        channels = {
            (row[0], row[1])
            for row in conn.execute("SELECT thread_id, channel FROM writes WHERE idx < 0")
        }
        namespaces = {row[0] for row in conn.execute("SELECT checkpoint_ns FROM checkpoints")}
    conn.close()
    assert threads == set(THREADS)
    assert "update" in sources["done"].split(",")  # the update_state fork
    assert ("paused", "__interrupt__") in channels
    assert ("failed", "__error__") in channels
    assert any(ns.startswith("sub:") for ns in namespaces)  # the subgraph
