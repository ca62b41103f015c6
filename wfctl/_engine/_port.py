"""The run port: what code running inside a run reaches the run through.

A step call (``Step.__call__``), ``get_run_context()``, the task factory of
:mod:`wfctl._engine._keys` and a :class:`~wfctl.RunContext` find the running run in one context
variable and call it only through :class:`RunPort`. :class:`~wfctl._engine._run.Run` implements
it; nothing else does. This module sits below everything that uses it and names none of it: the
port is generic in the context it hands out and the step it starts, and each user says which
(``RunPort[RunContext, Any]`` in ``_context``, ``RunPort[Any, Step[Any]]`` in ``_step``).
"""

from __future__ import annotations

import contextvars
from collections.abc import Coroutine, Sequence
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

if TYPE_CHECKING:
    import asyncio

    from ._events import WorkflowEvent

__all__ = ["RunOptionsView", "RunPort", "port_var"]

#: The run's context, as the port hands it out (a :class:`~wfctl.RunContext`).
ContextT = TypeVar("ContextT", covariant=True)
#: A step, as the port starts it (a :class:`~wfctl.Step`).
StepT = TypeVar("StepT", contravariant=True)


class RunOptionsView(Protocol):
    """What code inside a run reads of the run's options."""

    @property
    def streaming(self) -> bool:
        """The caller reads the run's events as they happen (``run(stream=True)``)."""
        ...

    @property
    def execute(self) -> bool:
        """False: the run serves only recorded results (any call that would run diverges)."""
        ...


class RunPort(Protocol[ContextT, StepT]):
    """The running run, as steps, the run context and the task factory call it."""

    @property
    def context(self) -> ContextT:
        """The :class:`~wfctl.RunContext` handed to workflow bodies and steps."""
        ...

    def start_step(
        self, step: StepT, args: tuple[Any, ...], kwargs: dict[str, Any], explicit: str | None
    ) -> Coroutine[Any, Any, Any]:
        """Key a step call where it is made; return the coroutine that serves or executes it."""
        ...

    def adopt_task(self, task: asyncio.Task[Any]) -> None:
        """Own a task created inside the run, so none outlives it."""
        ...

    def guard(self, coro: Coroutine[Any, Any, Any]) -> Coroutine[Any, Any, Any]:
        """Wrap workflow code about to run in its own task."""
        ...

    # -- what a RunContext reaches -------------------------------------------------------------

    @property
    def run_id(self) -> str:
        """The run's id."""
        ...

    @property
    def options(self) -> RunOptionsView:
        """How the run was started."""
        ...

    @property
    def events(self) -> Sequence[WorkflowEvent]:
        """The events kept so far, oldest first."""
        ...

    @property
    def outputs(self) -> Sequence[Any]:
        """The outputs yielded so far."""
        ...

    @property
    def state(self) -> dict[str, Any]:
        """The run's state."""
        ...

    async def request_info(
        self, request_data: Any, response_type: type | None, request_id: str | None
    ) -> Any:
        """Ask for outside input; the answer once the run is resumed with it."""
        ...

    def set_state(self, key: str, value: Any) -> None:
        """Set run state (inside a step, recorded with the step's result)."""
        ...

    def publish_custom(self, event: WorkflowEvent) -> None:
        """Record an event user code made."""
        ...

    def emit(
        self,
        kind: str,
        key: str | None = None,
        data: Any = None,
        data_bytes: int = 0,
        **fields: Any,
    ) -> None:
        """Record an event of wfctl's ``kind`` and hand it to the live listener."""
        ...

    def add_output(self, value: Any) -> None:
        """Append an output (inside a step, recorded with the step's result)."""
        ...

    async def sleep(self, seconds: float) -> None:
        """Sleep durably: the wake-up time is recorded."""
        ...


_port: contextvars.ContextVar[RunPort[Any, Any] | None] = contextvars.ContextVar(
    "wfctl_run_port", default=None
)


def port_var() -> contextvars.ContextVar[RunPort[Any, Any] | None]:
    """Return the context variable holding the run the running code belongs to (None outside)."""
    return _port
