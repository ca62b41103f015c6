"""``copy`` between a file store and PostgreSQL reads each run a record (or a page) at a time:
a long run goes there and back byte for byte, an earlier copy cut short is completed, and a
copy already made is recognised, each read a page of records a statement. A copy killed part
way, either way, leaves no run in the destination."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import psycopg
import pytest

from tests.cli.conftest import wfctl
from tests.cli.test_copy import ChangedWhileRead, other_json
from tests.cli.test_copy_killed import (
    assert_copied_whole,
    assert_no_run_there,
    file_written,
    kill_once,
    long_store,
    start_copy,
)
from tests.conftest import arun
from tests.postgres.conftest import opened
from wfctl import FileCheckpointStorage, step, workflow
from wfctl._inspect._copy import CopyOutcome, _copy, copy_runs
from wfctl._storage import _pages
from wfctl._storage._postgres import PostgresCheckpointStorage
from wfctl._storage._postgres import _copying as _pg_copying

STEPS = 300


@step
async def square(i: int) -> int:
    return i * i


@workflow(name="pg_copied")
async def pg_copied(n: int) -> int:
    total = 0
    for i in range(n):
        total += await square(i)
    return total


def _journal(store: Path, run_id: str) -> bytes:
    return (store / "runs" / run_id / "journal.jsonl").read_bytes()


def test_a_long_run_goes_to_postgres_and_back_byte_for_byte(
    pg_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(_pages, "PAGE_RECORDS", 64)
    pages = {"n": 0}
    real = PostgresCheckpointStorage.chain_page

    async def counted(self: Any, *args: Any) -> list[bytes]:
        pages["n"] += 1
        page: list[bytes] = await real(self, *args)
        return page

    monkeypatch.setattr(PostgresCheckpointStorage, "chain_page", counted)
    files = FileCheckpointStorage(tmp_path / "files", durability="none")
    try:
        run_id = arun(pg_copied.build(checkpoint_storage=files).run(STEPS)).run_id
    finally:
        files.close()
    records = STEPS + 2  # the root, the steps and the end
    per_read = -(-records // 64)  # pages of one read of the run

    [there] = copy_runs(tmp_path / "files", pg_url).runs
    assert (there.outcome, there.checkpoint_count, there.written_count) == (
        CopyOutcome.COPIED,
        records,
        records,
    )
    assert pages["n"] == 0  # nothing there to compare; read back in the copy's transaction

    pages["n"] = 0
    [back] = copy_runs(pg_url, tmp_path / "back").runs
    assert back.outcome == CopyOutcome.COPIED
    assert pages["n"] == per_read  # the source
    assert _journal(tmp_path / "back", run_id) == _journal(tmp_path / "files", run_id)

    pages["n"] = 0
    [again] = copy_runs(tmp_path / "files", pg_url).runs
    assert (again.outcome, again.written_count) == (CopyOutcome.ALREADY_COPIED, 0)
    assert pages["n"] == per_read  # what the destination holds, compared as it is read

    async def cut() -> None:
        async with opened(pg_url) as store:
            assert await store.delete(f"{run_id}.100")  # an earlier copy, cut short

    arun(cut())
    [completed] = copy_runs(tmp_path / "files", pg_url).runs
    assert (completed.outcome, completed.written_count) == (CopyOutcome.COPIED, records - 100)
    pages["n"] = 0
    [back_again] = copy_runs(pg_url, tmp_path / "back").runs
    assert back_again.outcome == CopyOutcome.ALREADY_COPIED


# -- a copy killed part way, to and from PostgreSQL ------------------------------------------


def _schema(url: str) -> None:
    async def listed() -> None:
        async with opened(url) as store:
            await store.list_runs()  # creates the schema

    arun(listed())


def _gate(url: str, run_id: str, seq: int) -> psycopg.Connection[Any]:
    """Hold an uncommitted row at ``(run_id, seq)`` (the append trigger not fired for it): a
    copy's insert of that record waits for this connection's transaction to end."""
    conn = psycopg.connect(url)  # a transaction, left open
    conn.execute("SET session_replication_role = replica")
    conn.execute(
        "INSERT INTO wfctl_checkpoints (run_id, seq, kind, prev, workflow_name, ts, fence, record)"
        " VALUES (%s, %s, 'step', NULL, 'wf', 'gate', 0, 'gate')",
        (run_id, seq),
    )
    return conn


def _backends(url: str, *, waiting: bool = False) -> int:
    """The other client sessions of the database (``waiting``: those waiting for a lock)."""
    with psycopg.connect(url, autocommit=True) as conn:
        row = conn.execute(
            "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database()"
            " AND pid <> pg_backend_pid() AND backend_type = 'client backend'"
            " AND (NOT %s OR wait_event_type = 'Lock')",
            (waiting,),
        ).fetchone()
    assert row is not None
    return int(row[0])


def _committed(url: str, run_id: str) -> int:
    with psycopg.connect(url, autocommit=True) as conn:
        row = conn.execute(
            "SELECT count(*) FROM wfctl_checkpoints WHERE run_id = %s", (run_id,)
        ).fetchone()
    assert row is not None
    return int(row[0])


def _claimed(url: str) -> str | None:
    async def claim() -> str | None:
        async with opened(url) as store:
            lease = await store.claim_run()
            if lease is None:
                return None
            await lease.release()
            return lease.run_id

    return arun(claim())


def test_a_copy_killed_part_way_into_postgres_leaves_no_run(pg_url: str, tmp_path: Path) -> None:
    records = 2_500
    source = long_store(tmp_path / "source", records)
    _schema(pg_url)
    gate = _gate(pg_url, "long", 1_500)
    try:
        # Killed while its insert of record 1,500 waits for the gate: the first 1,000 records
        # are committed (a statement of 1,000), the next 500 sent (that statement commits once
        # the gate is gone: the server sees the copy gone only when it answers).
        kill_once(start_copy(source, pg_url), lambda: _backends(pg_url, waiting=True) > 0)
    finally:
        gate.rollback()
        gate.close()
    deadline = time.monotonic() + 60
    while _backends(pg_url):  # the killed copy's sessions end (its transaction with them)
        assert time.monotonic() < deadline
        time.sleep(0.01)

    assert_no_run_there(pg_url, "long")
    assert _claimed(pg_url) is None
    assert _committed(pg_url, "long") in (1_000, 2_000)  # there, and seen by nothing
    assert wfctl("gc", "--store", pg_url).code == 0  # nothing to remove but what it left
    assert _committed(pg_url, "long") == 0
    assert_copied_whole(source, pg_url, "long", records)
    back = tmp_path / "back"
    assert wfctl("copy", "--from", pg_url, "--to", back).code == 0
    assert _journal(back, "long") == _journal(source, "long")


def test_a_copy_killed_part_way_from_postgres_leaves_no_run(pg_url: str, tmp_path: Path) -> None:
    records = 20_000
    files = long_store(tmp_path / "files", records)
    assert copy_runs(files, pg_url).ok
    target = tmp_path / "target"
    kill_once(start_copy(pg_url, target), file_written(target, "long"))

    assert_no_run_there(target, "long")
    assert _claimed(pg_url) is None  # the source's run is ended: nothing to take there either
    assert_copied_whole(pg_url, target, "long", records)
    assert _journal(target, "long") == _journal(files, "long")


def test_a_record_in_other_json_keeps_its_bytes_through_postgres(
    pg_url: str, tmp_path: Path
) -> None:
    source = long_store(tmp_path / "source", 6)
    edited = other_json(source, "long", 3)
    assert copy_runs(source, pg_url).ok
    assert copy_runs(pg_url, tmp_path / "back").ok
    assert _journal(tmp_path / "back", "long") == _journal(source, "long")
    assert edited in _journal(tmp_path / "back", "long").split(b"\n")


class _FailsAtSeven(ChangedWhileRead):
    failing = 7


def test_a_copy_refused_part_way_shows_what_the_destination_showed_before(
    pg_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(_pg_copying, "_BATCH", 1)  # each record committed as it comes
    source = long_store(tmp_path / "source", 10)
    assert copy_runs(source, pg_url).ok

    async def cut() -> None:
        async with opened(pg_url) as store:
            assert await store.delete("long.5")  # an earlier copy of a shorter chain

    arun(cut())
    shown = wfctl("runs", "--store", pg_url, "--json").json()["runs"]
    assert [(r["run_id"], r["head_seq"]) for r in shown] == [("long", 4)]

    async def copy() -> Any:
        async with opened(pg_url) as store:
            return await _copy(_FailsAtSeven(source), store, ["long"])

    [run] = arun(copy())  # records 5 and 6 committed under the copy's mark, then refused
    assert (run.outcome, run.written_count) == (CopyOutcome.REFUSED, 0)
    assert wfctl("runs", "--store", pg_url, "--json").json()["runs"] == shown
    assert _committed(pg_url, "long") == 5
    assert wfctl("verify-lineage", "--store", pg_url).code == 0
