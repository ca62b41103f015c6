"""The engine end to end on the PostgreSQL store: run, pause, resume, verify the lineage."""

from __future__ import annotations

import asyncio
import sys
from collections import Counter
from types import FrameType
from typing import Any

import pytest

from tests.conftest import arun, assert_one_chain
from tests.engine.test_memory import _fail, long_run  # N steps, then fails when asked
from tests.engine.test_run_ids import (
    ADMISSIONS,
    held_fresh_id_is_replaced,
    taken_fresh_id_is_replaced,
)
from tests.postgres.conftest import opened
from wfctl import RunContext, get_run_context, step, workflow
from wfctl._inspect._lineage import verify_lineage
from wfctl.storage import open_storage


def test_a_workflow_runs_pauses_and_resumes_on_postgres(pg_url: str) -> None:
    async def main() -> None:
        runs: Counter[str] = Counter()

        @step
        async def draft(topic: str) -> str:
            runs["draft"] += 1
            return f"draft about {topic}"

        @step
        async def publish(text: str) -> str:
            runs["publish"] += 1
            return text.upper()

        @workflow
        async def review(topic: str, ctx: RunContext) -> str:
            text = await draft(topic)
            verdict = await ctx.request_info({"text": text}, str)
            return await publish(text) if verdict == "yes" else "rejected"

        storage = open_storage(pg_url)
        try:
            wf = review.build(checkpoint_storage=storage)
            paused = await wf.run("cats")
            assert paused.status == "paused"
            assert (await storage.run_summary(paused.run_id)).pending == ("request#0",)
            done = await wf.run(responses={"request#0": "yes"})
            assert done.status == "completed" and done.run_id == paused.run_id
            assert done.get_outputs() == ["DRAFT ABOUT CATS"]
            assert runs == {"draft": 1, "publish": 1}
            chain = await storage.list_checkpoints(run_id=paused.run_id)
            assert_one_chain(chain)
            assert [c.kind for c in chain] == [
                "root",
                "step",
                "pause",
                "resume",
                "step",
                "completed",
            ]
            report = await verify_lineage(storage)
            assert report.ok and [v.run_id for v in report.runs] == [paused.run_id]
        finally:
            await storage.aclose()

    arun(main())


def test_a_pause_requested_from_another_store_stops_the_run_at_its_next_step(pg_url: str) -> None:
    async def main() -> None:
        runs: Counter[int] = Counter()
        storage = open_storage(pg_url)

        @step
        async def tick(i: int) -> int:
            runs[i] += 1
            if i == 1:
                ctx = get_run_context()
                assert ctx is not None
                async with opened(pg_url) as elsewhere:  # another machine, as far as it knows
                    await elsewhere.request_pause(ctx.run_id)
                lease = storage._leases[ctx.run_id]  # type: ignore[attr-defined]
                await asyncio.wait_for(lease.pause_event.wait(), 30)  # the notification
            return i

        @workflow
        async def ticker() -> int:
            return sum([await tick(i) for i in range(4)])

        try:
            wf = ticker.build(checkpoint_storage=storage)
            paused = await wf.run()
            assert paused.status == "paused" and dict(runs) == {0: 1, 1: 1}
            await storage.clear_pause(paused.run_id)
            done = await wf.run(checkpoint_id=paused.checkpoint_id)
            assert done.get_outputs() == [6] and dict(runs) == {0: 1, 1: 1, 2: 1, 3: 1}
            assert (await verify_lineage(storage)).ok
        finally:
            await storage.aclose()

    arun(main())


def test_a_sequential_step_on_postgres_starts_its_save_in_the_caller(pg_url: str) -> None:
    # The store declares its save may start anywhere: each step's INSERT is sent by the step's
    # caller (no queue, no chain lock, no StepPayload), and only the wait for its reply goes on in
    # a committer task. Counted over 30 steps; a group of lanes still queues and commits.
    counted: Counter[str] = Counter()
    # _saved: a solo commit's end (a plain function, called once for each).
    watched = {"CheckpointChain._enqueue", "CheckpointChain._saved"}

    def profile(frame: FrameType, event: str, arg: object) -> None:
        if event == "call" and frame.f_code.co_qualname in watched:
            counted[frame.f_code.co_qualname] += 1

    @step
    async def echo(text: str) -> str:
        return text

    @workflow
    async def steps(n: int) -> str:
        result = ""
        for i in range(n):
            result = await echo(f"call {i}")
        return result

    @workflow
    async def lanes(n: int) -> list[str]:
        return list(await asyncio.gather(*(echo(f"lane {i}") for i in range(n))))

    async def main() -> None:
        storage = open_storage(pg_url)
        try:
            sys.setprofile(profile)
            try:
                done = await steps.build(checkpoint_storage=storage).run(30)
            finally:
                sys.setprofile(None)
            assert done.status == "completed"
            assert counted["CheckpointChain._saved"] == 30, counted
            assert counted["CheckpointChain._enqueue"] == 0, counted
            chain = await storage.list_checkpoints(run_id=done.run_id)
            assert_one_chain(chain)
            assert [c.kind for c in chain].count("step") == 30
            fanned = await lanes.build(checkpoint_storage=storage).run(50)
            assert fanned.status == "completed"
            assert_one_chain(await storage.list_checkpoints(run_id=fanned.run_id))
        finally:
            await storage.aclose()

    arun(main())


@pytest.mark.parametrize("taken", [taken_fresh_id_is_replaced, held_fresh_id_is_replaced])
@pytest.mark.parametrize("admit", list(ADMISSIONS))
def test_a_taken_fresh_run_id_is_replaced_on_postgres(
    pg_url: str, monkeypatch: pytest.MonkeyPatch, admit: str, taken: Any
) -> None:
    """A fresh run id a run holds, or whose lease another admission holds, is replaced."""

    async def main() -> None:
        async with opened(pg_url) as store:
            await taken(store, monkeypatch, admit)

    arun(main())


def test_a_resume_on_postgres_folds_the_run_a_page_of_records_at_a_time(
    pg_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The resume's read of the chain is paged (every record verified as read): the run's
    checkpoints are never held decoded at once, and every step is served from its record."""
    from wfctl._storage import _pages
    from wfctl._storage._postgres import PostgresCheckpointStorage

    monkeypatch.setattr(_pages, "PAGE_RECORDS", 8)
    calls = Counter[str]()
    for name in ("chain_page", "read_run"):
        real = getattr(PostgresCheckpointStorage, name)

        async def counted_call(self: Any, *args: Any, _name: str = name, _real: Any = real) -> Any:
            calls[_name] += 1
            return await _real(self, *args)

        monkeypatch.setattr(PostgresCheckpointStorage, name, counted_call)

    async def main() -> None:
        async with opened(pg_url) as store:
            wf = long_run.build(checkpoint_storage=store)
            _fail["on"] = True
            with pytest.raises(RuntimeError):
                await wf.run(50, run_id="long-resume")
            _fail["on"] = False
            calls.clear()
            done = await wf.resume("long-resume")
            assert done.status == "completed" and done.get_outputs() == [sum(range(0, 100, 2))]
            assert (len(done.cached), len(done.executed)) == (50, 0)
            assert calls == {"chain_page": 7}  # 52 records (root, 50 steps, failed), 8 a page
            assert (await verify_lineage(store, ["long-resume"])).ok

    try:
        arun(main())
    finally:
        _fail["on"] = False
