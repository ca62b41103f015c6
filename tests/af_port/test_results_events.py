"""The result API and events in agent-framework's vocabulary (``type``, ``executor_id``, ``data``)."""

from __future__ import annotations

from typing import Any

from tests.conftest import arun
from wfctl import (
    Checkpoint,
    FunctionalWorkflow,
    FunctionalWorkflowDefinition,
    InMemoryCheckpointStorage,
    RunContext,
    Step,
    StepWrapper,
    Workflow,
    WorkflowCheckpoint,
    WorkflowEvent,
    WorkflowEventSource,
    WorkflowRunState,
    step,
    workflow,
)


@step
async def add_one(x: int) -> int:
    return x + 1


@step
async def broken(x: int) -> int:
    raise ValueError(f"broken on {x}")


def test_a_completed_run_reads_as_agent_framework_reads_it() -> None:
    @workflow
    async def pipeline(x: int) -> int:
        return await add_one(await add_one(x))

    async def main() -> None:
        result = await pipeline.build(InMemoryCheckpointStorage()).run(1)
        assert result.get_final_state() == WorkflowRunState.IDLE
        assert [e.state for e in result.status_timeline()] == [
            WorkflowRunState.IN_PROGRESS,
            WorkflowRunState.IDLE,
        ]
        listed = list(result)
        assert len(result) == len(listed) and result[0] is listed[0]
        types = [e.type for e in listed]
        assert "started" not in types and "status" not in types  # the control plane is apart
        invoked = [e for e in listed if e.type == "executor_invoked"]
        completed = [e for e in listed if e.type == "executor_completed"]
        assert [(e.executor_id, e.data) for e in invoked] == [
            ("add_one", {"args": (1,), "kwargs": {}}),
            ("add_one", {"args": (2,), "kwargs": {}}),
        ]
        assert [(e.executor_id, e.data, e.key) for e in completed] == [
            ("add_one", 2, "add_one#0"),
            ("add_one", 3, "add_one#1"),
        ]
        outputs = [e for e in listed if e.type == "output"]
        assert [(e.executor_id, e.data) for e in outputs] == [("pipeline", 3)]
        assert result.get_outputs() == [3]
        # wfctl's own names stay beside them, and its own facts keep theirs
        assert [e.kind for e in completed] == ["step_completed", "step_completed"]
        assert "checkpoint" in types
        assert all(e.origin == WorkflowEventSource.FRAMEWORK for e in result.events)
        assert result.events[0].type == "started" and result.events[0].kind == "run_started"

    arun(main())


def test_status_events_are_listed_when_asked() -> None:
    @workflow
    async def echo(x: int) -> int:
        return x

    async def main() -> None:
        result = await echo.build(InMemoryCheckpointStorage()).run(1, include_status_events=True)
        assert [e.state for e in result if e.type == "status"] == [
            WorkflowRunState.IN_PROGRESS,
            WorkflowRunState.IDLE,
        ]
        plain = await echo.build(InMemoryCheckpointStorage()).run(1)
        assert [e for e in plain if e.type == "status"] == []

    arun(main())


def test_a_paused_run_and_its_resume_report_requests_and_served_steps() -> None:
    calls: list[int] = []

    @step
    async def counted(x: int) -> int:
        calls.append(x)
        return x * 10

    @workflow
    async def review(x: int, ctx: RunContext) -> str:
        value = await counted(x)
        answer = await ctx.request_info({"value": value}, str, request_id="ok")
        return f"{value}:{answer}"

    async def main() -> None:
        wf = review.build(InMemoryCheckpointStorage())
        paused = await wf.run(3)
        assert paused.get_final_state() == WorkflowRunState.IDLE_WITH_PENDING_REQUESTS
        assert [e.state for e in paused.status_timeline()] == [
            WorkflowRunState.IN_PROGRESS,
            WorkflowRunState.IN_PROGRESS_PENDING_REQUESTS,
            WorkflowRunState.IDLE_WITH_PENDING_REQUESTS,
        ]
        (request,) = [e for e in paused if e.type == "request_info"]
        assert request.request_id == "ok" and request.data == {"value": 30}
        assert request.source_executor_id == "review" and request.request_type is dict
        assert paused.get_request_info_events() == [request]

        done = await wf.run(responses={"ok": "yes"})
        assert done.get_final_state() == WorkflowRunState.IDLE
        assert calls == [3]  # served from the record, not run again
        types = [e.type for e in done]
        assert "executor_invoked" not in types and "executor_completed" not in types
        (bypassed,) = [e for e in done if e.type == "executor_bypassed"]
        assert (bypassed.executor_id, bypassed.data, bypassed.kind) == (
            "counted",
            30,
            "step_cached",
        )
        assert done.get_outputs() == ["30:yes"]

    arun(main())


def test_a_pause_from_outside_ends_cancelled() -> None:
    storage = InMemoryCheckpointStorage()

    @step
    async def tick(i: int, ctx: RunContext) -> int:
        if i == 1:
            await storage.request_pause(ctx.run_id)
        return i

    @workflow
    async def ticker() -> int:
        return sum([await tick(i) for i in range(3)])

    async def main() -> None:
        paused = await ticker.build(storage).run()
        assert paused.status == "paused" and not paused.get_request_info_events()
        assert paused.get_final_state() == WorkflowRunState.CANCELLED

    arun(main())


def test_a_failure_gives_failed_and_executor_failed_events() -> None:
    @workflow
    async def failing(x: int) -> int:
        return await broken(x)

    async def main() -> None:
        events: list[WorkflowEvent] = []
        try:  # the run may return its failure or raise it: the events say the same either way
            result: Any = await failing.build(InMemoryCheckpointStorage()).run(
                7, on_event=events.append
            )
        except ValueError:
            result = None
        if result is not None:
            assert result.get_final_state() == WorkflowRunState.FAILED
        (step_failed,) = [e for e in events if e.type == "executor_failed"]
        assert step_failed.executor_id == "broken" and step_failed.kind == "step_failed"
        assert step_failed.details is not None and step_failed.data is step_failed.details
        assert (step_failed.details.error_type, step_failed.details.message) == (
            "ValueError",
            "broken on 7",
        )
        (failed,) = [e for e in events if e.type == "failed"]
        assert failed.details is not None and failed.details.message == "broken on 7"
        assert events[-1].type == "status" and events[-1].state == WorkflowRunState.FAILED

    arun(main())


def test_custom_events_keep_their_type_and_origin() -> None:
    @workflow
    async def chatty(x: int, ctx: RunContext) -> None:
        await ctx.add_event(WorkflowEvent("intermediate", executor_id="chatty", data="draft"))
        await ctx.add_event(WorkflowEvent.intermediate("second", executor_id="chatty"))
        await ctx.add_event({"note": x})

    async def main() -> None:
        result = await chatty.build(InMemoryCheckpointStorage()).run(5)
        custom = [e for e in result if e.kind == "custom"]
        assert [(e.type, e.data, e.origin) for e in custom] == [
            ("intermediate", "draft", WorkflowEventSource.EXECUTOR),
            ("intermediate", "second", WorkflowEventSource.EXECUTOR),
            ("custom", {"note": 5}, WorkflowEventSource.EXECUTOR),
        ]
        assert all(e.run_id == result.run_id and e.timestamp > 0 for e in custom)
        assert result.get_intermediate_outputs() == ["draft", "second"]
        assert result.get_outputs() == []  # None is not an output

    arun(main())


def test_agent_framework_names_are_wfctl_types() -> None:
    assert StepWrapper is Step and isinstance(add_one, StepWrapper)
    assert FunctionalWorkflow is Workflow and WorkflowCheckpoint is Checkpoint
    assert FunctionalWorkflowDefinition is Workflow
    assert [s.name for s in WorkflowRunState] == [
        "STARTED",
        "IN_PROGRESS",
        "IN_PROGRESS_PENDING_REQUESTS",
        "IDLE",
        "IDLE_WITH_PENDING_REQUESTS",
        "FAILED",
        "CANCELLED",
    ]
    assert all(s.value == s.name for s in WorkflowRunState)
    assert WorkflowEvent.status(WorkflowRunState.IDLE).state is WorkflowRunState.IDLE
    assert WorkflowEvent[int].__origin__ is WorkflowEvent  # annotations as agent-framework's
