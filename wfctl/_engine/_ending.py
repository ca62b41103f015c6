"""How one ``Workflow.run`` call ends: the checkpoint it commits last, and the result it returns."""

from __future__ import annotations

import contextlib
from typing import Any

from wfctl._errors import RunCancelledError, UnencodableValueError
from wfctl._records._codec import encode, encoded_size
from wfctl._records._payloads import (
    CancelledPayload,
    CancelRequest,
    CompletedPayload,
    FailedPayload,
    PausePayload,
    RecordedRequest,
)

from ._events import RequestInfoEvent, WorkflowErrorDetails, WorkflowRunState, error_message
from ._response_types import type_name
from ._result import WorkflowRunResult
from ._run import BodyOutcome, Run

__all__ = ["build_result", "commit_ending", "failed_result", "own_notes", "raise_if_failed"]


async def commit_ending(
    run: Run,
    outcome: BodyOutcome,
    interrupt_reason: str = "interrupt",
    cancel: CancelRequest | None = None,
) -> BodyOutcome:
    """Commit the pause, cancelled, completed or failed checkpoint that ends this call.

    A pause with no request to answer records ``interrupt_reason``: ``interrupt`` (it stays
    paused until resumed) or ``handoff`` (a stopping worker gives the run to any other). A
    pause while ``cancel`` stands (someone asked to cancel the run) records ``cancelled``
    instead, naming who asked: the run ends for good, a ``cancelled`` outcome whose error is a
    :class:`RunCancelledError`.

    The storage failing to write that checkpoint (a full disk) fails the run with its
    ``OSError``. When even the ``failed`` checkpoint cannot be written, the run still ends
    ``failed`` with the first error, a note on it saying so, and its head where it was.

    Returns:
        The final outcome: a completed body whose return value cannot be stored becomes a
        failed run naming ``<result>`` and the type.
    """
    chain = run.chain
    try:
        if outcome.status == "paused" and cancel is not None:
            await chain.commit(CancelledPayload.honouring(cancel))
            asked = {"by": cancel.by, "asked_at": cancel.at, "reason": cancel.reason}
            run.emit("run_cancelled", None, asked, state=WorkflowRunState.CANCELLED)
            cancelled = RunCancelledError(run.run_id, cancel.by, cancel.at, cancel.reason)
            return BodyOutcome("cancelled", error=cancelled)
        if outcome.status == "paused":
            requests = tuple(
                RecordedRequest(key, encoded, type_name(event.response_type, key))
                for key, (event, encoded) in run.pending.items()
            )
            await chain.commit(PausePayload(requests, "request" if requests else interrupt_reason))
            run.emit(
                "run_paused",
                None,
                {"requests": [r.request_id for r in requests]},
                state=WorkflowRunState.IDLE_WITH_PENDING_REQUESTS
                if requests
                else WorkflowRunState.CANCELLED,
            )
            return outcome
        if outcome.status == "completed":
            try:
                result = encode(outcome.value)
            except UnencodableValueError as exc:
                outcome = BodyOutcome("failed", error=exc.for_key("<result>"))
            else:
                await chain.commit(CompletedPayload(result, run.encoded_outputs))
                if outcome.value is not None:  # the return value is the run's last output
                    run.emit(
                        "output",
                        None,
                        outcome.value,
                        encoded_size(result),
                        executor_id=chain.workflow_name,
                    )
                run.emit("run_completed", state=WorkflowRunState.IDLE)
                return outcome
    except OSError as exc:  # the record could not be written: the run failed with that error
        outcome = BodyOutcome("failed", error=exc)
    error = outcome.error
    assert error is not None
    message = error_message(error)
    failed = {"error": f"{type(error).__name__}: {message}"}
    step = run.failed_step(error)
    if step is not None:  # where it failed decides whether a plain retry can help
        failed["step"] = step
    chain.drop_failure(error)  # the failed record says it (a step failure the body let out)
    try:
        await chain.commit(FailedPayload(type(error).__name__, message, step))
    except OSError as exc:
        error.add_note(
            f"the failed checkpoint could not be stored either ({exc}); the run's head stays "
            f"at {chain.head_id}"
        )
    details = WorkflowErrorDetails.from_exception(error)
    run.emit("run_failed", None, failed, details=details)
    run.emit("status", state=WorkflowRunState.FAILED)
    return outcome


def build_result(run: Run, outcome: BodyOutcome) -> WorkflowRunResult:
    """Return what the caller of ``Workflow.run`` gets back."""
    chain = run.chain
    requests: list[RequestInfoEvent] = []
    if outcome.status == "paused":
        requests = [event for event, _ in run.pending.values()]
    return WorkflowRunResult(
        status=outcome.status,  # type: ignore[arg-type]  # BodyOutcome.status is one of the three
        run_id=run.run_id,
        checkpoint_id=chain.head_id or "",
        outputs=tuple(run.outputs),
        result=outcome.value if outcome.status == "completed" else None,
        events=run.history(),
        events_dropped=run.events_dropped,
        requests=tuple(requests),
        error=outcome.error,
        origin_checkpoint_id=chain.head.origin_checkpoint_id if chain.head else None,
        executed=run.executed,
        cached=run.cached,
        changed=run.changed,
    )


def _resume_note(run_id: str, checkpoint_id: str) -> str:
    return (
        f"wfctl: run {run_id!r} failed; its head is {checkpoint_id}: retry it with "
        f"`await workflow.resume({run_id!r})` or `wfctl resume {run_id}`"
    )


def raise_if_failed(result: WorkflowRunResult) -> WorkflowRunResult:
    """Return ``result``, unless the run failed: then raise the run's own error (or was
    cancelled while it ran: then its :class:`RunCancelledError`, without the retry note).

    The error is the workflow's exception (or wfctl's, e.g. ``ReplayDivergenceError``), raised
    after its ``failed`` checkpoint is durable, carrying ``wfctl_run_id``,
    ``wfctl_checkpoint_id`` (the run's head: its ``failed`` checkpoint) and ``wfctl_result``
    (the failed :class:`WorkflowRunResult`), and a note saying how to retry it.
    """
    error = result.error
    if result.status == "cancelled" and error is not None:  # ended for good: no retry to note
        with contextlib.suppress(AttributeError, TypeError):
            error.wfctl_result = result  # type: ignore[attr-defined]
        raise error
    if result.status != "failed" or error is None:
        return result
    earlier = getattr(error, "wfctl_result", None)  # the same object raised by an earlier run
    notes = getattr(error, "__notes__", None)
    if isinstance(earlier, WorkflowRunResult) and notes is not None:
        with contextlib.suppress(ValueError):
            notes.remove(_resume_note(earlier.run_id, earlier.checkpoint_id))
    with contextlib.suppress(AttributeError, TypeError):  # an exception that refuses attributes
        error.wfctl_run_id = result.run_id  # type: ignore[attr-defined]
        error.wfctl_checkpoint_id = result.checkpoint_id  # type: ignore[attr-defined]
        error.wfctl_result = result  # type: ignore[attr-defined]
        error.add_note(_resume_note(result.run_id, result.checkpoint_id))
    raise error


def failed_result(error: BaseException) -> WorkflowRunResult | None:
    """Return the failed run ``error`` was raised for by :func:`raise_if_failed`, else None."""
    result: Any = getattr(error, "wfctl_result", None)
    return result if isinstance(result, WorkflowRunResult) and result.error is error else None


def own_notes(error: BaseException) -> list[str]:
    """Return ``error``'s notes without the retry note :func:`raise_if_failed` added."""
    notes: list[str] = list(getattr(error, "__notes__", ()))
    result = failed_result(error)
    if result is not None:
        notes = [n for n in notes if n != _resume_note(result.run_id, result.checkpoint_id)]
    return notes
