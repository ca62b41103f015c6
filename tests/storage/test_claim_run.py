"""claim_run: a worker leases the oldest run it may drive, on the file and memory stores.

Tests import ``wfctl._engine._admission.submit_run`` (the library call behind ``wfctl submit``) to make
queued runs without a CLI process.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.conftest import arun
from wfctl import FileCheckpointStorage, RunContext, step, workflow
from wfctl._engine._admission import submit_run


@step
async def shout(text: str) -> str:
    return text.upper()


@workflow(name="loud")
async def loud(text: str, ctx: RunContext) -> str:
    if text == "ask":
        return str(await ctx.request_info("ok?", str))
    return await shout(text)


async def _queue(storage: Any, *run_ids: str) -> None:
    bound = loud.build(checkpoint_storage=storage)
    for run_id in run_ids:
        await submit_run(bound, run_id, run_id)


def test_oldest_first_skipping_leased_and_excluded(storage: Any) -> None:
    async def scenario() -> None:
        await _queue(storage, "b-first", "a-second", "c-third")
        first = await storage.claim_run()
        assert first is not None and first.run_id == "b-first"  # oldest, not first by name
        second = await storage.claim_run(exclude={"a-second"})
        assert second is not None and second.run_id == "c-third"
        third = await storage.claim_run()
        assert third is not None and third.run_id == "a-second"
        assert await storage.claim_run() is None  # every run is held
        await first.release()
        again = await storage.claim_run()
        assert again is not None and again.run_id == "b-first"
        for lease in (again, second, third):
            await lease.release()

    arun(scenario())


def test_ended_and_paused_runs_are_not_claimed(storage: Any) -> None:
    async def scenario() -> None:
        bound = loud.build(checkpoint_storage=storage)
        await bound.run("done", run_id="done")
        paused = await bound.run("ask", run_id="asks")
        assert paused.status == "paused"
        assert await storage.claim_run() is None
        await _queue(storage, "queued")
        lease = await storage.claim_run()
        assert lease is not None and lease.run_id == "queued"
        await lease.release()

    arun(scenario())


def test_a_claimed_queued_run_is_listed_running_then_queued(storage: Any) -> None:
    async def scenario() -> None:
        await _queue(storage, "q")
        assert [r.status for r in await storage.list_runs()] == ["queued"]
        lease = await storage.claim_run()
        assert lease is not None
        assert [r.status for r in await storage.list_runs()] == ["running"]
        await lease.release()
        assert [r.status for r in await storage.list_runs()] == ["queued"]

    arun(scenario())


def test_a_corrupt_run_is_never_claimed(tmp_path: Path) -> None:
    storage = FileCheckpointStorage(tmp_path)

    async def scenario() -> None:
        await _queue(storage, "old", "new")
        journal = tmp_path / "runs" / "old" / "journal.jsonl"
        journal.write_bytes(journal.read_bytes().replace(b'"input":"old"', b'"input":"odd"'))
        lease = await storage.claim_run()
        assert lease is not None and lease.run_id == "new"
        await lease.release()
        assert [r.status for r in await storage.list_runs()] == ["corrupt", "queued"]

    arun(scenario())


@pytest.mark.parametrize("kind", ["memory", "file"])
def test_nothing_to_claim_in_an_empty_store(kind: str, tmp_path: Path) -> None:
    from wfctl.storage import open_storage

    storage = open_storage("memory:" if kind == "memory" else tmp_path)
    assert arun(storage.claim_run()) is None


def test_a_run_seen_ended_is_claimed_once_its_records_change(storage: Any) -> None:
    """The file store skips a run it found ended by one stat: a change must end the skip."""
    other = storage if not isinstance(storage, FileCheckpointStorage) else None
    if other is None:  # another process's view of the same store
        other = FileCheckpointStorage(storage.root)

    async def scenario() -> None:
        bound = loud.build(checkpoint_storage=other)
        paused = await bound.run("ask", run_id="asks")
        assert await storage.claim_run() is None  # paused: skipped (and remembered)
        assert await other.delete(paused.checkpoint_id)  # the pause record cut away
        lease = await storage.claim_run()
        assert lease is not None and lease.run_id == "asks"
        await lease.release()

    arun(scenario())
