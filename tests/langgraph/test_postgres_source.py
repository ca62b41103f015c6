"""The LangGraph PostgreSQL reader holds to the read port's conformance suite on databases the
real LangGraph wrote (the private server), reads values stored apart as blobs, and is found
from a plain ``postgresql://`` URL when the database holds LangGraph's tables only."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import psycopg
import pytest

from tests.cli.conftest import wfctl
from tests.langgraph.conftest import table_digest
from tests.langgraph.stores import fresh_url, write_postgres
from tests.langgraph.tampered import plant
from wfctl.sources import Source, open_source
from wfctl.sources.testing import SourceConformance
from wfctl.storage.testing import PrivateServer


class TestLangGraphPostgres(SourceConformance):
    statuses = frozenset({"paused", "failed", "completed"})
    forks = True
    unknown_record_id = "1f1f0000-0000-6000-8000-000000000000"

    @pytest.fixture
    def source_under_test(self, pg_store: str) -> Iterator[Source]:
        with open_source(f"langgraph+{pg_store}") as source:
            assert source.kind == "langgraph-postgresql"
            yield source

    @pytest.fixture
    def store_digest(self, pg_store: str) -> Callable[[], str]:
        return lambda: table_digest(pg_store)

    @pytest.fixture
    def big_run(self, long_pg: str) -> Iterator[tuple[Source, str, int]]:
        with open_source(f"langgraph+{long_pg}") as source:
            (size,) = source.sizes("long")
            yield source, "long", size.size_bytes


def test_values_stored_as_blobs_are_resolved(pg_store: str) -> None:
    with open_source(f"langgraph+{pg_store}") as source:
        head = next(r for r in source.runs() if r.run_id == "failed").head_id
        assert head is not None
        values = source.record(head).data["checkpoint"]["channel_values"]
        assert values["n"] == 201  # inline in the checkpoint's JSONB
        assert values["log"] == ["a", "answer:yes"]  # a blob
        (size,) = source.sizes("failed")
        assert {k.kind for k in size.by_kind} == {"blobs", "checkpoints", "writes"}
        assert {"log", "n"} <= {c.kind for c in size.by_channel}
        assert source.verify().ok


def test_a_plain_url_is_detected_by_its_tables(pg_store: str, pg_server: PrivateServer) -> None:
    listed = wfctl("runs", "--store", pg_store, "--json")
    assert listed.code == 0, listed
    assert listed.json()["source"] == "langgraph-postgresql"
    both = fresh_url(pg_server.url, "langgraph_and_wfctl")
    with psycopg.connect(both, autocommit=True) as conn:
        conn.execute("CREATE TABLE checkpoints (thread_id text, checkpoint_ns text)")
        conn.execute("CREATE TABLE wfctl_runs (run_id text)")
    done = wfctl("runs", "--store", both)
    assert done.code == 2 and done.stdout == ""
    assert "holds both wfctl's store and LangGraph's checkpoints" in done.error_line()
    assert "langgraph+postgresql://" in done.error_line()


def test_a_blob_a_checkpoint_names_and_no_row_holds_breaks_the_lineage(
    pg_server: PrivateServer,
) -> None:
    url = write_postgres(fresh_url(pg_server.url, "langgraph_missing_blob"))
    with psycopg.connect(url, autocommit=True) as conn:
        versions = [
            row[0]
            for row in conn.execute(
                "DELETE FROM checkpoint_blobs WHERE thread_id = 'failed' AND channel = 'log'"
                " RETURNING version"
            )
        ]
    assert versions
    done = wfctl("verify-lineage", "--store", url, "--json")
    assert done.code == 1, done
    (verdict,) = [r for r in done.json()["runs"] if not r["ok"]]
    assert verdict["run_id"] == "failed"
    named = [p for p in verdict["problems"] if "which no blob holds" in p]
    assert named and all(any(f"names log version {v}," in p for v in versions) for p in named)


def test_the_shallow_saver_is_refused_by_name(pg_server: PrivateServer) -> None:
    url = fresh_url(pg_server.url, "langgraph_shallow")
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(
            "CREATE TABLE checkpoints (thread_id text, checkpoint_ns text, type text,"
            " checkpoint jsonb, metadata jsonb)"
        )
    done = wfctl("runs", "--store", f"langgraph+{url}")
    assert done.code == 2 and "LangGraph's shallow checkpointer" in done.error_line()


def test_no_command_unpickles_or_imports_what_a_row_names(
    pg_server: PrivateServer, tmp_path: Path
) -> None:
    planted, modules = tmp_path / "planted", tmp_path / "modules"
    hostile, ext = plant(planted, modules)
    url = write_postgres(fresh_url(pg_server.url, "langgraph_hostile"))
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(
            "UPDATE checkpoint_blobs SET type = 'pickle', blob = %s"
            " WHERE thread_id = 'paused' AND channel = 'log'",
            (hostile,),
        )
        conn.execute(
            "UPDATE checkpoint_writes SET type = 'msgpack', blob = %s"
            " WHERE thread_id = 'paused' AND channel = 'n'",
            (ext,),
        )
    env = {"PYTHONPATH": str(modules)}
    listed = wfctl("runs", "--store", url, "--json", cwd=modules, env=env)
    head = next(r["head_id"] for r in listed.json()["runs"] if r["run_id"] == "paused")
    for args in (
        ["runs"],
        ["log", "paused", "-v"],
        ["show", head],
        ["export", "paused"],
        ["verify-lineage"],
    ):
        for extra in ([], ["--json"]):
            done = wfctl(*args, *extra, "--store", url, cwd=modules, env=env, timeout=60)
            assert done.code in (0, 1), done
            assert "Traceback" not in done.stderr
    assert not planted.exists()
    assert not planted.with_suffix(".imported").exists()
    shown = wfctl("show", head, "--store", url, "--json").json()["record"]["data"]
    assert shown["checkpoint"]["channel_values"]["log"]["$opaque"] == "pickle"
