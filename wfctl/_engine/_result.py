"""The outcome of one ``Workflow.run`` call."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from ._events import RequestInfoEvent, WorkflowEvent, WorkflowRunState

__all__ = ["ResultStatus", "WorkflowRunResult"]

ResultStatus = Literal["completed", "paused", "failed", "cancelled"]


@dataclass(frozen=True, slots=True)
class WorkflowRunResult:
    """What a run did: its status, its head checkpoint, its outputs and events.

    ``checkpoint_id`` is the run's head after this call. ``origin_checkpoint_id`` is set when
    the run was restored from another run's checkpoint. ``error`` is set on failure.

    As in agent-framework, the result is also the sequence of its events: ``for event in
    result`` and ``len(result)`` see every event but ``started`` and the ``status`` events
    (those too with ``include_status_events``); ``status_timeline()`` gives the status
    events and ``get_final_state()`` the last one's state.

    Unlike agent-framework's, a result keeps only the most recent events of a long run
    (``run(..., event_history=N)``, 10,000 by default; None keeps all), of which those
    holding values of 1 KiB or more hold at most 4 MiB between them (``event_history_bytes=N``;
    None: no bound), and says how many earlier ones it let go in ``events_dropped`` (0:
    ``events`` holds them all). A run's ``events`` are made into ``WorkflowEvent`` objects
    when first read, and equal the tuple of them. An ``on_event`` listener and
    ``run(stream=True)`` see every event. ``outputs``,
    ``executed``, ``cached`` and ``changed`` are always complete; the last three are sequences
    of step keys held compressed, each equal to the tuple of its keys.
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
    include_status_events: bool = False
    events_dropped: int = 0

    def get_outputs(self) -> list[Any]:
        """Return the yielded outputs, then the return value unless it is None."""
        outputs = list(self.outputs)
        if self.status == "completed" and self.result is not None:
            outputs.append(self.result)
        return outputs

    def get_intermediate_outputs(self) -> list[Any]:
        """Return the data of the ``intermediate`` events user code added."""
        return [event.data for event in self.events if event.type == "intermediate"]

    def get_request_info_events(self) -> list[RequestInfoEvent]:
        """Return the requests the run is paused on (empty unless ``status == "paused"``)."""
        return list(self.requests)

    def status_timeline(self) -> list[WorkflowEvent]:
        """Return the ``status`` events, in order (each with ``.state``)."""
        return [event for event in self.events if event.type == "status"]

    def get_final_state(self) -> WorkflowRunState:
        """Return the state the run ended this call in (the last status event's).

        ``IDLE``: completed; ``IDLE_WITH_PENDING_REQUESTS``: paused on requests;
        ``CANCELLED``: paused from outside (resumable); ``FAILED``: failed.
        """
        timeline = self.status_timeline()
        state = timeline[-1].state if timeline else None
        if state is not None:
            return state
        if self.status == "paused" and not self.requests:  # the history kept no status event
            return WorkflowRunState.CANCELLED
        return _STATES[self.status]

    def _listed(self) -> list[WorkflowEvent]:
        return [
            event
            for event in self.events
            if event.type != "started" and (self.include_status_events or event.type != "status")
        ]

    def __iter__(self) -> Iterator[WorkflowEvent]:
        return iter(self._listed())

    def __len__(self) -> int:
        return len(self._listed())

    def __bool__(self) -> bool:
        return True  # a result is never "empty", whatever its events

    def __getitem__(self, index: int) -> WorkflowEvent:
        return self._listed()[index]

    def __repr__(self) -> str:
        # Counts, not contents: the events hold every step's value, and asyncio.run() builds
        # this repr (through its SIGINT handler's task) after every run it runs.
        return (
            f"WorkflowRunResult(status={self.status!r}, run_id={self.run_id!r}, "
            f"checkpoint_id={self.checkpoint_id!r}, events={len(self.events)}, "
            f"outputs={len(self.outputs)}, requests={len(self.requests)}, error={self.error!r})"
        )


#: The state of a result built without status events (by hand, in tests).
_STATES: dict[ResultStatus, WorkflowRunState] = {
    "completed": WorkflowRunState.IDLE,
    "paused": WorkflowRunState.IDLE_WITH_PENDING_REQUESTS,
    "failed": WorkflowRunState.FAILED,
    "cancelled": WorkflowRunState.CANCELLED,
}
