"""The DBOS PostgreSQL reader (schema ``dbos``) holds to the read port's conformance suite on a
database the real DBOS wrote on the private server, and is found from a plain
``postgresql://`` URL when the database holds DBOS's tables only."""

from __future__ import annotations

from collections.abc import Callable, Iterator

import psycopg
import pytest

from tests.cli.conftest import wfctl
from tests.langgraph.conftest import table_digest
from tests.langgraph.stores import fresh_url
from wfctl.sources import Source, open_source
from wfctl.sources.testing import SourceConformance
from wfctl.storage.testing import PrivateServer


class TestDbosPostgres(SourceConformance):
    statuses = frozenset({"completed", "failed", "unknown"})
    forks = True
    unknown_record_id = "no-such-workflow.1"

    @pytest.fixture
    def source_under_test(self, dbos_pg: str) -> Iterator[Source]:
        with open_source(f"dbos+{dbos_pg}") as source:
            assert source.kind == "dbos-postgresql"
            yield source

    @pytest.fixture
    def store_digest(self, dbos_pg: str) -> Callable[[], str]:
        return lambda: table_digest(dbos_pg, "dbos")

    @pytest.fixture
    def big_run(self, dbos_long_pg: str) -> Iterator[tuple[Source, str, int]]:
        with open_source(f"dbos+{dbos_long_pg}") as source:
            (size,) = source.sizes("long")
            yield source, "long", size.size_bytes


def test_the_same_workflows_as_on_sqlite(dbos_pg: str) -> None:
    with open_source(f"dbos+{dbos_pg}") as source:
        listed = {r.run_id: r for r in source.runs()}
        assert {"wf-parent", "wf-failing", "wf-pending"} <= set(listed)
        assert len(listed) == 4  # and the fork; the children are nested
        assert listed["wf-parent"].record_count == 11
        ids = [e.entry_id for e in source.records("wf-parent")]
        assert ids[3] == "wf-parent-3.1"
        report = source.verify()
        assert report.ok
        # waiting in recv with a timeout: DBOS wrote the timeout's sleep (3), not the recv (2)
        (pending,) = [v for v in report.runs if v.run_id == "wf-pending"]
        assert pending.notes == (
            "workflow wf-pending: no step 2 yet (PENDING: in flight when the store was read)",
        )


def test_a_plain_url_is_detected_by_its_tables(dbos_pg: str, pg_server: PrivateServer) -> None:
    listed = wfctl("runs", "--store", dbos_pg, "--json", timeout=60)
    assert listed.code == 0, listed
    assert listed.json()["source"] == "dbos-postgresql"
    both = fresh_url(pg_server.url, "dbos_and_wfctl")
    with psycopg.connect(both, autocommit=True) as conn:
        conn.execute("CREATE SCHEMA dbos")
        for table in ("workflow_status", "operation_outputs", "dbos_migrations"):
            conn.execute(f"CREATE TABLE dbos.{table} (workflow_uuid text)")
        conn.execute("CREATE TABLE wfctl_runs (run_id text)")
    done = wfctl("runs", "--store", both, timeout=60)
    assert done.code == 2 and done.stdout == ""
    assert "holds both wfctl's store and DBOS's system tables" in done.error_line()
    assert "dbos+postgresql://" in done.error_line()


def test_runs_come_in_the_order_asked_from_its_sql(dbos_pg: str) -> None:
    with open_source(f"dbos+{dbos_pg}") as source:
        oldest = sorted(source.runs(), key=lambda i: (i.created_at, i.run_id))
        assert list(source.runs_by_created(newest_first=False)) == oldest  # type: ignore[attr-defined]
        assert list(source.runs_by_created(newest_first=True)) == oldest[::-1]  # type: ignore[attr-defined]
    done = wfctl("runs", "--store", f"dbos+{dbos_pg}", "--json")
    assert done.code == 0, done
    assert [r["run_id"] for r in done.json()["runs"]] == [i.run_id for i in oldest[::-1]]
