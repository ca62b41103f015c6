"""Events a run emits, in order, to ``result.events`` and live to an ``on_event`` callback."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Final

__all__ = ["EVENT_KINDS", "RequestInfoEvent", "WorkflowEvent"]

EVENT_KINDS: Final = frozenset(
    {
        "run_started",
        "step_started",
        "step_completed",
        "step_cached",
        "step_failed",
        "request",
        "output",
        "checkpoint",
        "run_paused",
        "run_completed",
        "run_failed",
        "custom",
    }
)


@dataclass(frozen=True, slots=True)
class WorkflowEvent:
    """Something that happened in a run.

    ``key`` is the durable key of the step or request involved (None for run-level events);
    ``data`` is kind-specific (e.g. ``{"changed": True}`` on a step that re-executed because its
    recorded result no longer matched, the checkpoint id on ``checkpoint``).
    """

    kind: str
    run_id: str
    key: str | None = None
    data: Any = None
    timestamp: float = 0.0


@dataclass(frozen=True, slots=True)
class RequestInfoEvent(WorkflowEvent):
    """A request for outside input that the run is waiting on (``kind == "request"``).

    ``response_type`` is the type the request declared (``str``, ``list[int]``, a registered
    class; None when it declared none), as agent-framework gives it; the pause checkpoint, the
    answers template and ``--json`` show its name (``wfctl._response_types.type_name``).
    """

    request_data: Any = None
    response_type: Any = None
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def request_id(self) -> str:
        """The id to answer this request with (its durable key)."""
        return self.key or ""
