"""Driving one engine call on its own event loop, where Ctrl-C pauses the run, then aborts it.

1. The first SIGINT asks the run to pause (``request_pause``): the engine stops at the next
   step boundary, lets running steps finish (cancelling those still running after the drain
   timeout) and writes a pause checkpoint.
2. The second cancels the call: the run's head stays at the last checkpoint written, so it can
   still be resumed.

SIGTERM (what service managers and container runtimes send to stop a process) and SIGHUP (the
terminal went away) ask for the same pause as the first Ctrl-C; repeating them changes
nothing, so a process manager cannot turn a clean stop into an abort.

The handler goes on the loop (``loop.add_signal_handler``), so it runs between callbacks and
never interrupts a commit. The run id comes from the caller when it is known in advance, else
from the run's ``run_started`` event.
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Generic, TypeVar

from wfctl._engine._events import WorkflowEvent
from wfctl._errors import RunNotFoundError
from wfctl._storage import FileCheckpointStorage
from wfctl._storage._capabilities import clear_pause
from wfctl._storage._protocol import RunStore

__all__ = ["Drive", "EventListener", "InterruptListener", "drive_call"]

T = TypeVar("T")
EventListener = Callable[[WorkflowEvent], None]
#: Told ``"pause"`` on the first Ctrl-C, ``"abort"`` on the second, and the signal's name
#: (``"SIGTERM"``, ``"SIGHUP"``) when one of those asks for a pause.
InterruptListener = Callable[[str], None]
#: Signals that ask the run to pause, like the first Ctrl-C (those this platform has).
PAUSE_SIGNALS: tuple[signal.Signals, ...] = tuple(
    getattr(signal, name) for name in ("SIGTERM", "SIGHUP") if hasattr(signal, name)
)


@dataclass(slots=True)
class Drive(Generic[T]):
    """What happened while driving one engine call.

    ``value`` is the call's result (None when it was aborted); ``interrupts`` counts Ctrl-C
    presses; ``stopped_by`` names the first SIGTERM/SIGHUP received; ``run_id`` is the run's id
    once known.
    """

    value: T | None = None
    interrupts: int = 0
    stopped_by: str | None = None
    aborted: bool = False
    run_id: str | None = None
    elapsed: float = 0.0
    pause_requested: bool = False


def drive_call(
    start: Callable[[EventListener], Awaitable[T]],
    storage: RunStore,
    run_id: str | None,
    on_event: EventListener | None,
    on_interrupt: InterruptListener | None,
) -> Drive[T]:
    """Run ``start`` on a fresh loop that turns Ctrl-C into a pause, then an abort.

    Args:
        start: makes the engine call, given the event listener to pass it.
        storage: where to file the pause request.
        run_id: the run's id, if known before it starts.
        on_event: also told every event.
        on_interrupt: told what each Ctrl-C does.
    """
    drive: Drive[T] = Drive(run_id=run_id)
    asking: set[asyncio.Task[None]] = set()

    async def ask_store(run_id: str) -> None:
        with contextlib.suppress(RunNotFoundError):  # its root is not written yet
            await storage.request_pause(run_id)
            drive.pause_requested = True

    def ask_pause() -> None:
        if drive.run_id is None:
            return  # asked again once the run announces its id
        if isinstance(storage, FileCheckpointStorage):  # a marker file: at once, no await
            with contextlib.suppress(RunNotFoundError):  # its root is not written yet
                storage.request_pause_now(drive.run_id)
                drive.pause_requested = True
            return
        task = asyncio.get_running_loop().create_task(ask_store(drive.run_id))
        asking.add(task)
        task.add_done_callback(asking.discard)

    def listener(event: WorkflowEvent) -> None:
        if event.kind == "run_started":
            drive.run_id = event.run_id
            if drive.interrupts or drive.stopped_by:
                ask_pause()  # starting a run clears older pause requests: ask again
        if on_event is not None:
            on_event(event)

    async def main() -> T:
        loop = asyncio.get_running_loop()
        task = asyncio.current_task()
        assert task is not None

        def on_sigint() -> None:
            drive.interrupts += 1
            if drive.interrupts == 1:
                ask_pause()
                if on_interrupt is not None:
                    on_interrupt("pause")
            else:
                drive.aborted = True
                if on_interrupt is not None and drive.interrupts == 2:
                    on_interrupt("abort")
                task.cancel()

        def on_stop(signum: signal.Signals) -> None:
            if drive.stopped_by is not None:
                return  # asked already: a repeated SIGTERM changes nothing
            drive.stopped_by = signum.name
            ask_pause()
            if on_interrupt is not None:
                on_interrupt(signum.name)

        installed: list[signal.Signals] = []
        try:
            loop.add_signal_handler(signal.SIGINT, on_sigint)
            installed.append(signal.SIGINT)
            for signum in PAUSE_SIGNALS:
                loop.add_signal_handler(signum, on_stop, signum)
                installed.append(signum)
        except (NotImplementedError, RuntimeError, ValueError):  # not POSIX / not main thread
            pass
        try:
            return await start(listener)
        finally:
            for signum in installed:
                loop.remove_signal_handler(signum)
            if asking:
                await asyncio.wait(asking)
            if drive.pause_requested and drive.run_id is not None:
                # A no-op when the run paused (it clears it itself).
                await clear_pause(storage, drive.run_id)

    clock = time.perf_counter()
    try:
        drive.value = asyncio.run(main())
    except asyncio.CancelledError:
        if not drive.aborted:
            raise
    except KeyboardInterrupt:  # Ctrl-C before the handler was installed, or without one
        drive.aborted = True
    drive.elapsed = time.perf_counter() - clock
    return drive
