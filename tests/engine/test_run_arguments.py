"""``Workflow.run`` refuses contradictory arguments and uses the message parameter's default."""

from __future__ import annotations

from typing import Any

import pytest

from tests.conftest import arun
from wfctl import InMemoryCheckpointStorage, RunArgumentError, RunContext, WfctlError, workflow


@workflow(name="counting")
async def counting(n: int = 7) -> int:
    return n * 2


@workflow(name="needy")
async def needy(message: str, ctx: RunContext) -> str:
    answer = await ctx.request_info(message, str)
    return f"{message}: {answer}"


@workflow(name="context_only")
async def context_only(ctx: RunContext) -> str:
    return ctx.run_id


@workflow(name="context_first")
async def context_first(ctx: RunContext, message: str = "default") -> str:
    return f"{message} in {ctx.run_id}"


def test_the_default_of_the_message_parameter_is_used_and_recorded() -> None:
    async def main() -> None:
        storage = InMemoryCheckpointStorage()
        result = await counting.build(checkpoint_storage=storage).run()
        assert result.status == "completed" and result.get_outputs() == [14]
        root = await storage.load(f"{result.run_id}.0")
        assert root.data["input"] == 7  # what the run got is what its root says
        given = await counting.build(checkpoint_storage=storage).run(3)
        assert given.get_outputs() == [6]

    arun(main())


def test_a_context_declared_before_the_message_gets_the_context() -> None:
    async def main() -> None:
        wf = context_first.build(checkpoint_storage=InMemoryCheckpointStorage())
        result = await wf.run("hi", run_id="r1")
        assert result.get_outputs() == ["hi in r1"]
        assert (await wf.run(run_id="r2")).get_outputs() == ["default in r2"]

    arun(main())


async def _refused(call: Any, match: str) -> None:
    storage = InMemoryCheckpointStorage()
    with pytest.raises(RunArgumentError, match=match) as caught:
        await call(storage)
    assert isinstance(caught.value, ValueError) and isinstance(caught.value, WfctlError)
    assert await storage.list_runs() == []  # refused before anything was stored


def test_no_message_for_a_parameter_without_default_is_refused() -> None:
    arun(
        _refused(
            lambda s: needy.build(checkpoint_storage=s).run(),
            "needs a message for its parameter 'message', which has no default",
        )
    )


def test_a_message_for_a_workflow_that_takes_none_is_refused() -> None:
    arun(
        _refused(
            lambda s: context_only.build(checkpoint_storage=s).run("input"),
            "takes no message",
        )
    )


def test_a_message_with_responses_or_checkpoint_id_is_refused() -> None:
    async def main() -> None:
        storage = InMemoryCheckpointStorage()
        wf = needy.build(checkpoint_storage=storage)
        paused = await wf.run("hello")
        before = await storage.list_checkpoints(run_id=paused.run_id)
        with pytest.raises(ValueError, match="cannot go with responses"):
            await wf.run("hello", responses={"request#0": "x"})
        with pytest.raises(RunArgumentError, match="cannot go with checkpoint_id"):
            await wf.run("other", checkpoint_id=paused.checkpoint_id)
        with pytest.raises(RunArgumentError, match="cannot go with checkpoint_id"):
            await wf.run("x", checkpoint_id=paused.checkpoint_id, responses={"request#0": "y"})
        assert await storage.list_checkpoints(run_id=paused.run_id) == before
        assert [r.run_id for r in await storage.list_runs()] == [paused.run_id]
        done = await wf.run(responses={"request#0": "x"})
        assert done.get_outputs() == ["hello: x"]

    arun(main())


def test_a_run_id_for_a_run_that_continues_in_place_is_refused() -> None:
    async def main() -> None:
        storage = InMemoryCheckpointStorage()
        wf = needy.build(checkpoint_storage=storage)
        paused = await wf.run("hello")
        with pytest.raises(RunArgumentError, match="continues in place"):
            await wf.run(
                checkpoint_id=paused.checkpoint_id, responses={"request#0": "x"}, run_id="other"
            )
        assert [r.run_id for r in await storage.list_runs()] == [paused.run_id]
        branched = await wf.run(
            checkpoint_id=paused.checkpoint_id,
            responses={"request#0": "x"},
            run_id="other",
            new_run=True,
        )
        assert branched.run_id == "other" and branched.get_outputs() == ["hello: x"]

    arun(main())


def test_new_run_without_a_checkpoint_is_refused() -> None:
    arun(
        _refused(
            lambda s: counting.build(checkpoint_storage=s).run(new_run=True), "needs checkpoint_id"
        )
    )
