"""Pausing a run cleanly: count the work in flight, hold suspended branches, drain, release.

A run pauses in two phases. A branch that needs an answer (or reaches a step boundary after a
pause was asked for) *suspends* here; the run's supervisor then *drains* -- waits until no step
is in flight and the loop has settled, or the drain timeout passes -- and only then *releases*
every suspended branch with :class:`PauseSignal`. So sibling branches finish, fail or
suspend first, and the pause checkpoint, written after the release, is the run's head.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import NoReturn

__all__ = ["PauseGate", "PauseSignal"]


class PauseSignal(BaseException):
    """Unwinds a branch of a run that is pausing for outside input or on request.

    A ``BaseException`` so that ``except Exception:`` in user code cannot swallow it. User code
    should neither catch nor raise it; the engine raises it once every sibling branch has
    finished, failed or suspended, and turns it into a ``paused`` result.
    """


#: Loop iterations a drain gives runnable branches to reach their next suspension point.
SETTLE_ROUNDS = 8


class PauseGate:
    """The pause state of one run: steps in flight, suspended branches, whether it released."""

    __slots__ = ("_idle", "_suspended", "in_flight", "interrupted", "released", "wanted")

    def __init__(self) -> None:
        self.in_flight = 0
        #: Set once the storage reports a pause request (``wfctl pause``, Ctrl-C): new steps
        #: suspend at their boundary.
        self.interrupted = False
        #: Set once suspended branches were signalled: nothing new may start.
        self.released = False
        #: Set whenever a branch suspends or a pause is requested; the supervisor waits on it.
        self.wanted = asyncio.Event()
        self._idle = asyncio.Event()
        self._idle.set()
        self._suspended: list[asyncio.Future[None]] = []

    def step_started(self) -> None:
        """Count a step body that starts running."""
        if self.in_flight == 0:
            self._idle.clear()
        self.in_flight += 1

    def step_ended(self) -> None:
        """Count a step body that stopped running (returned, raised, or was cancelled)."""
        self.in_flight -= 1
        if self.in_flight == 0:
            self._idle.set()

    async def suspend(self, in_step: bool) -> NoReturn:
        """Park the calling branch until the run releases it with :class:`PauseSignal`.

        Args:
            in_step: the branch is inside a step body; while parked it does not count as work
                in flight, so it cannot hold up the drain.
        """
        future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._suspended.append(future)
        if in_step:
            self.step_ended()
        self.wanted.set()
        try:
            await future
        finally:
            if in_step:
                self.step_started()
        raise PauseSignal  # pragma: no cover  # the future only ever ends with an exception

    async def drain(self, limit: float, flush: Callable[[], Awaitable[None]]) -> None:
        """Wait until no step is in flight and the loop has settled, or ``limit`` seconds pass.

        ``flush`` waits for queued commits, so results of steps that just ended are durable.
        """
        loop = asyncio.get_running_loop()
        deadline = loop.time() + limit
        while True:
            if self.in_flight:
                try:
                    await asyncio.wait_for(self._idle.wait(), max(0.0, deadline - loop.time()))
                except TimeoutError:
                    return
            await flush()
            for _ in range(SETTLE_ROUNDS):
                await asyncio.sleep(0)
            if not self.in_flight:
                return

    async def release(self) -> None:
        """Raise :class:`PauseSignal` in every suspended branch and let it unwind a little."""
        self.released = True
        for future in self._suspended:
            if not future.done():
                future.set_exception(PauseSignal())
        for _ in range(SETTLE_ROUNDS):
            await asyncio.sleep(0)
