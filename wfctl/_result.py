"""The outcome of one ``Workflow.run`` call."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from ._events import RequestInfoEvent, WorkflowEvent

__all__ = ["ResultStatus", "WorkflowRunResult"]

ResultStatus = Literal["completed", "paused", "failed"]


@dataclass(frozen=True, slots=True)
class WorkflowRunResult:
    """What a run did: its status, its head checkpoint, its outputs and events.

    ``checkpoint_id`` is the run's head after this call. ``origin_checkpoint_id`` is set when
    the run was restored from another run's checkpoint. ``error`` is set on failure.
    """

    status: ResultStatus
    run_id: str
    checkpoint_id: str
    outputs: Sequence[Any] = ()
    result: Any = None
    events: Sequence[WorkflowEvent] = ()
    requests: Sequence[RequestInfoEvent] = ()
    error: BaseException | None = None
    origin_checkpoint_id: str | None = None
    executed: Sequence[str] = field(default_factory=tuple)
    cached: Sequence[str] = field(default_factory=tuple)
    changed: Sequence[str] = field(default_factory=tuple)

    def get_outputs(self) -> list[Any]:
        """Return the yielded outputs, then the return value unless it is None."""
        outputs = list(self.outputs)
        if self.status == "completed" and self.result is not None:
            outputs.append(self.result)
        return outputs

    def get_request_info_events(self) -> list[RequestInfoEvent]:
        """Return the requests the run is paused on (empty unless ``status == "paused"``)."""
        return list(self.requests)
