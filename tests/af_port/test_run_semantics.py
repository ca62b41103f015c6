"""Run semantics a ported agent-framework program relies on, through the public API.

Run arguments (a per-run storage), failures that raise, context injection, answers sent again,
typed values and ``ValueError`` compatibility of the argument errors.
"""

from __future__ import annotations

import pytest

from tests.conftest import arun
from wfctl import (
    DuplicateStepKeyError,
    InMemoryCheckpointStorage,
    RunContext,
    RunStateError,
    WorkflowChangedError,
    WorkflowDefinitionError,
    step,
    workflow,
)

# --- errors: ``except ValueError`` keeps working ------------------------------------------


def test_a_workflow_with_two_messages_is_refused_as_a_value_error() -> None:
    async def two(a: str, b: str) -> str:
        return a + b

    with pytest.raises(ValueError, match="at most one parameter") as caught:
        workflow(two)
    assert isinstance(caught.value, WorkflowDefinitionError)


def test_a_sync_step_is_still_refused_as_a_type_error() -> None:
    def plain(x: int) -> int:
        return x

    with pytest.raises(TypeError, match="async"):
        step(plain)  # type: ignore[arg-type]  # the mistake under test


def test_answers_to_no_pending_request_are_a_value_error() -> None:
    @workflow(name="done_at_once")
    async def done_at_once() -> str:
        return "ok"

    async def main() -> None:
        wf = done_at_once.build(InMemoryCheckpointStorage())
        with pytest.raises(ValueError, match="no paused run to answer") as caught:
            await wf.run(responses={"r": 1})
        assert isinstance(caught.value, RunStateError)

    arun(main())


def test_a_repeated_explicit_key_and_changed_code_are_value_errors() -> None:
    assert issubclass(DuplicateStepKeyError, ValueError)
    assert issubclass(WorkflowChangedError, ValueError)
    assert issubclass(RunStateError, ValueError)


# --- context injection ---------------------------------------------------------------------


@step
async def context_first(ctx: RunContext, data: str) -> str:
    ctx.set_state("seen", data)
    return f"{data}:{ctx.get_state('seen')}:{ctx.run_id}"


@step
async def context_last(data: str, ctx: RunContext) -> str:
    return f"{data}@{ctx.run_id if ctx is not None else 'none'}"


@step
async def context_by_keyword(data: str, *, ctx: RunContext | None = None) -> str:
    return f"{data}@{ctx.run_id if ctx is not None else 'none'}"


def test_a_step_whose_context_comes_first_gets_it_and_its_data() -> None:
    @workflow(name="ctx_first")
    async def ctx_first(data: str) -> list[str]:
        return [
            await context_first(data),
            await context_last(data),
            await context_by_keyword(data),
        ]

    async def main() -> None:
        result = await ctx_first.build(InMemoryCheckpointStorage()).run("d", run_id="r")
        assert result.get_outputs() == [["d:d:r", "d@r", "d@r"]]

    arun(main())


def test_outside_a_run_an_explicit_context_is_kept_and_a_missing_one_is_none() -> None:
    async def main() -> None:
        ctx = RunContext("tests")
        ctx.set_state("seen", "before")
        assert await context_first(ctx, "x") == "x:x:"  # passed by position
        assert await context_first("y", ctx=ctx) == "y:y:"  # by keyword
        assert ctx.get_state("seen") == "y"  # the step wrote to the context it was given
        assert await context_last("z") == "z@none"
        assert await context_by_keyword("z") == "z@none"

    arun(main())


def test_a_stand_alone_context_keeps_state_events_outputs_and_given_answers() -> None:
    async def main() -> None:
        ctx = RunContext("tests", responses={"request#0": "7", "named": "yes"})
        ctx.set_state("k", [1])
        await ctx.add_event({"progress": 1})
        await ctx.yield_output("partial")
        assert await ctx.request_info("how many?", int) == 7  # converted to its type
        assert await ctx.request_info("ok?", str, request_id="named") == "yes"
        assert (ctx.get_state("k"), ctx.events, ctx.outputs) == (
            [1],
            ({"progress": 1},),
            ("partial",),
        )
        with pytest.raises(RunStateError, match="no run to pause for request 'request#1'"):
            await ctx.request_info("again?", str)

    arun(main())
