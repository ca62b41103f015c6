"""Events a run emits, in order, to ``result.events`` and live to an ``on_event`` callback.

Every event carries two names for what happened: ``kind``, wfctl's own (``step_completed``,
``checkpoint``, ...), and ``type``, agent-framework's name for the same fact
(``executor_completed``, ...), so code written for agent-framework's functional API reads
``event.type`` unchanged. Facts agent-framework has no name for keep wfctl's (``checkpoint``,
``sleeping``, ``step_retrying``). The table is ``EVENT_TYPES``; docs/agent-framework.md explains it.
"""

from __future__ import annotations

import builtins
import time
import traceback
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import KW_ONLY, dataclass, field
from enum import Enum
from types import GenericAlias
from typing import Any, Final, overload

from wfctl._frozen import slot_setters

#: ``EVENT_TYPES`` and ``event_of`` are the engine's, not exported from ``wfctl``.
__all__ = [
    "EVENT_KINDS",
    "RequestInfoEvent",
    "WorkflowErrorDetails",
    "WorkflowEvent",
    "WorkflowEventSource",
    "WorkflowRunState",
]


class WorkflowRunState(str, Enum):  # noqa: UP042  # agent-framework's base: same str()
    """Where a run stands, in agent-framework's names (the ``state`` of ``status`` events).

    wfctl reaches ``IN_PROGRESS`` when the body starts, ``IN_PROGRESS_PENDING_REQUESTS`` after
    each request it cannot answer yet, and ends ``IDLE`` (completed), ``IDLE_WITH_PENDING_REQUESTS``
    (paused on requests), ``CANCELLED`` (paused from outside with no request: Ctrl-C, SIGTERM,
    ``wfctl pause``, resumable; or ended for good by ``wfctl cancel`` while it ran) or
    ``FAILED``. ``STARTED`` is never a status: the ``started``
    event says it.
    """

    STARTED = "STARTED"
    IN_PROGRESS = "IN_PROGRESS"
    IN_PROGRESS_PENDING_REQUESTS = "IN_PROGRESS_PENDING_REQUESTS"
    IDLE = "IDLE"
    IDLE_WITH_PENDING_REQUESTS = "IDLE_WITH_PENDING_REQUESTS"
    FAILED = "FAILED"
    CANCELLED = "CANCELLED"


class WorkflowEventSource(str, Enum):  # noqa: UP042  # agent-framework's base: same str()
    """Who made an event: the engine (``FRAMEWORK``) or user code (``EXECUTOR``, ``add_event``)."""

    FRAMEWORK = "FRAMEWORK"
    EXECUTOR = "EXECUTOR"


#: wfctl's kind -> agent-framework's type for the same fact. Kinds absent here keep their name.
EVENT_TYPES: Final[Mapping[str, str]] = {
    "run_started": "started",
    "status": "status",
    "step_started": "executor_invoked",
    "step_completed": "executor_completed",
    "step_cached": "executor_bypassed",
    "step_failed": "executor_failed",
    "request": "request_info",
    "output": "output",
    "run_paused": "status",
    "run_completed": "status",
    "run_failed": "failed",
    "run_cancelled": "status",
}

EVENT_KINDS: Final = frozenset(
    {
        *EVENT_TYPES,
        "checkpoint",
        "sleeping",
        "step_retrying",
        "custom",
    }
)


def error_message(exc: BaseException) -> str:
    """``str(exc)``, or what a traceback prints when that raises.

    An exception whose ``__str__`` is broken still reaches the workflow (or fails the run) as
    itself: describing it must not raise in its place.
    """
    try:
        return str(exc)
    except Exception:
        return "<exception str() failed>"


@dataclass(frozen=True, slots=True)
class WorkflowErrorDetails:
    """What went wrong, on ``failed`` and ``executor_failed`` events (``event.details``)."""

    error_type: str
    message: str
    traceback: str | None = None
    executor_id: str | None = None
    extra: dict[str, Any] | None = None

    @classmethod
    def from_exception(
        cls, exc: BaseException, *, executor_id: str | None = None
    ) -> WorkflowErrorDetails:
        """Describe ``exc`` (its type, message and formatted traceback)."""
        formatted = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))
        return cls(type(exc).__name__, error_message(exc), formatted, executor_id)


@dataclass(frozen=True, slots=True)
class WorkflowEvent:
    """Something that happened in a run.

    Build one as agent-framework does, ``WorkflowEvent("intermediate", data, executor_id=...)``
    or with a factory (``WorkflowEvent.intermediate(...)``), and hand it to
    ``ctx.add_event``. The engine's own events also say:

    - ``type``: agent-framework's name for the fact; ``kind``: wfctl's (see ``EVENT_TYPES``);
    - ``executor_id``: the step's name on step events; the workflow's name on ``output``
      (return value or an output yielded in the body) and ``request_info``;
    - ``data``: the step's result on ``executor_completed`` and ``executor_bypassed``, its
      arguments (``{"args": ..., "kwargs": ...}``) on ``executor_invoked``, the error's
      :class:`WorkflowErrorDetails` on ``executor_failed``, the value on ``output``, the request
      on ``request_info``; kind-specific data on wfctl-only kinds (the checkpoint id on
      ``checkpoint``, ``{"attempt", "delay", ...}`` on ``step_retrying``);
    - ``state`` on ``status`` events; ``details`` on ``failed`` and ``executor_failed``;
    - ``key``: the durable key of the step or request involved (None for run-level events);
    - ``extra``: wfctl's facts beside ``data`` (``{"changed": True}`` on a step that re-executed
      because its recorded result no longer matched, ``recorded_as``, ``error``, ``divergence``).
    """

    type: str
    data: Any = None
    _: KW_ONLY
    executor_id: str | None = None
    state: WorkflowRunState | None = None
    details: WorkflowErrorDetails | None = None
    origin: WorkflowEventSource = WorkflowEventSource.EXECUTOR
    kind: str = "custom"
    run_id: str = ""
    key: str | None = None
    timestamp: float = 0.0
    extra: Mapping[str, Any] = field(default_factory=dict)

    def __class_getitem__(cls, item: Any) -> GenericAlias:
        """Allow ``WorkflowEvent[T]`` in annotations, as agent-framework's generic event does."""
        return GenericAlias(cls, item)

    # -- agent-framework's factories -------------------------------------------------------

    @classmethod
    def started(cls, data: Any = None) -> WorkflowEvent:
        """A ``started`` event."""
        return cls("started", data)

    @classmethod
    def status(cls, state: WorkflowRunState, data: Any = None) -> WorkflowEvent:
        """A ``status`` event for ``state``."""
        return cls("status", data, state=state)

    @classmethod
    def failed(cls, details: WorkflowErrorDetails, data: Any = None) -> WorkflowEvent:
        """A ``failed`` event."""
        return cls("failed", data, details=details)

    @classmethod
    def warning(cls, message: str) -> WorkflowEvent:
        """A ``warning`` from user code."""
        return cls("warning", message)

    @classmethod
    def error(cls, exception: Exception) -> WorkflowEvent:
        """A non-fatal ``error`` from user code."""
        return cls("error", exception)

    @classmethod
    def intermediate(cls, data: Any = None, *, executor_id: str | None = None) -> WorkflowEvent:
        """An ``intermediate`` (non-terminal) output."""
        return cls("intermediate", data, executor_id=executor_id)

    @classmethod
    def output(cls, data: Any = None, *, executor_id: str | None = None) -> WorkflowEvent:
        """An ``output`` event (only ``ctx.yield_output`` makes an output the run records)."""
        return cls("output", data, executor_id=executor_id)

    @classmethod
    def executor_invoked(cls, executor_id: str, data: Any = None) -> WorkflowEvent:
        """An ``executor_invoked`` event."""
        return cls("executor_invoked", data, executor_id=executor_id)

    @classmethod
    def executor_completed(cls, executor_id: str, data: Any = None) -> WorkflowEvent:
        """An ``executor_completed`` event."""
        return cls("executor_completed", data, executor_id=executor_id)

    @classmethod
    def executor_failed(cls, executor_id: str, details: WorkflowErrorDetails) -> WorkflowEvent:
        """An ``executor_failed`` event."""
        return cls("executor_failed", details, executor_id=executor_id, details=details)

    @classmethod
    def executor_bypassed(cls, executor_id: str, data: Any = None) -> WorkflowEvent:
        """An ``executor_bypassed`` event (a step served from the record)."""
        return cls("executor_bypassed", data, executor_id=executor_id)

    @classmethod
    def request_info(
        cls,
        request_id: str,
        source_executor_id: str,
        request_data: Any,
        response_type: builtins.type[Any] | None = None,
    ) -> RequestInfoEvent:
        """A ``request_info`` event."""
        return RequestInfoEvent(
            "request_info",
            request_data,
            executor_id=source_executor_id,
            kind="request",
            key=request_id,
            request_data=request_data,
            response_type=response_type,
        )


@dataclass(frozen=True, slots=True, kw_only=True)
class RequestInfoEvent(WorkflowEvent):
    """A request for outside input that the run is waiting on (``kind == "request"``).

    ``response_type`` is the type the request declared (``str``, ``list[int]``, a registered
    class; None when it declared none), as agent-framework gives it; the pause checkpoint, the
    answers template and ``--json`` show its name (``wfctl._engine._response_types.type_name``).
    """

    request_data: Any = None
    response_type: Any = None

    @property
    def request_id(self) -> str:
        """The id to answer this request with (its durable key)."""
        return self.key or ""

    @property
    def source_executor_id(self) -> str:
        """The workflow that asked (agent-framework's name for it)."""
        return self.executor_id or ""

    @property
    def request_type(self) -> builtins.type[Any]:
        """The type of ``request_data``."""
        return type(self.request_data)


#: Each field's slot, to fill an engine event in without the dataclass's ``__init__`` (a
#: frozen dataclass sets each field through ``object.__setattr__``: a run makes three events a
#: step, and that was half of their cost).
(
    _SET_TYPE,
    _SET_DATA,
    _SET_EXECUTOR_ID,
    _SET_STATE,
    _SET_DETAILS,
    _SET_ORIGIN,
    _SET_KIND,
    _SET_RUN_ID,
    _SET_KEY,
    _SET_TIMESTAMP,
    _SET_EXTRA,
) = slot_setters(
    WorkflowEvent,
    *("type", "data", "executor_id", "state", "details"),
    *("origin", "kind", "run_id", "key", "timestamp", "extra"),
)
_new_event = object.__new__
_type_of = EVENT_TYPES.get


def event_of(
    kind: str,
    run_id: str,
    key: str | None = None,
    data: Any = None,
    *,
    executor_id: str | None = None,
    state: WorkflowRunState | None = None,
    details: WorkflowErrorDetails | None = None,
    extra: Mapping[str, Any] | None = None,
    origin: WorkflowEventSource = WorkflowEventSource.FRAMEWORK,
    timestamp: float | None = None,
) -> WorkflowEvent:
    """Return an engine event of wfctl's ``kind``, typed with agent-framework's name for it.

    The event is the one ``WorkflowEvent(...)`` would make of these fields (``extra`` None:
    an empty dict; ``timestamp`` None: now), filled in slot by slot.
    """
    event: WorkflowEvent = _new_event(WorkflowEvent)
    _SET_TYPE(event, _type_of(kind, kind))
    _SET_DATA(event, data)
    _SET_EXECUTOR_ID(event, executor_id)
    _SET_STATE(event, state)
    _SET_DETAILS(event, details)
    _SET_ORIGIN(event, origin)
    _SET_KIND(event, kind)
    _SET_RUN_ID(event, run_id)
    _SET_KEY(event, key)
    _SET_TIMESTAMP(event, time.time() if timestamp is None else timestamp)
    _SET_EXTRA(event, {} if extra is None else extra)
    return event


#: An event kept as what makes it (a run with no listener): kind, key, data, its other fields,
#: time. :func:`made_event` makes the event.
DeferredEvent = tuple[str, str | None, Any, dict[str, Any], float]


def made_event(run_id: str, kept: WorkflowEvent | DeferredEvent) -> WorkflowEvent:
    """Return the event a run kept (made now if it was kept as its fields)."""
    if type(kept) is tuple:
        kind, key, data, fields, timestamp = kept
        return event_of(kind, run_id, key, data, timestamp=timestamp, **fields)
    return kept  # type: ignore[return-value]  # not a tuple: an event


class EventHistory(Sequence[WorkflowEvent]):
    """A result's events (``WorkflowRunResult.events``), made when first read.

    A run with no listener keeps each event as its fields (:data:`DeferredEvent`); its result
    makes them into events only if its caller reads them, so one that never does (most runs)
    pays nothing for a long run's history. Equal to the tuple of its events, and a tuple is
    what a slice gives.
    """

    __slots__ = ("_events", "_kept", "_run_id")

    def __init__(self, run_id: str, kept: tuple[WorkflowEvent | DeferredEvent, ...]) -> None:
        self._run_id = run_id
        self._kept = kept
        self._events: tuple[WorkflowEvent, ...] | None = None

    def _made(self) -> tuple[WorkflowEvent, ...]:
        events = self._events
        if events is None:
            run_id = self._run_id
            events = self._events = tuple([made_event(run_id, kept) for kept in self._kept])
            self._kept = ()
        return events

    def __len__(self) -> int:
        events = self._events
        return len(self._kept) if events is None else len(events)

    @overload
    def __getitem__(self, index: int) -> WorkflowEvent: ...
    @overload
    def __getitem__(self, index: slice) -> tuple[WorkflowEvent, ...]: ...
    def __getitem__(self, index: int | slice) -> WorkflowEvent | tuple[WorkflowEvent, ...]:
        return self._made()[index]

    def __iter__(self) -> Iterator[WorkflowEvent]:
        return iter(self._made())

    def __eq__(self, other: object) -> bool:
        if isinstance(other, EventHistory):
            other = other._made()
        if isinstance(other, tuple):
            return self._made() == other
        return NotImplemented

    def __hash__(self) -> int:
        return hash(self._made())

    def __repr__(self) -> str:
        return repr(self._made())
