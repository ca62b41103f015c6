"""agent-framework's error phrases and logging warnings, as a ported program's tests read them.

Each test is written for agent-framework's functional API with only its import line changed:
``pytest.raises(..., match=<agent-framework's phrase>)`` and a handler on agent-framework's
logger (``agent_framework._workflows._functional``). wfctl keeps its own explanation after the
phrase. The same file with ``from wfctl import`` switched to ``from agent_framework import``
passes under agent-framework (1.26). Every workflow is bound to an explicit
``InMemoryCheckpointStorage``.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest

from tests.conftest import arun
from wfctl import FunctionalWorkflow, InMemoryCheckpointStorage, RunContext, step, workflow

AF_LOGGER = "agent_framework._workflows._functional"


@contextmanager
def warnings_of(name: str) -> Iterator[list[str]]:
    """Collect the WARNING messages logged under ``name`` while the block runs."""
    messages: list[str] = []

    class Collect(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            messages.append(record.getMessage())

    logger = logging.getLogger(name)
    handler = Collect(logging.WARNING)
    logger.addHandler(handler)
    try:
        yield messages
    finally:
        logger.removeHandler(handler)


@workflow(name="takes_x")
async def takes_x(x: int) -> int:
    return x


@workflow(name="asks")
async def asks(x: int, ctx: RunContext) -> str:
    answer = await ctx.request_info({"draft": x}, response_type=str, request_id="r1")
    return f"got:{answer}"


# -- errors ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "arguments",
    [{"responses": {"r1": "v"}}, {"checkpoint_id": "abc"}],
    ids=["responses", "checkpoint_id"],
)
def test_a_message_with_responses_or_a_checkpoint_cannot_be_provided_both(
    arguments: dict[str, Any],
) -> None:
    wf = takes_x.build(checkpoint_storage=InMemoryCheckpointStorage())
    with pytest.raises(ValueError, match="Cannot provide both 'message' and"):
        arun(wf.run(1, **arguments))


def test_no_message_for_a_parameter_without_default_must_provide_one() -> None:
    wf = takes_x.build(checkpoint_storage=InMemoryCheckpointStorage())
    with pytest.raises(ValueError, match="Must provide at least one"):
        arun(wf.run())


def test_a_sync_function_is_refused_by_step_as_not_async() -> None:
    def not_async(x: int) -> int:
        return x

    with pytest.raises(TypeError, match="can only decorate async functions"):
        step(not_async)  # type: ignore[arg-type]  # the mistake under test


def test_two_messages_are_multiple_non_runcontext_parameters() -> None:
    async def two(a: str, b: str, ctx: RunContext) -> str:
        return a + b

    with pytest.raises(ValueError, match="multiple non-RunContext parameters"):
        workflow(two)


def test_a_message_to_a_context_only_workflow_has_no_parameter_for_it() -> None:
    @workflow(name="ctx_only")
    async def ctx_only(ctx: RunContext) -> str:
        return "ok"

    wf = ctx_only.build(checkpoint_storage=InMemoryCheckpointStorage())
    with pytest.raises(ValueError, match="no non-RunContext parameter"):
        arun(wf.run("input"))


def test_answers_after_a_clean_completion_have_no_pending_request_info() -> None:
    async def main() -> None:
        wf = takes_x.build(checkpoint_storage=InMemoryCheckpointStorage())
        await wf.run(5)
        with pytest.raises(ValueError, match="no pending request_info"):
            await wf.run(responses={"stale": "x"})

    arun(main())


def test_answers_to_another_request_do_not_answer_the_pending_one() -> None:
    async def main() -> None:
        wf = asks.build(checkpoint_storage=InMemoryCheckpointStorage())
        await wf.run(1)
        with pytest.raises(ValueError, match="do not answer"):
            await wf.run(responses={"not_r1": "x"})

    arun(main())


def test_run_says_at_least_one_of_its_arguments_is_given() -> None:
    doc = FunctionalWorkflow.run.__doc__ or ""
    assert "at least one" in doc.lower()
    assert "Exactly one" not in doc


# -- warnings --------------------------------------------------------------------------------


def test_a_fresh_message_while_requests_are_pending_warns() -> None:
    async def main() -> None:
        wf = asks.build(checkpoint_storage=InMemoryCheckpointStorage())
        await wf.run(1)
        with warnings_of(AF_LOGGER) as logged:
            await wf.run(2)
        assert any(
            "request_info event(s) are still pending" in m and "a fresh message" in m
            for m in logged
        ), logged

    arun(main())


def test_answers_and_a_first_message_do_not_warn() -> None:
    async def main() -> None:
        wf = asks.build(checkpoint_storage=InMemoryCheckpointStorage())
        with warnings_of(AF_LOGGER) as logged:
            await wf.run(1)
            result = await wf.run(responses={"r1": "fine"})
            await wf.run(3)  # the last call answered every request: nothing is pending
        assert result.get_outputs() == ["got:fine"]
        assert logged == []

    arun(main())


def test_a_none_answer_to_an_optional_request_is_returned_with_a_warning() -> None:
    @workflow(name="optional")
    async def optional(x: int, ctx: RunContext) -> str:
        value = await ctx.request_info("need", response_type=str | None, request_id="r1")
        return f"value={value}"

    async def main() -> None:
        wf = optional.build(checkpoint_storage=InMemoryCheckpointStorage())
        await wf.run(1)
        with warnings_of(AF_LOGGER) as logged:
            result = await wf.run(responses={"r1": None})
        assert result.get_outputs() == ["value=None"]
        assert any("None" in m and "r1" in m for m in logged), logged

    arun(main())


@step
async def shout(text: str) -> str:
    return text.upper()


@workflow(name="versioned")
async def versioned_one(text: str, ctx: RunContext) -> str:
    answer = await ctx.request_info(text, response_type=str, request_id="ok")
    return answer


@workflow(name="versioned")
async def versioned_two(text: str, ctx: RunContext) -> str:
    loud = await shout(text)
    answer = await ctx.request_info(loud, response_type=str, request_id="ok")
    return answer


def test_a_checkpoint_of_other_code_is_not_compatible() -> None:
    async def main() -> None:
        storage = InMemoryCheckpointStorage()
        await versioned_one.build(checkpoint_storage=storage).run("hi")  # pauses
        checkpoints = await storage.list_checkpoints(workflow_name="versioned")
        checkpoint_id = checkpoints[-1].checkpoint_id
        changed = versioned_two.build(checkpoint_storage=storage)
        with pytest.raises(ValueError, match="not compatible"):
            await changed.run(checkpoint_id=checkpoint_id, responses={"ok": "yes"})

    arun(main())
