"""The schema's claimable flag and its index, and the upgrade of older databases to them.

A worker's claim reads ``wfctl_runs`` through a partial index of the runs it may take over, kept
by the append trigger from each head's structure (never from text inside the data); a database
that an older wfctl created (schema version 1, 2 or 3, in ``tests/fixtures/postgres/``) is
upgraded on first use, its runs' flags set from their heads, and can hold a cancel request.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest

from tests.cli.conftest import wfctl
from tests.postgres.conftest import opened
from tests.storage.helpers import arun, ckpt
from wfctl._errors import StoreLocationError
from wfctl._records._checkpoint import Checkpoint
from wfctl._records._payloads import HANDOFF, CancelRequest
from wfctl._storage._journal import encode_record
from wfctl._storage._postgres import _sql
from wfctl._storage._postgres._schema import SCHEMA_VERSION
from wfctl.storage.testing import PrivateServer

FIXTURES = Path(__file__).parents[1] / "fixtures" / "postgres"


def _pause(reason: str) -> dict[str, Any]:
    return {"requests": [], "reason": reason}


#: Runs whose heads cover every kind, oldest first: run id -> its records' kinds and data.
_RUNS: dict[str, list[tuple[str, dict[str, Any] | None]]] = {
    "queued": [("root", None)],
    "stepping": [("root", None), ("step", None)],
    "resumed": [("root", None), ("pause", _pause("interrupt")), ("resume", None)],
    "handed": [("root", None), ("pause", _pause(HANDOFF))],
    "asking": [
        ("root", None),
        ("pause", {"requests": [{"request_id": "q", "data": None}], "reason": "request"}),
    ],
    # Paused for an answer whose request data holds the words of a hand-over.
    "decoy": [
        ("root", None),
        ("pause", {"requests": [{"request_id": "q", "data": {"reason": HANDOFF}}], "reason": "x"}),
    ],
    "done": [("root", None), ("step", None), ("completed", None)],
    "broke": [("root", None), ("failed", None)],
}
#: The runs among them a worker may take over.
_CLAIMABLE = {"queued", "stepping", "resumed", "handed"}


def _checkpoints(run_id: str, minute: int) -> list[Checkpoint]:
    return [
        ckpt(run_id, seq, kind, data=data, minute=minute)
        for seq, (kind, data) in enumerate(_RUNS[run_id])
    ]


def _flags(url: str) -> dict[str, bool]:
    with psycopg.connect(url, autocommit=True) as conn:
        rows = conn.execute("SELECT run_id, claimable FROM wfctl_runs").fetchall()
    return {str(run_id): bool(flag) for run_id, flag in rows}


def _version(url: str) -> int:
    with psycopg.connect(url, autocommit=True) as conn:
        row = conn.execute("SELECT max(version) FROM wfctl_schema").fetchone()
    assert row is not None
    return int(row[0])


def _has_prefix_index(url: str) -> bool:
    with psycopg.connect(url, autocommit=True) as conn:
        row = conn.execute(
            "SELECT count(*) FROM pg_indexes WHERE indexname = 'wfctl_runs_prefix'"
        ).fetchone()
    return row is not None and row[0] == 1


def _old_database(server: PrivateServer, version: int) -> Iterator[str]:
    """A new database holding schema ``version`` and the runs of ``_RUNS``, written through it."""
    name = f"wfctl_schema_v{version}"
    with psycopg.connect(server.url, autocommit=True) as conn:
        conn.execute(f"DROP DATABASE IF EXISTS {name}")
        conn.execute(f"CREATE DATABASE {name}")
    url = server.url.replace(f"/{server.dbname}?", f"/{name}?")
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute((FIXTURES / f"schema_v{version}.sql").read_bytes())
        for minute, run_id in enumerate(_RUNS):
            # As that wfctl writes them: the lease's grant, then each record through its
            # append trigger (version 1 knows nothing of the claimable flag; version 2 sets it
            # by a text test).
            row = conn.execute(
                "INSERT INTO wfctl_runs (run_id, fence) VALUES (%s, nextval('wfctl_fence'))"
                " RETURNING fence",
                (run_id,),
            ).fetchone()
            assert row is not None
            for c in _checkpoints(run_id, minute):
                conn.execute(
                    "INSERT INTO wfctl_checkpoints (run_id, seq, kind, prev, workflow_name, ts,"
                    " fence, record) VALUES (%s, %s, %s, %s, %s, %s, %s, %s)",
                    (
                        c.run_id,
                        c.seq,
                        c.kind.value,
                        c.previous_checkpoint_id,
                        c.workflow_name,
                        c.timestamp,
                        row[0],
                        encode_record(c)[:-1],
                    ),
                )
    assert _version(url) == version
    yield url
    with psycopg.connect(server.url, autocommit=True) as conn:
        conn.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")


@pytest.fixture
def v1_url(pg_server: PrivateServer) -> Iterator[str]:
    """A new database holding schema version 1 and the runs of ``_RUNS``, written through it."""
    yield from _old_database(pg_server, 1)


@pytest.fixture
def v2_url(pg_server: PrivateServer) -> Iterator[str]:
    """A new database holding schema version 2 and the runs of ``_RUNS``, written through it."""
    yield from _old_database(pg_server, 2)


@pytest.fixture
def v3_url(pg_server: PrivateServer) -> Iterator[str]:
    """A new database holding schema version 3 and the runs of ``_RUNS``, written through it."""
    yield from _old_database(pg_server, 3)


def test_the_claimable_flag_follows_each_run_s_head(pg_url: str) -> None:
    async def main() -> None:
        async with opened(pg_url) as store:
            for minute, run_id in enumerate(_RUNS):
                lease = await store.lease_run(run_id)
                for checkpoint in _checkpoints(run_id, minute):
                    await store.save(checkpoint)
                await lease.release()
            assert _flags(pg_url) == {run_id: run_id in _CLAIMABLE for run_id in _RUNS}
            # A cut moves the head back, and the flag with it.
            assert await store.delete("done.2") is True
            assert await store.delete("handed.1") is True
            flags = _flags(pg_url)
            assert (flags["done"], flags["handed"]) == (True, True)
            lease = await store.lease_run("done")
            await store.save(ckpt("done", 2, "completed", minute=5))
            await lease.release()
            assert _flags(pg_url)["done"] is False

    arun(main())


def _claim_plan(url: str, skip: list[str]) -> tuple[list[Any], set[str]]:
    """The claim query's rows, and the tables its plan reads."""
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("ANALYZE wfctl_runs")
        rows = conn.execute(_sql.CLAIMABLE.encode(), (skip,)).fetchall()
        row = conn.execute(b"EXPLAIN (FORMAT JSON) " + _sql.CLAIMABLE.encode(), (skip,)).fetchone()
    assert row is not None
    plan = row[0] if isinstance(row[0], list) else json.loads(row[0])
    return rows, {str(node.get("Relation Name")) for node in _plan_nodes(plan[0]["Plan"])}


def test_a_claim_passes_over_a_pause_whose_data_holds_a_hand_over_s_words_reading_no_record(
    pg_url: str,
) -> None:
    """Claimability is the head's structure: request data that reads like a hand-over leaves
    the run unclaimable, and a claim never reads (nor decodes) any record, on every poll."""

    async def main() -> None:
        async with opened(pg_url) as store:
            for minute, run_id in enumerate(("decoy", "handed")):
                lease = await store.lease_run(run_id)
                for checkpoint in _checkpoints(run_id, minute):
                    await store.save(checkpoint)
                await lease.release()
            assert _flags(pg_url) == {"decoy": False, "handed": True}
            rows, tables = _claim_plan(pg_url, ["handed"])
            assert rows == []  # not a candidate: nothing to decode and pass over
            assert "wfctl_checkpoints" not in tables, tables
            claimed = await store.claim_run()
            assert claimed is not None and claimed.run_id == "handed"
            assert await store.claim_run() is None
            await claimed.release()

    arun(main())


def _plan_nodes(plan: dict[str, Any]) -> Iterator[dict[str, Any]]:
    yield plan
    for child in plan.get("Plans", []):
        yield from _plan_nodes(child)


def test_a_claim_reads_the_runs_it_may_take_not_every_run(pg_url: str) -> None:
    """With many ended runs and one queued, the claim's plan reads the claimable index only."""

    async def main() -> None:
        async with opened(pg_url) as store:
            for i in range(200):
                run_id = f"ended-{i:03d}"
                lease = await store.lease_run(run_id)
                await store.save(ckpt(run_id, 0, minute=0))
                await store.save(ckpt(run_id, 1, "completed", minute=0))
                await lease.release()
            lease = await store.lease_run("waiting")
            await store.save(ckpt("waiting", 0, minute=1))
            await lease.release()
            with psycopg.connect(pg_url, autocommit=True) as conn:
                conn.execute("ANALYZE wfctl_runs")
                row = conn.execute(
                    b"EXPLAIN (FORMAT JSON) " + _sql.CLAIMABLE.encode(), ([],)
                ).fetchone()
            assert row is not None
            plan = row[0] if isinstance(row[0], list) else json.loads(row[0])
            scans = [
                (node["Node Type"], node.get("Index Name"))
                for node in _plan_nodes(plan[0]["Plan"])
                if node.get("Relation Name") == "wfctl_runs"
            ]
            assert scans == [("Index Scan", "wfctl_runs_claimable")], scans
            claimed = await store.claim_run()
            assert claimed is not None and claimed.run_id == "waiting"
            await claimed.release()

    arun(main())


@pytest.mark.parametrize("version", [1, 2, 3])
def test_an_older_database_is_upgraded_on_first_use(
    version: int, request: pytest.FixtureRequest
) -> None:
    url: str = request.getfixturevalue(f"v{version}_url")
    if version == 2:  # its text test took the decoy's request data for a hand-over
        assert _flags(url)["decoy"] is True

    async def main() -> None:
        async with opened(url) as store:
            statuses = {s.run_id: s.status for s in await store.list_runs()}
            assert _version(url) == SCHEMA_VERSION == 5
            assert _has_prefix_index(url)  # a run id's start is looked up in it (version 5)
            newest = await store.run_ids_starting("", 100)
            assert newest == (sorted(_RUNS), len(_RUNS))
            assert _flags(url) == {run_id: run_id in _CLAIMABLE for run_id in _RUNS}
            assert statuses == {
                "queued": "interrupted",
                "stepping": "interrupted",
                "resumed": "interrupted",
                "handed": "interrupted",
                "asking": "paused",
                "decoy": "paused",
                "done": "completed",
                "broke": "failed",
            }
            for minute, run_id in enumerate(_RUNS):  # every record as written, checksums too
                assert await store.load_chain(run_id) == _checkpoints(run_id, minute)
            claimed = []
            while (taken := await store.claim_run()) is not None:
                claimed.append(taken)
            # Oldest first, and only those.
            assert [t.run_id for t in claimed] == ["queued", "stepping", "resumed", "handed"]
            for taken in claimed:
                await taken.release()
            # The upgraded trigger keeps the flag: a run appended to after the upgrade.
            lease = await store.lease_run("asking")
            await store.save(ckpt("asking", 2, "resume", minute=4))
            await lease.release()
            assert _flags(url)["asking"] is True
            # A cancel request (schema version 4) is kept beside the pause request.
            asked = CancelRequest("ann@host (pid 1)", "2026-12-06T06:00:00+00:00", "why")
            await store.request_cancel("stepping", asked)
            assert await store.cancel_request("stepping") == asked
            await store.clear_pause("stepping")
            assert await store.cancel_request("stepping") is None

    arun(main())


def test_an_upgrade_the_server_refuses_is_one_line_and_changes_nothing(
    v1_url: str, pg_server: PrivateServer
) -> None:
    with psycopg.connect(v1_url, autocommit=True) as conn:
        conn.execute("DROP ROLE IF EXISTS wfctl_reader")
        conn.execute("CREATE ROLE wfctl_reader LOGIN")
        conn.execute("GRANT SELECT ON ALL TABLES IN SCHEMA public TO wfctl_reader")
    reader = v1_url.replace(f"{pg_server.user}@", "wfctl_reader@")
    try:

        async def main() -> None:
            async with opened(reader) as store:
                with pytest.raises(StoreLocationError) as refused:
                    await store.list_runs()
            text = str(refused.value)
            assert "\n" not in text
            assert "holds wfctl schema version 1; upgrading it to version 5 was refused" in text
            assert "as a user who may alter its tables" in text

        arun(main())
        done = wfctl("runs", "--store", reader, "--json")
        assert done.code == 2, done
        assert done.stdout == ""
        lines = done.stderr.strip().splitlines()
        assert len(lines) == 1 and "upgrading it to version 5 was refused" in lines[0], lines
        assert _version(v1_url) == 1
        with psycopg.connect(v1_url, autocommit=True) as conn:
            row = conn.execute(
                "SELECT count(*) FROM information_schema.columns"
                " WHERE table_name = 'wfctl_runs' AND column_name = 'claimable'"
            ).fetchone()
        assert row == (0,)
    finally:
        with psycopg.connect(v1_url, autocommit=True) as conn:
            conn.execute("REVOKE ALL ON ALL TABLES IN SCHEMA public FROM wfctl_reader")
            conn.execute("DROP OWNED BY wfctl_reader")
        with psycopg.connect(pg_server.url, autocommit=True) as conn:
            conn.execute("DROP DATABASE IF EXISTS wfctl_schema_v1 WITH (FORCE)")
            conn.execute("DROP ROLE IF EXISTS wfctl_reader")


def test_a_schema_version_no_wfctl_wrote_is_refused_with_one_line(v1_url: str) -> None:
    with psycopg.connect(v1_url, autocommit=True) as conn:
        conn.execute("UPDATE wfctl_schema SET version = 0")

    async def main() -> None:
        async with opened(v1_url) as store:
            with pytest.raises(StoreLocationError, match="schema version 0, which no wfctl wrote"):
                await store.list_runs()

    arun(main())
    assert _version(v1_url) == 0
