"""The run port: what code running inside a run reaches the run through.

A step call (``Step.__call__``), ``get_run_context()`` and the task factory of
:mod:`wfctl._engine._keys` find the running run in one context variable and call it only through
:class:`RunPort`. :class:`~wfctl._engine._run.Run` implements it; nothing else does.
"""

from __future__ import annotations

import contextvars
from collections.abc import Coroutine
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    import asyncio

    from ._context import RunContext
    from ._step import Step

__all__ = ["RunPort", "port_var"]


class RunPort(Protocol):
    """The running run, as steps, the run context and the task factory call it."""

    @property
    def context(self) -> RunContext:
        """The :class:`~wfctl.RunContext` handed to workflow bodies and steps."""
        ...

    def start_step(
        self, step: Step[Any], args: tuple[Any, ...], kwargs: dict[str, Any], explicit: str | None
    ) -> Coroutine[Any, Any, Any]:
        """Key a step call where it is made; return the coroutine that serves or executes it."""
        ...

    def adopt_task(self, task: asyncio.Task[Any]) -> None:
        """Own a task created inside the run, so none outlives it."""
        ...

    def guard(self, coro: Coroutine[Any, Any, Any]) -> Coroutine[Any, Any, Any]:
        """Wrap workflow code about to run in its own task."""
        ...


_port: contextvars.ContextVar[RunPort | None] = contextvars.ContextVar(
    "wfctl_run_port", default=None
)


def port_var() -> contextvars.ContextVar[RunPort | None]:
    """Return the context variable holding the run the running code belongs to (None outside)."""
    return _port
