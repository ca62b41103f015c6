"""The run context handed to workflow bodies and steps.

``RunContext`` is the user's handle on the running run: asking for outside input, state,
events, outputs. ``get_run_context()`` returns the active one from anywhere inside a run.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ._events import WorkflowEvent, WorkflowEventSource
from ._port import port_var

if TYPE_CHECKING:
    from ._run import Run

__all__ = ["RunContext", "get_run_context"]

_port = port_var()


class RunContext:
    """The running run, as workflow bodies and steps see it.

    Declare a parameter annotated ``RunContext`` (or named ``ctx``) on a workflow or step and
    wfctl passes it in.
    """

    __slots__ = ("_run",)

    def __init__(self, run: Run) -> None:
        self._run = run

    @property
    def run_id(self) -> str:
        """The id of the run."""
        return self._run.run_id

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
        """
        return await self._run.request_info(request_data, response_type, request_id)

    def get_state(self, key: str, default: Any = None) -> Any:
        """Return the value stored under ``key`` by :meth:`set_state`, or ``default``."""
        return self._run.state.get(key, default)

    def set_state(self, key: str, value: Any) -> None:
        """Store ``value`` under ``key``; set inside a step, it is replayed with the step.

        Raises:
            UnencodableValueError: set inside a step, ``value`` cannot be stored.
        """
        self._run.set_state(key, value)

    async def sleep(self, seconds: float) -> None:
        """Sleep durably: the wake-up time is recorded, so a run killed or paused while it
        sleeps waits, once resumed, only for what is left (see ``wfctl._policies``)."""
        from ._policies import durable_sleep

        await durable_sleep(self._run, seconds)

    async def add_event(self, event: Any) -> None:
        """Add an event to the run's event stream (``kind == "custom"``).

        ``event`` is a :class:`~wfctl.WorkflowEvent` (``WorkflowEvent("intermediate", data)``,
        kept as built), or any value, which becomes the ``data`` of an event of type
        ``custom``. Events are not recorded: a step served from the record does not add its
        events again, and an ``output`` event added here is not one of the run's outputs
        (``yield_output`` records those).
        """
        if isinstance(event, WorkflowEvent):
            self._run.publish_custom(event)
        else:
            self._run.emit("custom", None, event, origin=WorkflowEventSource.EXECUTOR)

    def is_streaming(self) -> bool:
        """Return whether the run was started with ``run(..., stream=True)``."""
        return self._run.options.streaming

    async def yield_output(self, value: Any) -> None:
        """Add ``value`` to the run's outputs (before the return value)."""
        self._run.add_output(value)


def get_run_context() -> RunContext | None:
    """Return the context of the run the caller is part of, or None outside a run."""
    run = _port.get()
    return run.context if run is not None else None
