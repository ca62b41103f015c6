"""The run context handed to workflow bodies and steps.

``RunContext`` is the user's handle on the running run: asking for outside input, state,
events, outputs. ``get_run_context()`` returns the active one from anywhere inside a run.
"""

from __future__ import annotations

import asyncio
import contextvars
from collections.abc import Mapping
from typing import Any

from wfctl._errors import RunStateError
from wfctl._records._codec import value_size

from ._events import WorkflowEvent, WorkflowEventSource
from ._port import RunPort, port_var
from ._response_types import convert_answer, type_name

__all__ = ["RunContext", "context_of", "get_run_context"]

_port: contextvars.ContextVar[RunPort[RunContext, Any] | None] = port_var()


class RunContext:
    """The running run, as workflow bodies and steps see it.

    Declare a parameter annotated ``RunContext`` (or named ``ctx``) on a workflow or step and
    wfctl passes it in.

    ``RunContext(workflow_name)`` builds a stand-alone context, to call a step on its own (in a
    test): it keeps state, events and outputs in memory (see :attr:`events`, :attr:`outputs`);
    it has no run, so its ``run_id`` is ``""`` and ``request_info`` returns the answer given in
    ``responses`` (by request id, ``request#<n>`` when none is given) or raises
    :class:`~wfctl.RunStateError`, since there is no run to pause.
    """

    __slots__ = ("_alone", "_run")

    def __init__(
        self, workflow_name: str = "", *, responses: Mapping[str, Any] | None = None
    ) -> None:
        self._run: RunPort[RunContext, Any] | None = None
        self._alone = _Standalone(workflow_name, dict(responses or {}))

    @property
    def run_id(self) -> str:
        """The id of the run (``""`` for a stand-alone context)."""
        return self._run.run_id if self._run is not None else ""

    @property
    def events(self) -> tuple[Any, ...]:
        """The events emitted so far: the run's, or what a stand-alone context's
        :meth:`add_event` was given."""
        return tuple(self._run.events) if self._run is not None else tuple(self._alone.events)

    @property
    def outputs(self) -> tuple[Any, ...]:
        """The outputs yielded so far (:meth:`yield_output`)."""
        return tuple(self._run.outputs) if self._run is not None else tuple(self._alone.outputs)

    async def request_info(
        self,
        request_data: Any,
        response_type: type | None = None,
        *,
        request_id: str | None = None,
    ) -> Any:
        """Ask for outside input; return the answer once the run is resumed with it.

        Without an answer the calling branch suspends; when every other branch has finished,
        failed or suspended, the run pauses with all pending requests in its head checkpoint.
        The request's id is ``<scope>/request#<n>`` unless ``request_id`` is given.

        Raises:
            DuplicateStepKeyError: ``request_id`` was already used in this run.
            UnencodableValueError: ``request_data`` cannot be stored.
            RunStateError: a stand-alone context was given no answer to this request.
        """
        if self._run is None:
            return self._alone.answer(response_type, request_id)
        return await self._run.request_info(request_data, response_type, request_id)

    def get_state(self, key: str, default: Any = None) -> Any:
        """Return the value stored under ``key`` by :meth:`set_state`, or ``default``."""
        state = self._run.state if self._run is not None else self._alone.state
        return state.get(key, default)

    def set_state(self, key: str, value: Any) -> None:
        """Store ``value`` under ``key``; set inside a step, it is replayed with the step.

        Raises:
            UnencodableValueError: set inside a step, ``value`` cannot be stored.
        """
        if self._run is None:
            self._alone.state[key] = value
        else:
            self._run.set_state(key, value)

    async def sleep(self, seconds: float) -> None:
        """Sleep durably: the wake-up time is recorded, so a run killed or paused while it
        sleeps waits, once resumed, only for what is left (see ``wfctl._engine._policies``)."""
        if self._run is None:
            await asyncio.sleep(seconds)
        else:
            await self._run.sleep(seconds)

    async def add_event(self, event: Any) -> None:
        """Add an event to the run's event stream (``kind == "custom"``).

        ``event`` is a :class:`~wfctl.WorkflowEvent` (``WorkflowEvent("intermediate", data)``,
        kept as built), or any value, which becomes the ``data`` of an event of type
        ``custom``. Events are not recorded: a step served from the record does not add its
        events again, and an ``output`` event added here is not one of the run's outputs
        (``yield_output`` records those).
        """
        if self._run is None:
            self._alone.events.append(event)
            return
        if isinstance(event, WorkflowEvent):
            self._run.publish_custom(event)
        else:
            self._run.emit(
                "custom", None, event, value_size(event), origin=WorkflowEventSource.EXECUTOR
            )

    def is_streaming(self) -> bool:
        """Return whether the run was started with ``run(..., stream=True)``."""
        return self._run is not None and self._run.options.streaming

    async def yield_output(self, value: Any) -> None:
        """Add ``value`` to the run's outputs (before the return value)."""
        if self._run is None:
            self._alone.outputs.append(value)
            return
        self._run.add_output(value)


def context_of(run: RunPort[RunContext, Any]) -> RunContext:
    """Return the context of ``run``, as its workflow body and steps receive it."""
    context = RunContext.__new__(RunContext)
    context._run = run
    return context


class _Standalone:
    """What a stand-alone :class:`RunContext` holds in place of a run."""

    def __init__(self, workflow_name: str, responses: dict[str, Any]) -> None:
        self.workflow_name = workflow_name
        self.responses = responses
        self.state: dict[str, Any] = {}
        self.events: list[Any] = []
        self.outputs: list[Any] = []
        self.asked = 0

    def answer(self, response_type: Any, request_id: str | None) -> Any:
        """Return the answer given for this request, converted to ``response_type``."""
        rid = request_id if request_id is not None else f"request#{self.asked}"
        self.asked += request_id is None
        if rid not in self.responses:
            raise RunStateError(
                self.workflow_name or "-",
                f"a stand-alone RunContext has no run to pause for request {rid!r}; give "
                f"its answer with RunContext(..., responses={{{rid!r}: ...}})",
            )
        return convert_answer(self.responses[rid], type_name(response_type, rid), rid)


def get_run_context() -> RunContext | None:
    """Return the context of the run the caller is part of, or None outside a run."""
    run = _port.get()
    return run.context if run is not None else None
