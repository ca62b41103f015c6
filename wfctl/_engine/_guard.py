"""Keeping workflow code from ending the process: a ``SystemExit`` it raises fails the run.

asyncio re-raises a ``SystemExit`` (and ``KeyboardInterrupt``) that escapes a task out of the
event loop itself, so ``sys.exit(0)`` in a step would end ``wfctl`` with status 0, no report
and the run left half done. The run loop therefore turns a ``SystemExit`` into
:class:`~wfctl.WorkflowExitError` where workflow code runs: in a step body (``Run._execute``),
and in every task of the run that is not a bare step call -- the body and the branches --
through :class:`ExitGuard`.
"""

from __future__ import annotations

from collections.abc import Coroutine, Generator
from types import TracebackType
from typing import Any

from wfctl._errors import WorkflowExitError

__all__ = ["ExitGuard"]


class ExitGuard(Coroutine[Any, Any, Any]):
    """A coroutine that runs ``coro`` and raises :class:`WorkflowExitError` for its SystemExit.

    It forwards ``send``, ``throw`` and ``close`` to ``coro`` unchanged, so cancelling the task
    before it starts closes ``coro`` as usual (no "never awaited" warning).
    """

    __slots__ = ("_coro", "_where")

    def __init__(self, coro: Coroutine[Any, Any, Any], where: str) -> None:
        self._coro = coro
        self._where = where

    def send(self, value: Any) -> Any:
        """Resume ``coro``."""
        try:
            return self._coro.send(value)
        except SystemExit as exc:
            raise WorkflowExitError(exc.code, self._where) from exc

    def throw(
        self,
        typ: type[BaseException] | BaseException,
        val: object = None,
        tb: TracebackType | None = None,
    ) -> Any:
        """Raise an exception (a cancellation) inside ``coro``."""
        try:
            if val is None and tb is None:
                return self._coro.throw(typ)
            return self._coro.throw(typ, val, tb)  # type: ignore[arg-type]  # legacy form
        except SystemExit as exc:
            raise WorkflowExitError(exc.code, self._where) from exc

    def close(self) -> None:
        """Close ``coro``."""
        self._coro.close()

    def __await__(self) -> Generator[Any, None, Any]:
        try:
            return (yield from self._coro.__await__())
        except SystemExit as exc:
            raise WorkflowExitError(exc.code, self._where) from exc
