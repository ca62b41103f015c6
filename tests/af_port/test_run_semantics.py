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
