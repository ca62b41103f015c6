"""The run context handed to workflow bodies and steps.

``RunContext`` is the user's handle on the running run: asking for outside input, state,
events, outputs. ``get_run_context()`` returns the active one from anywhere inside a run.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

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

    async def add_event(self, data: Any) -> None:
        """Emit a custom event (kind ``custom``) to the run's event stream."""
        self._run.emit("custom", None, data)

    async def yield_output(self, value: Any) -> None:
        """Add ``value`` to the run's outputs (before the return value)."""
        self._run.add_output(value)


def get_run_context() -> RunContext | None:
    """Return the context of the run the caller is part of, or None outside a run."""
    run = _port.get()
    return run.context if run is not None else None
