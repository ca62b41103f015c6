"""``copy`` between a file store and PostgreSQL reads each run a record (or a page) at a time:
a long run goes there and back byte for byte, an earlier copy cut short is completed, and a
copy already made is recognised, each read a page of records a statement."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.conftest import arun
from tests.postgres.conftest import opened
from wfctl import FileCheckpointStorage, step, workflow
from wfctl._copy import CopyOutcome, copy_runs
from wfctl._storage import _pages
from wfctl._storage._postgres import PostgresCheckpointStorage

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
    assert pages["n"] == per_read  # the read-back

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
