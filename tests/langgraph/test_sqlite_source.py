"""The LangGraph SQLite reader holds to the read port's conformance suite, on files the real
LangGraph wrote, and reads what LangGraph stored: threads, forks, subgraphs, interrupts, errors
and the functional API's task results."""

from __future__ import annotations

import gc
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests.langgraph.stores import THREADS, fill, sqlite_saver, write_pickled_delta
from wfctl._errors import RunNotFoundError
from wfctl._sources._views import log_tree, tree
from wfctl.sources import Source, open_source
from wfctl.sources.testing import SourceConformance, directory_digest


class TestLangGraphSqlite(SourceConformance):
    statuses = frozenset({"paused", "failed", "completed"})
    forks = True
    unknown_record_id = "1f1f0000-0000-6000-8000-000000000000"

    @pytest.fixture
    def source_under_test(self, sqlite_store: Path) -> Iterator[Source]:
        with open_source(sqlite_store) as source:
            assert source.kind == "langgraph-sqlite"
            yield source

    @pytest.fixture
    def store_digest(self, sqlite_store: Path) -> Callable[[], str]:
        return lambda: directory_digest(sqlite_store.parent)

    @pytest.fixture
    def big_run(self, long_sqlite: Path) -> Iterator[tuple[Source, str, int]]:
        with open_source(f"langgraph+sqlite://{long_sqlite}") as source:
            (size,) = source.sizes("long")
            yield source, "long", size.size_bytes


def test_runs_is_one_statement_whatever_the_thread_count(sqlite_store: Path) -> None:
    """The listing reads every thread's aggregate, head and first checkpoint and head's signal
    writes in one statement (a statement per thread would not list 100,000 in seconds)."""
    with open_source(sqlite_store) as source:
        statements: list[str] = []
        source._backend._conn.set_trace_callback(statements.append)  # type: ignore[attr-defined]
        listed = list(source.runs())
    assert len(listed) == 5
    assert len(statements) == 1, statements


def test_rows_still_in_the_wal_are_read(tmp_path: Path) -> None:
    """While LangGraph's connection is open its commits may sit in ``-wal``: SQLite reads them
    (the file is not opened ``immutable`` then), and neither the file nor its ``-wal`` changes."""
    path = tmp_path / "live.sqlite"
    with sqlite_saver(path) as saver:
        fill(saver)
        wal = Path(f"{path}-wal")
        assert wal.stat().st_size > 0  # the commits are in the WAL, not yet in the file
        before = (path.read_bytes(), wal.read_bytes())
        with open_source(path) as source:
            assert {r.run_id for r in source.runs()} == set(THREADS)
            assert source.verify().ok
        assert (path.read_bytes(), wal.read_bytes()) == before


def test_pickle_rows_langgraph_wrote_are_opaque(tmp_path: Path) -> None:
    """With its pickle fallback on, LangGraph pickles a whole SQLite checkpoint holding a value
    msgpack cannot encode: the thread is listed (its state from its writes, the pickle named),
    its checkpoints given opaque with their size, and its lineage still checked from the
    columns."""
    path = write_pickled_delta(tmp_path / "pickled.sqlite")
    with open_source(path) as source:
        (info,) = source.runs()
        assert info.status == "unknown"
        assert info.problem is not None and "stored as pickle (never unpickled)" in info.problem
        entries = list(source.records("delta"))
        pickled = [e for e in entries if e.data["checkpoint"].get("$opaque") == "pickle"]
        assert pickled and all(e.data["checkpoint"]["bytes"] > 0 for e in pickled)
        writes = [w for e in entries for w in e.data["pending_writes"]]
        assert {"$opaque": "pickle"}.items() <= next(
            w["value"] for w in writes if w["channel"] == "thing"
        ).items()
        assert source.verify().ok


def test_log_streams_with_the_depths_of_the_whole_tree(sqlite_store: Path) -> None:
    """``log`` gives a thread's records as they are read, each at the depth the whole tree
    gives it (children counted from lineage fields only: forks and subgraphs indented)."""
    with open_source(sqlite_store) as source:
        for info in source.runs():
            whole = [(depth, e.entry_id) for depth, e in tree(list(source.records(info.run_id)))]
            count, streamed = log_tree(source, info.run_id)
            assert count == info.record_count
            assert [(depth, e.entry_id) for depth, e in streamed] == whole
        assert any(depth > 0 for depth, _ in log_tree(source, "nested")[1])
        statements: list[str] = []
        source._backend._conn.set_trace_callback(statements.append)  # type: ignore[attr-defined]
        _, streamed = log_tree(source, "done")
        next(streamed)  # the first record is given once it is read, not after all six
        assert sum(s.startswith("SELECT task_id") for s in statements) == 1, statements
        with pytest.raises(RunNotFoundError):
            log_tree(source, "no-such-thread")


def test_a_stream_left_unfinished_ends_quietly_after_its_source(sqlite_store: Path) -> None:
    """A command that stops part way (an error, a closed pipe) closes its source first; the
    stream dropped after it must not raise while it is collected (an error printed at exit)."""
    unraisable: list[object] = []
    previous = sys.unraisablehook
    sys.unraisablehook = unraisable.append
    try:
        source = open_source(sqlite_store)
        stream = source.records("done")
        next(stream)
        source.close()
        del stream
        gc.collect()
    finally:
        sys.unraisablehook = previous
    assert unraisable == []
