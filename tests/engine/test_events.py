"""Engine events are the events ``WorkflowEvent(...)`` makes, however the engine builds them."""

from __future__ import annotations

from dataclasses import fields, replace
from typing import Any

import pytest

from wfctl import WorkflowErrorDetails, WorkflowEvent, WorkflowEventSource, WorkflowRunState
from wfctl._events import EVENT_TYPES, event_of


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
