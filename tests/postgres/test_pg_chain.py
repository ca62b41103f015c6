"""The PostgreSQL store's records and chain rules, through a real private server (never mocked).

Every chain rule the file store enforces is refused here too, by the class and by the database
itself: a raw ``INSERT`` over a plain connection cannot fork, gap or re-root a chain.
"""

from __future__ import annotations

import subprocess
import sys
from dataclasses import replace
from typing import Any

import psycopg
import pytest

from tests.postgres.conftest import opened
from tests.storage.helpers import arun, ckpt
from wfctl._errors import (
    CheckpointCorruptError,
    CheckpointNotFoundError,
    RunLockedError,
    RunNotFoundError,
    StoreLocationError,
)
from wfctl._storage._journal import encode_record
from wfctl._storage._postgres import PostgresCheckpointStorage
from wfctl._storage._postgres._schema import SCHEMA_VERSION
from wfctl.storage import InMemoryCheckpointStorage, RunStore, open_storage
from wfctl.storage.testing import PrivateServer


def test_open_storage_builds_a_run_store_without_connecting() -> None:
    store = open_storage("postgresql://nobody:secret@localhost:1/none")
    assert isinstance(store, PostgresCheckpointStorage)
    assert isinstance(store, RunStore)
    assert store.location == "postgresql://nobody:***@localhost:1/none"


def test_saves_and_reads_round_trip_with_the_file_journal_bytes(pg_url: str) -> None:
    async def main() -> None:
        async with opened(pg_url) as store:
            lease = await store.lease_run("r1")
            saved = [ckpt("r1", 0, data={"x": "é" * 100}), ckpt("r1", 1), ckpt("r1", 2, "pause")]
            for checkpoint in saved:
                await store.save(checkpoint)
            assert await store.list_checkpoints(run_id="r1") == saved
            assert await store.list_checkpoint_ids() == ["r1.0", "r1.1", "r1.2"]
            assert await store.load("r1.1") == saved[1]
            assert await store.get_latest() == saved[2]
            assert await store.get_latest(run_id="r1") == saved[2]
            assert await store.get_latest(workflow_name="other") is None
            journal = await store.read_run("r1")
            assert list(journal.checkpoints) == saved and not journal.problems
            summary = await store.run_summary("r1")
            assert (summary.status, summary.head_seq) == (
                "interrupted",
                2,
            )  # a pause with nothing to answer
            with pytest.raises(CheckpointNotFoundError):
                await store.load("r1.3")
            with pytest.raises(RunNotFoundError):
                await store.read_run("nope")
            await lease.release()
        # The rows hold the file journal's lines (without the newline), checksum included.
        with psycopg.connect(pg_url) as conn:
            rows = conn.execute("SELECT record FROM wfctl_checkpoints ORDER BY seq").fetchall()
        assert [bytes(r[0]) + b"\n" for r in rows] == [encode_record(c) for c in saved]

    arun(main())


def test_a_save_without_the_lease_is_refused_and_stores_nothing(pg_url: str) -> None:
    async def main() -> None:
        async with opened(pg_url) as store:
            with pytest.raises(CheckpointCorruptError, match="holds no lease on the run"):
                await store.save(ckpt("r1", 0))
            lease = await store.lease_run("r1")
            await store.save(ckpt("r1", 0))
            await lease.release()
            with pytest.raises(CheckpointCorruptError, match="holds no lease on the run"):
                await store.save(ckpt("r1", 1))
            assert await store.list_checkpoint_ids() == ["r1.0"]

    arun(main())


@pytest.mark.parametrize(
    ("checkpoints", "message"),
    [
        ([ckpt("r1", 1)], r"has no checkpoints yet \(expected seq 0, the root\)"),
        ([ckpt("r1", 0), ckpt("r1", 0)], r"the run already exists \(its head is seq 0\)"),
        ([ckpt("r1", 0), ckpt("r1", 1), ckpt("r1", 1)], r"its head is seq 1 .*expected seq 2"),
        ([ckpt("r1", 0), ckpt("r1", 2)], r"its head is seq 0 .*expected seq 1"),
        ([ckpt("r1", 0), ckpt("r1", 1, "root")], "seq 0 must be the run's only root record"),
        ([ckpt("r1", 0, "step")], "seq 0 must be the run's only root record"),
        ([ckpt("r1", 0), ckpt("r1", 1, parent="r1.7")], r"its head is seq 0 \(r1.0\)"),
    ],
    ids=["no-root", "second-root", "fork", "gap", "root-later", "step-first", "wrong-parent"],
)
def test_every_chain_rule_is_refused_as_the_other_stores_refuse_it(
    pg_url: str, checkpoints: list[Any], message: str
) -> None:
    async def attempt(store: Any) -> str:
        for checkpoint in checkpoints[:-1]:
            await store.save(checkpoint)
        with pytest.raises(CheckpointCorruptError, match=message) as refused:
            await store.save(checkpoints[-1])
        return refused.value.reason

    async def main() -> None:
        async with opened(pg_url) as store:
            lease = await store.lease_run("r1")
            reason = await attempt(store)
            kept = await store.list_checkpoint_ids()
            await lease.release()
        assert reason == await attempt(InMemoryCheckpointStorage())  # the same words
        assert kept == [c.checkpoint_id for c in checkpoints[:-1]]

    arun(main())


def _raw_insert(url: str, checkpoint: Any, fence: Any) -> None:
    with psycopg.connect(url, autocommit=True) as conn:
        _insert_row(conn, checkpoint, fence)


def _insert_row(conn: psycopg.Connection[Any], checkpoint: Any, fence: Any) -> None:
    """Insert ``checkpoint``'s row as any client could, bypassing the store."""
    conn.execute(
        "INSERT INTO wfctl_checkpoints"
        " (run_id, seq, kind, prev, workflow_name, ts, fence, record)"
        " VALUES (%s, %s, %s, %s, %s, %s, %s, %s)",
        (
            checkpoint.run_id,
            checkpoint.seq,
            str(checkpoint.kind),
            checkpoint.previous_checkpoint_id,
            checkpoint.workflow_name,
            checkpoint.timestamp,
            fence,
            encode_record(checkpoint)[:-1],
        ),
    )


def test_the_database_refuses_a_fork_gap_root_or_stale_fence_from_raw_inserts(
    pg_url: str,
) -> None:
    async def main() -> int:
        async with opened(pg_url) as store:
            lease = await store.lease_run("r1")
            await store.save(ckpt("r1", 0))
            await store.save(ckpt("r1", 1))
            fence: int = lease.fence  # type: ignore[attr-defined]
            await lease.release()
            return fence

    fence = arun(main())
    cases = [
        (ckpt("r1", 1), fence, "wfctl:head:1"),  # fork: a second seq 1
        (ckpt("r1", 3), fence, "wfctl:head:1"),  # gap
        (ckpt("r1", 2, "root"), fence, "wfctl:head:1"),  # a second root
        (ckpt("r1", 2, parent="r1.0"), fence, "wfctl:head:1"),  # a parent that is not the head
        (ckpt("r1", 2), fence - 1, "wfctl:fence"),  # a stale writer
        (ckpt("r1", 2), None, "wfctl:fence"),  # no fence at all
        (ckpt("r9", 0), fence, "wfctl:nolease"),  # a run nobody leased
    ]
    for checkpoint, stamp, message in cases:
        with pytest.raises(psycopg.errors.RaiseException, match=message):
            _raw_insert(pg_url, checkpoint, stamp)
    _raw_insert(pg_url, ckpt("r1", 2), fence)  # the next link under the current fence is fine
    with psycopg.connect(pg_url, autocommit=True) as conn:
        with pytest.raises(psycopg.errors.RaiseException, match="wfctl:relink"):
            conn.execute("UPDATE wfctl_checkpoints SET seq = 5 WHERE run_id = 'r1' AND seq = 2")
        seqs = conn.execute("SELECT seq FROM wfctl_checkpoints ORDER BY seq").fetchall()
        head = conn.execute("SELECT head_seq FROM wfctl_runs WHERE run_id = 'r1'").fetchone()
    assert [s[0] for s in seqs] == [0, 1, 2] and head == (2,)


def test_the_heads_compare_and_set_is_a_hot_update_after_the_root(
    pg_server: PrivateServer,
) -> None:
    """The append trigger rewrites the run's row at every checkpoint; after the root (which
    sets the indexed ``created``) that rewrite is HOT: no index entry, the row's new version in
    the same page. That is what keeps the trigger's share of a step's server time small
    (bench/pg_append.py). Counted in a database of its own, where only this test writes."""
    with psycopg.connect(pg_server.url, autocommit=True) as admin:
        admin.execute("DROP DATABASE IF EXISTS wfctl_hot WITH (FORCE)")
        admin.execute("CREATE DATABASE wfctl_hot")
    url = replace(pg_server, dbname="wfctl_hot").url
    try:

        async def create_schema() -> None:
            async with opened(url) as store:
                await store.list_runs()

        arun(create_schema())
        with psycopg.connect(url, autocommit=True) as conn:
            granted = conn.execute(
                "INSERT INTO wfctl_runs (run_id, fence) VALUES ('r1', nextval('wfctl_fence'))"
                " RETURNING fence"
            ).fetchone()
            assert granted is not None
            for seq in range(20):
                _insert_row(conn, ckpt("r1", seq), granted[0])
            conn.execute("SELECT pg_stat_force_next_flush()")  # flushed before the next query
            counts = conn.execute(
                "SELECT n_tup_upd, n_tup_hot_upd FROM pg_stat_user_tables"
                " WHERE relname = 'wfctl_runs'"
            ).fetchone()
    finally:
        with psycopg.connect(pg_server.url, autocommit=True) as admin:
            admin.execute("DROP DATABASE wfctl_hot WITH (FORCE)")
    assert counts == (20, 19)


def test_a_corrupt_record_is_reported_and_lists_the_run_as_corrupt(pg_url: str) -> None:
    async def main() -> None:
        async with opened(pg_url) as store:
            lease = await store.lease_run("r1")
            for seq in range(3):
                await store.save(ckpt("r1", seq))
            await lease.release()
            other = await store.lease_run("r2")
            await store.save(ckpt("r2", 0))
            await other.release()
            with psycopg.connect(pg_url, autocommit=True) as conn:
                conn.execute(
                    "UPDATE wfctl_checkpoints SET record = convert_to(replace("
                    "convert_from(record, 'UTF8'), '\"n\":1', '\"n\":7'), 'UTF8')"
                    " WHERE run_id = 'r1' AND seq = 1"
                )
            journal = await store.read_run("r1")  # never raises for a corrupt record
            assert [c.seq for c in journal.checkpoints] == [0, 2]
            [problem] = journal.problems
            assert problem.line == 2 and "checksum mismatch" in problem.reason
            runs = {s.run_id: s for s in await store.list_runs()}
            assert runs["r1"].status == "corrupt" and "checksum mismatch" in str(runs["r1"].problem)
            assert runs["r2"].status == "interrupted"
            assert (await store.run_summary("r1")).status == "corrupt"
            with pytest.raises(CheckpointCorruptError, match="checksum mismatch"):
                await store.load("r1.0")

    arun(main())


def test_a_head_that_disagrees_with_the_records_is_a_problem(pg_url: str) -> None:
    async def main() -> None:
        async with opened(pg_url) as store:
            lease = await store.lease_run("r1")
            for seq in range(3):
                await store.save(ckpt("r1", seq))
            await lease.release()
            with psycopg.connect(pg_url, autocommit=True) as conn:
                conn.execute("DELETE FROM wfctl_checkpoints WHERE run_id = 'r1' AND seq = 2")
            journal = await store.read_run("r1")
            assert [str(p) for p in journal.problems] == [
                f"{store.location} run r1: the run's head is seq 2 but it holds 2 records "
                "(seq 0..1)"
            ]
            assert (await store.run_summary("r1")).status == "corrupt"
            with psycopg.connect(pg_url, autocommit=True) as conn:
                conn.execute("DELETE FROM wfctl_checkpoints WHERE run_id = 'r1'")
            # Every record gone: still listed, as corrupt, never silently dropped.
            [summary] = await store.list_runs()
            assert summary.status == "corrupt" and "holds no records" in str(summary.problem)
            journal = await store.read_run("r1")
            assert not journal.checkpoints and len(journal.problems) == 1
            with pytest.raises(CheckpointCorruptError, match="holds no records"):
                await store.list_checkpoints()

    arun(main())


def test_cuts_and_deletions_refuse_a_leased_run(pg_url: str) -> None:
    async def main() -> None:
        async with opened(pg_url) as store:
            lease = await store.lease_run("r1")
            for seq in range(4):
                await store.save(ckpt("r1", seq))
            with pytest.raises(RunLockedError, match=r"pid \d+ on host"):
                await store.delete("r1.2")
            removed, locked = await store.delete_runs(["r1"])
            assert removed == [] and [e.run_id for e in locked] == ["r1"]
            await lease.release()
            assert await store.delete("r1.2") is True
            assert await store.delete("r1.5") is False
            assert await store.list_checkpoint_ids() == ["r1.0", "r1.1"]
            lease = await store.lease_run("r1")
            await store.save(ckpt("r1", 2, "completed"))  # the cut head is the head
            await lease.release()
            assert (await store.run_summary("r1")).status == "completed"
            assert await store.delete_runs(["r1", "r2"]) == (["r1"], [])
            assert await store.list_runs() == []
            with pytest.raises(RunNotFoundError):
                await store.request_pause("r1")

    arun(main())


def test_a_newer_schema_is_refused_with_one_line(pg_url: str) -> None:
    async def main() -> None:
        async with opened(pg_url) as store:
            await store.list_runs()  # creates the schema if this is the first test
        with psycopg.connect(pg_url, autocommit=True) as conn:
            conn.execute("UPDATE wfctl_schema SET version = 99")
        try:
            async with opened(pg_url) as store:
                with pytest.raises(StoreLocationError, match="schema version 99") as refused:
                    await store.list_runs()
            assert "\n" not in str(refused.value)
        finally:
            with psycopg.connect(pg_url, autocommit=True) as conn:
                conn.execute("UPDATE wfctl_schema SET version = %s", (SCHEMA_VERSION,))

    arun(main())


def test_an_unreachable_server_is_one_clear_line() -> None:
    async def main() -> None:
        async with opened("postgresql://nobody@/none?host=/nonexistent&port=1") as store:
            with pytest.raises(StoreLocationError, match="cannot be reached") as refused:
                await store.list_runs()
        assert "\n" not in str(refused.value)

    arun(main())


def test_without_the_postgres_extra_a_url_is_refused_with_one_line() -> None:
    code = (
        "import sys\n"
        "sys.modules['psycopg'] = None  # as if the extra were not installed\n"
        "from wfctl._errors import WfctlError\n"
        "from wfctl.storage import open_storage\n"
        "try:\n"
        "    open_storage('postgresql://localhost/db')\n"
        "except WfctlError as exc:\n"
        "    print(exc)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.startswith("a postgresql:// store needs the postgres extra: pip install")
    assert done.stdout.count("\n") == 1
