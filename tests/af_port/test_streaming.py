"""``run(stream=True)``: events as they happen, the final response, early stops, resume."""

from __future__ import annotations

import asyncio
from collections.abc import Callable

import pytest

from tests.conftest import arun
from wfctl import (
    InMemoryCheckpointStorage,
    RunContext,
    WorkflowErrorDetails,
    WorkflowEvent,
    WorkflowRunResult,
    WorkflowRunState,
    step,
    workflow,
)


def test_events_arrive_while_the_step_is_still_running() -> None:
    async def main() -> None:
        release = asyncio.Event()

        @step
        async def slow(x: int) -> int:
            await release.wait()
            return x + 1

        @workflow
        async def pipeline(x: int) -> int:
            return await slow(x)

        stream = pipeline.build(InMemoryCheckpointStorage()).run(1, stream=True)
        seen: list[str] = []
        async for event in stream:
            seen.append(event.type)
            if event.type == "executor_invoked":
                assert not release.is_set()  # the step has not finished: this is live
                release.set()
        assert seen[:2] == ["started", "status"]
        assert seen.index("executor_invoked") < seen.index("executor_completed")
        assert seen[-2:] == ["output", "status"]
        final = await stream.get_final_response()
        assert isinstance(final, WorkflowRunResult) and final.get_outputs() == [2]
        assert final.get_final_state() == WorkflowRunState.IDLE
        assert [e.type for e in stream.updates] == seen

    arun(main())


def test_final_response_without_reading_and_status_events() -> None:
    @workflow
    async def echo(x: int, ctx: RunContext) -> tuple[int, bool]:
        return x, ctx.is_streaming()

    async def main() -> None:
        wf = echo.build(InMemoryCheckpointStorage())
        final = await wf.run(4, stream=True, include_status_events=True).get_final_response()
        assert final.get_outputs() == [(4, True)]
        assert [e.state for e in final if e.type == "status"] == [
            WorkflowRunState.IN_PROGRESS,
            WorkflowRunState.IDLE,
        ]
        assert (await wf.run(4)).get_outputs() == [(4, False)]

    arun(main())


def test_a_reader_that_stops_early_does_not_stop_the_run() -> None:
    async def main() -> None:
        storage = InMemoryCheckpointStorage()
        release = asyncio.Event()
        done: list[int] = []

        @step
        async def slow(x: int) -> int:
            await release.wait()
            done.append(x)
            return x

        @workflow
        async def pipeline(x: int) -> int:
            return await slow(x) + await slow(x + 1)

        async with pipeline.build(storage).run(1, stream=True) as stream:
            async for event in stream:
                if event.type == "executor_invoked":
                    break  # stop reading while the first step is still running
            assert done == []
            release.set()
        # leaving the block waited for the run's end: both steps ran, the run completed
        assert done == [1, 2]
        final = await stream.get_final_response()
        assert final.status == "completed" and final.get_outputs() == [3]
        head = await storage.get_latest(run_id=final.run_id)
        assert head is not None and head.kind == "completed"

        # without `async with`: the run goes on; the final response still has every event
        release.clear()
        stream = pipeline.build(storage).run(5, stream=True)
        first = await anext(aiter(stream))
        assert first.type == "started"
        release.set()
        final = await stream.get_final_response()
        assert final.get_outputs() == [11] and done == [1, 2, 5, 6]
        assert [e.type for e in final].count("executor_completed") == 2

    arun(main())


def test_a_paused_run_resumes_as_a_stream() -> None:
    calls: list[str] = []

    @step
    async def draft(topic: str) -> str:
        calls.append(topic)
        return f"draft of {topic}"

    @workflow
    async def review(topic: str, ctx: RunContext) -> str:
        text = await draft(topic)
        verdict = await ctx.request_info(text, str, request_id="verdict")
        return f"{text}: {verdict}"

    async def main() -> None:
        wf = review.build(InMemoryCheckpointStorage())
        paused = [e async for e in wf.run("tea", stream=True)]
        assert [e.request_id for e in paused if e.type == "request_info"] == ["verdict"]
        assert paused[-1].state == WorkflowRunState.IDLE_WITH_PENDING_REQUESTS

        resumed = wf.run(responses={"verdict": "fine"}, stream=True)
        events: list[WorkflowEvent] = [e async for e in resumed]
        assert [e.executor_id for e in events if e.type == "executor_bypassed"] == ["draft"]
        assert [e.data for e in events if e.type == "output"] == ["draft of tea: fine"]
        assert calls == ["tea"]
        done = await resumed.get_final_response()
        assert done.get_final_state() == WorkflowRunState.IDLE

        # restoring a checkpoint streams too: a new run, every call served from the record
        restored = wf.run(checkpoint_id=done.checkpoint_id, stream=True)
        types = [e.type async for e in restored]
        assert "executor_invoked" not in types and types.count("executor_bypassed") == 1
        again = await restored.get_final_response()
        assert again.run_id != done.run_id and again.get_outputs() == ["draft of tea: fine"]
        assert calls == ["tea"]

    arun(main())


def test_a_failing_run_streams_its_failure() -> None:
    @step
    async def broken(x: int) -> int:
        raise ValueError(f"broken on {x}")

    @workflow
    async def failing(x: int) -> int:
        return await broken(x)

    async def main() -> None:
        events: list[WorkflowEvent] = []
        raised: list[BaseException] = []
        try:  # the stream may end or raise the run's error after its last event
            async for event in failing.build(InMemoryCheckpointStorage()).run(2, stream=True):
                events.append(event)
        except ValueError as exc:
            raised.append(exc)
        assert [str(exc) for exc in raised] in ([], ["broken on 2"])
        assert [e.executor_id for e in events if e.type == "executor_failed"] == ["broken"]
        assert [e.type for e in events][-2:] == ["failed", "status"]
        assert events[-1].state == WorkflowRunState.FAILED

    arun(main())


def test_a_run_that_raises_raises_from_the_stream_after_its_events() -> None:
    # Built on the stream class itself (an internal import): a run that raises its error, as
    # agent-framework's does, must reach the reader after the events it emitted first.
    from wfctl._engine._streaming import WorkflowStream

    async def failing(put: Callable[[WorkflowEvent], None]) -> WorkflowRunResult:
        put(WorkflowEvent.started())
        put(WorkflowEvent.failed(WorkflowErrorDetails("ValueError", "no")))
        raise ValueError("no")

    async def main() -> None:
        stream = WorkflowStream(failing)
        seen: list[str] = []

        async def read_all() -> None:
            async for event in stream:
                seen.append(event.type)

        with pytest.raises(ValueError, match="no"):
            await read_all()
        assert seen == ["started", "failed"]
        with pytest.raises(ValueError, match="no"):
            await stream.get_final_response()
        await stream.close()  # the failure is known: closing does not raise it again

    arun(main())
