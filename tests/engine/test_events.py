"""Engine events are the events ``WorkflowEvent(...)`` makes, however the engine builds them."""

from __future__ import annotations

from dataclasses import fields, replace
from typing import Any

import pytest

from wfctl import WorkflowErrorDetails, WorkflowEvent, WorkflowEventSource, WorkflowRunState
from wfctl._engine._events import EVENT_TYPES, EventHistory, event_of


@pytest.mark.parametrize(
    ("kind", "options"),
    [
        ("step_completed", {"executor_id": "echo", "extra": {"changed": True}}),
        ("status", {"state": WorkflowRunState.IDLE}),
        ("run_failed", {"details": WorkflowErrorDetails("ValueError", "bad")}),
        ("custom", {"origin": WorkflowEventSource.EXECUTOR}),
        ("checkpoint", {}),
    ],
)
def test_event_of_makes_what_the_dataclass_makes(kind: str, options: dict[str, Any]) -> None:
    event = event_of(kind, "r1", "a#0", {"x": 1}, **options)
    expected = WorkflowEvent(
        EVENT_TYPES.get(kind, kind),
        {"x": 1},
        kind=kind,
        run_id="r1",
        key="a#0",
        timestamp=event.timestamp,
        **{"origin": WorkflowEventSource.FRAMEWORK, **options},
    )
    assert event == expected
    assert {f.name: getattr(event, f.name) for f in fields(event)} == {
        f.name: getattr(expected, f.name) for f in fields(expected)
    }
    assert event.extra == options.get("extra", {})
    assert replace(event, key="b#0").key == "b#0"  # a plain, frozen event
    with pytest.raises(AttributeError):
        event.key = "c#0"  # type: ignore[misc]
    assert repr(event) == repr(expected)


def test_a_result_history_is_the_tuple_of_its_events_made_once() -> None:
    """Kept as fields or as events, a history reads as the tuple of the events they make:
    equal to it, sized without making them, the same event objects at every read, a slice a
    tuple."""
    made = event_of("checkpoint", "r1", None, "r1.0", timestamp=1.5)
    kept = (("step_started", "a#0", None, {"executor_id": "a"}, 2.5), made)
    history = EventHistory("r1", kept)
    assert len(history) == 2 and history._events is None  # sized, nothing made yet
    expected = (event_of("step_started", "r1", "a#0", None, executor_id="a", timestamp=2.5), made)
    assert history == expected and expected == history
    assert history == EventHistory("r1", kept) and history != expected[:1]
    assert history[0] is history[0] and history[1] is made
    assert history[:1] == expected[:1] and type(history[:1]) is tuple
    assert list(history) == list(expected) and repr(history) == repr(expected)
    assert EventHistory("r1", ()) == ()
