"""``run(stream=True)``: a run's events as they happen, then its result.

The run is driven by a task of its own, started on first use of the stream. Its events reach
the stream through the run's event listener as they are emitted -- a step's
``executor_invoked`` arrives while the step is still running -- and wait in a queue until read.

The run does not depend on its reader: a consumer that stops early (``break``) does not stop
the run half-way; it goes on to its end (completed, paused or failed, its last checkpoint
committed), and ``close()``, leaving ``async with stream:`` or ``get_final_response()`` waits
for that end. Cancelling the reader does not cancel the run either; only the event loop's own
shutdown does, which leaves the run as a killed process would: resumable from its head.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Coroutine, Generator
from types import TracebackType
from typing import Any

from ._events import WorkflowEvent
from ._result import WorkflowRunResult

__all__ = ["WorkflowStream"]

Listener = Callable[[WorkflowEvent], None]

#: Runs driven for a stream: the event loop keeps only weak references to tasks.
_driving: set[asyncio.Task[WorkflowRunResult]] = set()


class WorkflowStream:
    """The events of one run as they happen (``async for``), then its result.

    ``await stream.get_final_response()`` returns the :class:`~wfctl.WorkflowRunResult` (after
    reading what is left, as agent-framework's ``ResponseStream`` does) or raises what the run
    raised; the iteration raises it too, after the run's last event.
    """

    def __init__(
        self,
        start: Callable[[Listener], Coroutine[Any, Any, WorkflowRunResult]],
    ) -> None:
        self._start = start
        self._task: asyncio.Task[WorkflowRunResult] | None = None
        self._queue: asyncio.Queue[WorkflowEvent | None] = asyncio.Queue()
        self._read: list[WorkflowEvent] = []
        self._ended = False

    @property
    def updates(self) -> tuple[WorkflowEvent, ...]:
        """The events read from the stream so far."""
        return tuple(self._read)

    def _run(self) -> asyncio.Task[WorkflowRunResult]:
        if self._task is None:
            queue = self._queue
            task = asyncio.get_running_loop().create_task(self._start(queue.put_nowait))
            _driving.add(task)
            task.add_done_callback(_driving.discard)
            task.add_done_callback(lambda _: queue.put_nowait(None))
            self._task = task
        return self._task

    def __aiter__(self) -> WorkflowStream:
        return self

    async def __anext__(self) -> WorkflowEvent:
        task = self._run()
        if self._ended:
            raise StopAsyncIteration
        event = await self._queue.get()
        if event is None:
            self._ended = True
            task.result()  # the run's own exception, after its last event
            raise StopAsyncIteration
        self._read.append(event)
        return event

    async def get_final_response(self) -> WorkflowRunResult:
        """Wait for the run's end; return its result or raise what the run raised."""
        task = self._run()
        result = await asyncio.shield(task)
        self._ended = True
        return result

    async def close(self) -> None:
        """Stop reading and wait for the run's end (see :meth:`get_final_response`)."""
        task = self._run()
        await asyncio.wait({task})
        self._ended = True
        if not task.cancelled():
            task.exception()  # retrieved: whoever wants it asks get_final_response()

    async def __aenter__(self) -> WorkflowStream:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if exc is None:
            await self.get_final_response()  # a failed run raises here
        else:
            await self.close()

    def __await__(self) -> Generator[Any, None, WorkflowStream]:
        """``await wf.run(..., stream=True)`` gives the stream back, as agent-framework's does."""

        async def itself() -> WorkflowStream:
            return self

        return itself().__await__()
