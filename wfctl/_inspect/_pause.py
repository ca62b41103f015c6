"""``wfctl pause`` as data: ask a running run to pause (``PauseReport``)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from wfctl._config import StoreRef
from wfctl._errors import RunStateError
from wfctl._storage import RunSummary
from wfctl._storage._capabilities import cancel_request, request_pause
from wfctl._storage._open import on_store
from wfctl._storage._protocol import RunStore

from ._documents import document, summary_json

__all__ = ["PauseReport", "pause_run"]


@dataclass(frozen=True, slots=True)
class PauseReport:
    """A running run asked to pause: its summary when asked, and the command that resumes it."""

    summary: RunSummary
    resume_command: str

    def to_json(self) -> dict[str, Any]:
        """Return the ``wfctl/pause@1`` document (see docs/json.md)."""
        return document(
            "pause",
            {
                "run_id": self.summary.run_id,
                "pause_requested": True,
                "resume_command": self.resume_command,
                "run": summary_json(self.summary),
            },
        )


def pause_run(store: StoreRef, run_id: str, *, must_exist: bool = True) -> PauseReport:
    """Ask a running run (in another process) to pause at its next step boundary.

    Returns the run's summary as it was when asked, and the command that resumes it.

    Raises:
        StoreLocationError: the store is missing (with ``must_exist``) or is not one.
        InvalidIdError, RunNotFoundError: no such run.
        RunStateError: the run is not running (paused, completed, failed, interrupted), or
            is being cancelled (``wfctl cancel`` asked its driver: it will not pause).
    """

    async def ask(storage: RunStore) -> RunSummary:
        summary = await storage.run_summary(run_id)
        if summary.status != "running":
            raise RunStateError(run_id, f"is {summary.status}, not running; nothing to pause")
        cancel = await cancel_request(storage, run_id)
        if cancel is not None:  # a pause asked now would still end it cancelled
            raise RunStateError(
                run_id,
                f"is being cancelled (asked by {cancel.by} at {cancel.at}): it ends cancelled "
                "at its next step boundary, not paused",
            )
        await request_pause(storage, run_id)
        return summary

    summary = on_store(store, ask, must_exist=must_exist)
    from ._next_steps import resume_command

    return PauseReport(summary, resume_command(summary.run_id, store))
