"""Live progress of a run on stderr, driven by the engine's events."""

from __future__ import annotations

import threading
import time
from types import TracebackType
from typing import TYPE_CHECKING

from rich.console import Group, RenderableType

from ._common import Text, stderr

if TYPE_CHECKING:
    from rich.live import Live
    from rich.spinner import Spinner

    from wfctl._engine._events import WorkflowEvent

__all__ = ["RunProgress"]


class RunProgress:
    """Live progress of a run on stderr: steps running, cached and done, and the elapsed time.

    A context manager whose :meth:`on_event` and :meth:`on_interrupt` are handed to the run
    driver. Drawn only when ``enabled`` and stderr is a terminal; Ctrl-C notes are printed
    either way. rich's live display and spinner are imported only to draw (start-up time).
    """

    def __init__(self, *, enabled: bool = True) -> None:
        self._console = stderr()
        self._enabled = enabled and self._console.is_terminal
        self._lock = threading.Lock()
        self._running: dict[str, float] = {}
        #: Steps backing off (``attempt 2/5``, when the next attempt starts) and durable
        #: sleeps (when they wake), on the monotonic clock.
        self._retrying: dict[str, tuple[str, float]] = {}
        self._sleeping: dict[str, float] = {}
        self._cached = self._done = self._failed = 0
        self._run_id = ""
        self._started = time.monotonic()
        self._spinner: Spinner | None = None
        self._live: Live | None = None

    def __enter__(self) -> RunProgress:
        if self._enabled:
            from rich.live import Live

            self._live = Live(
                console=self._console,
                transient=True,
                refresh_per_second=8,
                get_renderable=self._renderable,
            )
            self._live.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    def stop(self) -> None:
        """Stop drawing (for good): what is written to stdout from now on goes there, not
        above the display."""
        if self._live is not None:
            self._live.stop()
            self._live = None

    def on_event(self, event: WorkflowEvent) -> None:
        """Count one engine event (called on the run's event loop)."""
        with self._lock:
            key = event.key or ""
            if event.kind == "run_started":
                self._run_id = event.run_id
            elif event.kind == "step_started":
                self._running[key] = time.monotonic()
            elif event.kind == "step_completed":
                self._running.pop(key, None)
                self._retrying.pop(key, None)
                self._done += 1
            elif event.kind == "step_retrying":
                data = event.data
                label = f"attempt {data['attempt']}/{data['attempts']}"
                self._retrying[key] = (label, time.monotonic() + float(data["delay"]))
            elif event.kind == "sleeping":
                self._sleeping[key] = time.monotonic() + float(event.data["seconds"])
            elif event.kind == "step_cached":
                self._cached += 1
            elif event.kind == "step_failed":
                self._running.pop(key, None)
                self._retrying.pop(key, None)
                self._failed += 1

    def on_interrupt(self, kind: str) -> None:
        """Say what a Ctrl-C does (``pause``, then ``abort``), or a SIGTERM/SIGHUP (its name)."""
        run = self._run_id or "the run"
        if kind == "pause":
            text = (
                f"Ctrl-C: pausing {run} at the next step boundary (running steps get up to "
                "the drain timeout to finish). Press Ctrl-C again to abort."
            )
        elif kind != "abort":
            text = (
                f"{kind}: pausing {run} at the next step boundary (running steps get up to "
                "the drain timeout to finish)."
            )
        else:
            text = f"Ctrl-C again: aborting {run}; it stays resumable from its last checkpoint."
        self._console.print(Text(text, style="yellow"))

    def _renderable(self) -> RenderableType:
        if self._spinner is None:
            from rich.spinner import Spinner

            self._spinner = Spinner("dots")
        now = time.monotonic()
        with self._lock:
            running = sorted(self._running.items(), key=lambda item: item[1])
            retrying = dict(self._retrying)
            sleeping = [(k, at) for k, at in self._sleeping.items() if at > now]
            counts = f"running {len(running)} · cached {self._cached} · done {self._done}" + (
                f" · failed {self._failed}" if self._failed else ""
            )
        elapsed = int(now - self._started)
        self._spinner.update(text=Text(f"{counts} · {elapsed // 60}:{elapsed % 60:02d}"))
        lines: list[RenderableType] = [self._spinner]
        for key, since in running[:5]:
            if key in retrying:
                label, at = retrying[key]
                wait = f"in {at - now:.0f}s" if at > now else "now"
                lines.append(Text(f"  ▸ {key} {label} {wait}", style="yellow"))
            else:
                lines.append(Text(f"  ▸ {key} ({now - since:.1f}s)", style="dim"))
        if len(running) > 5:
            lines.append(Text(f"  … and {len(running) - 5} more", style="dim"))
        for key, at in sleeping[:5]:
            lines.append(Text(f"  ◷ {key} sleeping, {at - now:.0f}s left", style="dim"))
        return Group(*lines)
