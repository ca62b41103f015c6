"""``sys.exit()`` in a step fails the run in that step, as any exception raised there does.

The run loop turns the step's ``SystemExit`` into ``WorkflowExitError`` (see ``wfctl._engine._guard``);
before, it recorded no failed step for it, so the run read as failed in the workflow body, and
the commands offered to continue it left out the plain retry.
"""

from __future__ import annotations

import sys
from typing import Any

import pytest

from tests.conftest import arun, failure_of
from wfctl import InMemoryCheckpointStorage, WorkflowExitError, step, workflow
from wfctl._records._payloads import FailedPayload  # internal: what the failed record holds


def _fail_in_inner_step(leave: Any) -> tuple[BaseException, str | None, Any]:
    """Run a workflow whose step ``outer`` calls a step ``inner`` that calls ``leave()``.

    Return the error the run raised, the step its failed record names and its ``run_failed``
    event's data.
    """
    storage = InMemoryCheckpointStorage()

    @step
    async def inner(x: int) -> int:
        leave()
        return x

    @step
    async def outer(x: int) -> int:
        return await inner(x)

    @workflow(checkpoint_storage=storage)
    async def wf(x: int) -> int:
        return await outer(x)

    events: list[Any] = []
    with pytest.raises((WorkflowExitError, RuntimeError)) as caught:
        arun(wf.run(1, on_event=events.append))
    failed = failure_of(caught)
    head = arun(storage.get_latest(run_id=failed.run_id))
    assert head is not None and head.checkpoint_id == failed.checkpoint_id
    [run_failed] = [e.data for e in events if e.kind == "run_failed"]
    return caught.value, FailedPayload.of(head).step, run_failed


def test_a_step_that_calls_sys_exit_fails_the_run_in_that_step() -> None:
    def leave() -> None:
        sys.exit(7)

    def fail() -> None:
        raise RuntimeError("inner")

    exited, exited_in, exited_event = _fail_in_inner_step(leave)
    raised, raised_in, raised_event = _fail_in_inner_step(fail)
    assert isinstance(exited, WorkflowExitError) and exited.code == 7
    assert exited.where == "step outer#0/inner#0"
    assert isinstance(raised, RuntimeError)
    # The innermost step is named, for the exit as for the exception.
    assert exited_in == raised_in == "outer#0/inner#0"
    assert exited_event["step"] == raised_event["step"] == "outer#0/inner#0"
