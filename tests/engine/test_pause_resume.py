"""Pausing for answers, resuming the same chain, restoring into a new run (SPEC §4)."""

from __future__ import annotations

import asyncio
import gc
from collections import Counter
from typing import Any

import pytest

from tests.conftest import arun, assert_one_chain, failure_of
from wfctl import (
    InMemoryCheckpointStorage,
    ReplayDivergenceError,
    RunContext,
    RunLockedError,
    RunStateError,
    UnencodableValueError,
    WorkflowChangedError,
    WorkflowDefinitionError,
    step,
    workflow,
)


def test_pause_answer_and_continue_the_same_chain(storage: Any) -> None:
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

        wf = review.build(checkpoint_storage=storage)
        paused = await wf.run("cats")
        assert paused.status == "paused"
        [request] = paused.get_request_info_events()
        assert request.request_id == "request#0"
        assert request.request_data == {"text": "draft about cats"}
        assert request.response_type is str
        with pytest.raises(RunStateError, match=r"pending: request#0"):
            await wf.run(checkpoint_id=paused.checkpoint_id, responses={"nope": 1})
        with pytest.raises(RunStateError, match="waiting for answers"):
            await wf.run(checkpoint_id=paused.checkpoint_id)
        done = await wf.run(responses={"request#0": "yes"})
        assert done.status == "completed" and done.run_id == paused.run_id
        assert done.get_outputs() == ["DRAFT ABOUT CATS"]
        assert runs == {"draft": 1, "publish": 1}
        chain = await storage.list_checkpoints(run_id=paused.run_id)
        assert_one_chain(chain)
        assert [c.kind for c in chain] == ["root", "step", "pause", "resume", "step", "completed"]

    arun(main())


def test_siblings_keep_going_and_the_pause_checkpoint_is_last() -> None:
    async def main() -> None:
        storage = InMemoryCheckpointStorage()
        runs: Counter[str] = Counter()
        asking = asyncio.Event()

        @step
        async def work(i: int) -> int:
            runs[f"work:{i}"] += 1
            if i == 0:
                await asking.wait()  # still running when the other branch asks for input
            return i

        async def asker(ctx: RunContext) -> Any:
            asking.set()
            return await ctx.request_info("approve?")

        async def worker() -> list[int]:
            return [await work(i) for i in range(3)]  # keeps starting steps after the request

        @workflow
        async def mixed(ctx: RunContext) -> list[Any]:
            return list(await asyncio.gather(asker(ctx), worker()))

        wf = mixed.build(checkpoint_storage=storage)
        paused = await wf.run()
        assert paused.status == "paused"
        chain = await storage.list_checkpoints(run_id=paused.run_id)
        assert_one_chain(chain)
        assert chain[-1].kind == "pause" and chain[-1].checkpoint_id == paused.checkpoint_id
        committed = [s["key"] for c in chain if c.kind == "step" for s in c.data["steps"]]
        assert committed == ["1/work#0", "1/work#1", "1/work#2"]
        assert [r["request_id"] for r in chain[-1].data["requests"]] == ["0/request#0"]
        done = await wf.run(checkpoint_id=paused.checkpoint_id, responses={"0/request#0": "ok"})
        assert done.get_outputs() == [["ok", [0, 1, 2]]]
        assert all(count == 1 for count in runs.values())

    arun(main())


def test_no_task_outlives_a_paused_run() -> None:
    async def main() -> None:
        never = asyncio.Event()
        cleaned: list[str] = []

        async def blocked() -> None:
            try:
                await never.wait()
            finally:
                cleaned.append("blocked")

        @workflow
        async def leaky(ctx: RunContext) -> None:
            orphan = asyncio.create_task(blocked())  # never awaited by the body
            await asyncio.gather(blocked(), ctx.request_info("q"))
            await orphan

        result = await leaky.build(checkpoint_storage=InMemoryCheckpointStorage()).run()
        assert result.status == "paused"
        assert cleaned == ["blocked", "blocked"]
        assert asyncio.all_tasks() == {asyncio.current_task()}

    arun(main())


def test_except_exception_cannot_swallow_the_pause() -> None:
    async def main() -> None:
        @workflow
        async def stubborn(ctx: RunContext) -> str:
            try:
                await ctx.request_info("q")
            except Exception:
                return "swallowed"
            return "answered"

        wf = stubborn.build(checkpoint_storage=InMemoryCheckpointStorage())
        assert (await wf.run()).status == "paused"
        assert (await wf.run(responses={"request#0": 1})).get_outputs() == ["answered"]

    arun(main())


def test_a_step_blocked_past_the_drain_timeout_is_cancelled_not_recorded() -> None:
    async def main() -> None:
        storage = InMemoryCheckpointStorage()
        never = asyncio.Event()

        @step
        async def stuck() -> str:
            await never.wait()
            return "never"

        @workflow
        async def wedged(ctx: RunContext) -> list[Any]:
            return list(await asyncio.gather(stuck(), ctx.request_info("q")))

        result = await wedged.build(checkpoint_storage=storage).run(drain_timeout=0.05)
        assert result.status == "paused"
        chain = await storage.list_checkpoints(run_id=result.run_id)
        assert [c.kind for c in chain] == ["root", "pause"]

    arun(main())


def test_pause_requested_from_outside_stops_at_the_next_step(storage: Any) -> None:
    async def main() -> None:
        runs: Counter[int] = Counter()

        @step
        async def tick(i: int) -> int:
            runs[i] += 1
            if i == 1:
                await storage.request_pause(get_run_id())
            return i

        def get_run_id() -> str:
            from wfctl import get_run_context

            ctx = get_run_context()
            assert ctx is not None
            return ctx.run_id

        @workflow
        async def ticker() -> int:
            return sum([await tick(i) for i in range(4)])

        wf = ticker.build(checkpoint_storage=storage)
        paused = await wf.run()
        assert paused.status == "paused" and not paused.get_request_info_events()
        assert dict(runs) == {0: 1, 1: 1}
        done = await wf.run(checkpoint_id=paused.checkpoint_id)
        assert done.get_outputs() == [6] and dict(runs) == {0: 1, 1: 1, 2: 1, 3: 1}

    arun(main())


def test_retry_a_failed_run_continues_its_chain(storage: Any) -> None:
    async def main() -> None:
        runs: Counter[str] = Counter()
        flaky_fails = [True]

        @step
        async def stable() -> int:
            runs["stable"] += 1
            return 1

        @step
        async def flaky() -> int:
            runs["flaky"] += 1
            if flaky_fails[0]:
                raise RuntimeError("boom")
            return 2

        @workflow
        async def retry() -> int:
            return await stable() + await flaky()

        wf = retry.build(checkpoint_storage=storage)
        with pytest.raises(RuntimeError, match="boom") as caught:
            await wf.run()
        failed = failure_of(caught)
        flaky_fails[0] = False
        done = await wf.run(checkpoint_id=failed.checkpoint_id)
        assert done.status == "completed" and done.run_id == failed.run_id
        assert done.get_outputs() == [3] and runs == {"stable": 1, "flaky": 2}
        chain = await storage.list_checkpoints(run_id=failed.run_id)
        assert_one_chain(chain)
        assert [c.kind for c in chain] == ["root", "step", "failed", "resume", "step", "completed"]

    arun(main())


def test_restore_elsewhere_starts_a_new_run_with_its_origin(storage: Any) -> None:
    async def main() -> None:
        runs: Counter[int] = Counter()

        @step
        async def n(i: int) -> int:
            runs[i] += 1
            return i

        @workflow
        async def count(ctx: RunContext) -> int:
            total = await n(1) + await n(2)
            answer = await ctx.request_info("more?")
            return total + await n(int(answer))

        wf = count.build(checkpoint_storage=storage)
        paused = await wf.run()
        source = await storage.list_checkpoints(run_id=paused.run_id)
        # From the middle: a new run, whose root names where it came from.
        branch = await wf.run(checkpoint_id=source[1].checkpoint_id)
        assert branch.run_id != paused.run_id and branch.status == "paused"
        new_chain = await storage.list_checkpoints(run_id=branch.run_id)
        assert_one_chain(new_chain)
        assert all(c.origin_run_id == paused.run_id for c in new_chain)
        assert all(c.origin_checkpoint_id == source[1].checkpoint_id for c in new_chain)
        assert await storage.list_checkpoints(run_id=paused.run_id) == source  # untouched
        assert runs == {1: 1, 2: 2}
        # Answering the restored run still serves what its origin recorded.
        done = await wf.run(checkpoint_id=branch.checkpoint_id, responses={"request#0": "3"})
        assert done.get_outputs() == [6] and runs == {1: 1, 2: 2, 3: 1}
        # A completed run restores into a new run that executes nothing.
        again = await wf.run(checkpoint_id=done.checkpoint_id)
        assert again.run_id not in (done.run_id, paused.run_id)
        assert again.get_outputs() == [6] and not again.executed

    arun(main())


def test_changed_code_is_refused_unless_allowed() -> None:
    async def main() -> None:
        storage = InMemoryCheckpointStorage()

        @workflow(name="evolving")
        async def v1() -> int:
            return 1

        @workflow(name="evolving")
        async def v2() -> int:
            return 2

        first = await v1.build(checkpoint_storage=storage).run()
        with pytest.raises(WorkflowChangedError):
            await v2.build(checkpoint_storage=storage).run(checkpoint_id=first.checkpoint_id)
        allowed = await v2.build(checkpoint_storage=storage).run(
            checkpoint_id=first.checkpoint_id, allow_changed=True
        )
        assert allowed.get_outputs() == [2]

    arun(main())


def test_state_and_outputs_set_inside_a_cached_step_are_replayed() -> None:
    async def main() -> None:
        storage = InMemoryCheckpointStorage()

        @step
        async def remember(ctx: RunContext) -> None:
            ctx.set_state("seen", 41)
            await ctx.yield_output("from step")

        @workflow
        async def stateful(ctx: RunContext) -> int:
            await remember()
            await ctx.yield_output("from body")
            return int(ctx.get_state("seen")) + 1

        wf = stateful.build(checkpoint_storage=storage)
        first = await wf.run()
        replay = await wf.run(checkpoint_id=first.checkpoint_id)
        assert first.get_outputs() == replay.get_outputs() == ["from step", "from body", 42]
        assert list(replay.cached) == ["remember#0"]

    arun(main())


def test_unencodable_result_fails_at_the_step_naming_key_and_type() -> None:
    async def main() -> None:
        storage = InMemoryCheckpointStorage()

        @step
        async def bad() -> object:
            return object()

        @workflow
        async def wf_() -> object:
            return await bad()

        with pytest.raises(UnencodableValueError) as caught:
            await wf_.build(checkpoint_storage=storage).run()
        result = failure_of(caught)
        assert caught.value.key == "bad#0" and caught.value.type_name == "object"
        chain = await storage.list_checkpoints(run_id=result.run_id)
        assert [c.kind for c in chain] == ["root", "failed"]

    arun(main())


def test_definition_errors() -> None:
    with pytest.raises(TypeError):

        @step
        def sync_step() -> None:  # type: ignore[arg-type]
            pass

    with pytest.raises(WorkflowDefinitionError, match="at most one parameter"):

        @workflow
        async def two(a: int, b: int) -> None:
            pass


def test_a_running_run_is_locked(storage: Any) -> None:
    async def main() -> None:
        inside = asyncio.Event()
        release = asyncio.Event()

        @step
        async def hold() -> None:
            inside.set()
            await release.wait()

        @workflow
        async def held() -> None:
            await hold()

        wf = held.build(checkpoint_storage=storage)
        task = asyncio.create_task(wf.run(run_id="held-run"))
        await inside.wait()
        with pytest.raises(RunLockedError, match="held-run"):
            await wf.run(checkpoint_id="held-run.0")
        release.set()
        assert (await task).status == "completed"

    arun(main())


def test_branches_parked_by_a_pause_leave_no_error_for_asyncio_to_log() -> None:
    # Branches made with create_task and awaited one by one: when the run pauses, the ones
    # not awaited yet end with the run's pause signal. asyncio logged each as "Task exception
    # was never retrieved", with a traceback, when the task was collected.
    logged: list[dict[str, Any]] = []

    @step
    async def record(question: str, answer: str) -> str:
        return f"{question} -> {answer}"

    async def ask(ctx: RunContext, question: str) -> str:
        return await record(question, await ctx.request_info({"q": question}, str))

    @workflow
    async def survey(ctx: RunContext) -> list[str]:
        tasks = [asyncio.create_task(ask(ctx, q)) for q in ("name?", "age?", "city?")]
        return [await task for task in tasks]

    async def main() -> None:
        asyncio.get_running_loop().set_exception_handler(lambda _, context: logged.append(context))
        wf = survey.build(checkpoint_storage=InMemoryCheckpointStorage())
        paused = await wf.run()
        assert paused.status == "paused" and len(paused.get_request_info_events()) == 3
        answers = {e.request_id: "x" for e in paused.get_request_info_events()}
        done = await wf.run(responses=answers)
        assert done.result == ["name? -> x", "age? -> x", "city? -> x"]

    arun(main())
    gc.collect()  # a task's unretrieved error is logged when the task is collected
    assert logged == []


def _replaced_then_paused(allow_changed: bool) -> Any:
    """Restore a run from the checkpoint after its ``charge`` step with the price changed, so
    the call runs live beside the unclaimed record; the run then pauses for an answer."""
    price = {"unit": 10}

    @step
    async def charge(amount: int) -> str:
        return f"charged {amount}"

    @workflow(name="checkout")
    async def checkout(ctx: RunContext) -> list[str]:
        receipt = await charge(price["unit"] * 3)
        return [receipt, await ctx.request_info({"q": "ship?"}, str)]

    async def main() -> tuple[Any, Any]:
        storage = InMemoryCheckpointStorage()
        wf = checkout.build(checkpoint_storage=storage)
        first = await wf.run()
        assert first.status == "paused"
        price["unit"] = 99  # the code is the same; what it passes is not
        restored = await wf.run(checkpoint_id=f"{first.run_id}.1", allow_changed=allow_changed)
        assert restored.status == "paused" and list(restored.executed) == ["charge#0"]
        return wf, restored

    return arun(main())


def test_a_divergence_left_to_settle_outlives_a_pause() -> None:
    # The live call replaced the recorded one; the run paused before its body ended, where the
    # divergence is judged. Resumed, the call is served its own record: before, the run then
    # completed with the changed charge reported cached, the divergence forgotten.
    wf, restored = _replaced_then_paused(allow_changed=False)
    with pytest.raises(ReplayDivergenceError) as caught:
        arun(wf.run(responses={"request#0": "ship it"}))
    assert caught.value.key == "charge#0" and "never claimed: charge#0" in str(caught.value)
    assert failure_of(caught).run_id == restored.run_id


def test_a_call_allowed_to_change_is_not_judged_again_after_a_pause() -> None:
    wf, _ = _replaced_then_paused(allow_changed=True)
    done = arun(wf.run(responses={"request#0": "ship it"}))
    assert done.status == "completed" and done.result == ["charged 297", "ship it"]
