"""``describe`` as data: one run at a glance (``RunDescription``), from one read of its chain.

What ``runs`` says of a run (its summary), what ``log`` reads of it (its chain, verified as
it is read, from any store) and what ``show`` would print of its first and last records (the
input, the result or error, the pending requests), folded into one report: its records are
read once, in order, and only counts and the few values shown are kept, so a long run costs
memory of a short one.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from wfctl._config import StoreRef, is_url
from wfctl._records._payloads import (
    CancelledPayload,
    CompletedPayload,
    FailedPayload,
    PausePayload,
    RecordedRequest,
    ResumePayload,
    RootPayload,
    StepPayload,
    payload_of,
    served_count,
)
from wfctl._redact import shown
from wfctl._storage import RunSummary
from wfctl._storage._journal import JOURNAL_NAME

from ._documents import document, summary_json
from ._log import read_chain

__all__ = ["RunDescription", "describe_run"]


@dataclass(frozen=True, slots=True)
class RunDescription:
    """One run: its summary, what it was given and gave back, what it waits on, its counts,
    and where it is stored.

    Values (``input``, ``result``, ``outputs``, request data) are as the codec encoded them.
    """

    summary: RunSummary
    #: The store, as wfctl shows it (a path, or a URL with its password masked).
    store: str
    #: The run's journal file in a file store; None in a database.
    journal: str | None
    #: ``module:qualname`` of the workflow, and the target the CLI loads it from.
    workflow_ref: str | None
    target: str | None
    input: Any
    #: The completed run's return value and the outputs it yielded before (else None, []).
    result: Any
    outputs: tuple[Any, ...]
    #: ``Type: message`` of a failed run; the step it failed in (None: the workflow body).
    error: str | None
    failed_step_key: str | None
    #: Why a cancelled run was cancelled (``cancel --reason``), if it was given.
    cancel_reason: str | None
    #: The requests a paused run waits on (empty otherwise).
    requests: tuple[RecordedRequest, ...]
    checkpoint_count: int
    #: Step results recorded, calls served from the cache, failed attempts retried, step calls
    #: that failed for good (caught by the workflow), and resumes (answers or retries).
    executed: int
    cached: int
    retries: int
    step_failures: int
    resumes: int

    @property
    def duration(self) -> float | None:
        """Seconds from the run's first record to its newest (None when a time is unknown)."""
        try:
            first = datetime.fromisoformat(self.summary.created)
            last = datetime.fromisoformat(self.summary.updated)
        except ValueError:
            return None
        return max((last - first).total_seconds(), 0.0)

    def to_json(self) -> dict[str, Any]:
        """Return the ``wfctl/describe@1`` document (see docs/json.md)."""
        return document(
            "describe",
            {
                "run_id": self.summary.run_id,
                "run": summary_json(self.summary),
                "store": self.store,
                "journal": self.journal,
                "workflow_ref": self.workflow_ref,
                "target": self.target,
                "input": self.input,
                "result": self.result,
                "outputs": list(self.outputs),
                "error": self.error,
                "failed_step_key": self.failed_step_key,
                "cancel_reason": self.cancel_reason,
                "requests": [r.to_json() for r in self.requests],
                "checkpoint_count": self.checkpoint_count,
                "duration_s": self.duration,
                "step_counts": {
                    "executed": self.executed,
                    "cached": self.cached,
                    "retried": self.retries,
                    "failed": self.step_failures,
                },
                "resume_count": self.resumes,
            },
        )


def describe_run(store: StoreRef, run_id: str, *, must_exist: bool = True) -> RunDescription:
    """Return one run at a glance, reading its chain once (verified as it is read).

    Raises:
        StoreLocationError: the store is missing (with ``must_exist``) or is not one.
        InvalidIdError, RunNotFoundError: no such run.
        CheckpointCorruptError: a record fails verification or the chain is broken.
    """
    summary, records, _ = read_chain(store, run_id, must_exist=must_exist)
    fold = _Fold()
    for checkpoint in records:
        fold.add(payload_of(checkpoint), served_count(checkpoint))
    location = os.fspath(store)
    journal = None
    if not is_url(location):
        journal = os.path.join(os.path.abspath(location), "runs", summary.run_id, JOURNAL_NAME)
    return RunDescription(
        summary,
        shown(location),
        journal,
        fold.workflow_ref,
        fold.target,
        fold.input,
        fold.result,
        fold.outputs,
        fold.error,
        fold.failed_step_key,
        fold.cancel_reason,
        fold.requests if summary.status == "paused" else (),
        summary.head_seq + 1,
        fold.executed,
        fold.cached,
        fold.retries,
        fold.step_failures,
        fold.resumes,
    )


class _Fold:
    """What :func:`describe_run` keeps of the records as they pass: counts, and the values of
    the last record of each kind (the head's decide what is reported)."""

    def __init__(self) -> None:
        self.workflow_ref: str | None = None
        self.target: str | None = None
        self.input: Any = None
        self.result: Any = None
        self.outputs: tuple[Any, ...] = ()
        self.error: str | None = None
        self.failed_step_key: str | None = None
        self.cancel_reason: str | None = None
        self.requests: tuple[RecordedRequest, ...] = ()
        self.executed = self.cached = self.retries = self.step_failures = self.resumes = 0

    def add(self, payload: object, served: int) -> None:
        """Fold in one record's payload, and the calls it served from the cache."""
        self.cached += served
        match payload:
            case StepPayload(steps=steps, attempts=attempts, failures=failures):
                self.executed += len(steps)
                self.retries += len(attempts)
                self.step_failures += len(failures)
            case RootPayload(input=given, workflow=workflow, target=target):
                self.input, self.workflow_ref, self.target = given, workflow, target
            case PausePayload(requests=requests):
                self.requests = requests
            case ResumePayload():
                self.resumes += 1
                self.error = self.failed_step_key = None  # a retried failure is history
            case FailedPayload(error_type=error_type, message=message, step=step):
                self.error, self.failed_step_key = f"{error_type}: {message}", step
            case CompletedPayload(result=result, outputs=outputs):
                self.result, self.outputs = result, tuple(outputs)
            case CancelledPayload(reason=reason):
                self.cancel_reason = reason
