"""What one sequential step costs the engine, counted (never timed).

A sequential step on a store whose save never waits commits in its caller: no future, no
lock, no committer task per step. With no live listener, an event is made only if the result's
history keeps it, and only when the caller reads that history. Each count is taken over two run lengths, so only what grows with the number
of steps is measured, not what a run does once.
"""

from __future__ import annotations

import sys
from collections import Counter
from types import FrameType
from typing import Any

import pytest

from tests.conftest import arun
from wfctl import InMemoryCheckpointStorage, step, workflow

#: Python functions counted, by their code's qualified name.
WATCHED = {
    "event_of",
    "BaseEventLoop.create_future",
    "Lock.acquire",
    "CheckpointChain._commit_queued",
    "CheckpointChain._enqueue",
}


@step
async def echo(text: str) -> str:
    return text


@workflow
async def sequential(n: int) -> str:
    result = ""
    for i in range(n):
        result = await echo(f"call {i}")
    return result


def _calls(n: int, *, read: bool = False, **options: Any) -> Counter[str]:
    """Count the watched calls of one run of ``n`` sequential steps (and of reading its
    result's events, with ``read``)."""
    counted: Counter[str] = Counter()

    def profile(frame: FrameType, event: str, arg: object) -> None:
        if event == "call":
            name = frame.f_code.co_qualname
            if name in WATCHED:
                counted[name] += 1

    async def main() -> None:
        built = sequential.build(checkpoint_storage=InMemoryCheckpointStorage())
        sys.setprofile(profile)
        try:
            result = await built.run(n, **options)
            if read:
                assert len(list(result.events)) == len(result.events)
        finally:
            sys.setprofile(None)
        assert result.get_outputs() == [f"call {n - 1}"]

    arun(main())
    return counted


def _per_step(*, read: bool = False, **options: Any) -> dict[str, float]:
    short, long = _calls(10, read=read, **options), _calls(40, read=read, **options)
    return {name: (long[name] - short[name]) / 30 for name in sorted(WATCHED)}


def test_a_solo_step_commits_without_future_lock_queue_or_task() -> None:
    per_step = _per_step(event_history=0)
    assert per_step == dict.fromkeys(sorted(WATCHED), 0.0)


@pytest.mark.parametrize(
    ("history", "read", "made"), [(None, True, 3.0), (None, False, 0.0), (15, True, 0.0)]
)
def test_events_are_made_only_for_the_history_kept_and_read(
    history: int | None, read: bool, made: float
) -> None:
    """Three events a step (started, completed, checkpoint): all kept, all made once the
    result's events are read, none if they are not; a history of 15 keeps (and makes) 15 at
    most, whatever the run's length."""
    assert _per_step(event_history=history, read=read)["event_of"] == made


def test_a_listener_still_gets_every_event_as_it_happens() -> None:
    seen: list[str] = []
    counted = _calls(10, event_history=0, on_event=lambda event: seen.append(event.kind))
    assert seen.count("step_started") == seen.count("step_completed") == 10
    assert seen.count("checkpoint") == 11  # ten steps and the ending (the root is before)
    assert counted["event_of"] == len(seen)


def test_the_history_holds_the_events_a_listener_sees() -> None:
    """Made late or at once, the kept events are the same events, in the same order."""
    streamed: list[Any] = []

    async def main() -> tuple[Any, Any]:
        built = sequential.build(checkpoint_storage=InMemoryCheckpointStorage())
        return await built.run(5), await built.run(5, on_event=streamed.append)

    quiet, loud = arun(main())
    assert list(loud.events) == streamed

    def shape(event: Any) -> tuple[Any, ...]:
        data = event.data if event.kind.startswith("step_") else None
        fields = (event.executor_id, event.state, event.origin, event.extra)
        return (type(event), event.type, event.kind, event.key, data, *fields)

    assert [shape(e) for e in quiet.events] == [shape(e) for e in loud.events]
    assert [e.data for e in quiet.events if e.kind == "checkpoint"] == [
        f"{quiet.run_id}.{seq}" for seq in range(1, 7)
    ]
    assert {e.run_id for e in quiet.events} == {quiet.run_id}
    stamps = [e.timestamp for e in quiet.events]
    assert stamps == sorted(stamps) and all(type(s) is float for s in stamps)
