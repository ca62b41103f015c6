"""Driving an admitted run: execute its body, commit how it ended, release it, report.

:mod:`wfctl._engine._admission` hands over a run whose lease is held and whose first checkpoints are
committed. :func:`drive` builds the :class:`~wfctl._engine._run.Run` over that chain and the history it
may serve, executes the body, commits the ending checkpoint (:mod:`wfctl._engine._ending`), waits for
every save, releases the lease and returns the result. Whatever happens, the lease is released
and no save is left in flight.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from wfctl._records._attempts import StepFailure
from wfctl._records._checkpoint import Checkpoint
from wfctl._records._codec import decode
from wfctl._records._recorded import StepRecord
from wfctl._storage._capabilities import cancel_request, clear_pause
from wfctl._storage._protocol import RunLease

from ._chain import CheckpointChain
from ._ending import build_result, commit_ending
from ._events import WorkflowEvent, WorkflowRunState
from ._restore import History
from ._result import WorkflowRunResult
from ._run import Run, RunOptions

if TYPE_CHECKING:
    from ._definition import DefinedWorkflow

__all__ = ["Driven", "EventListener", "drive"]

EventListener = Callable[[WorkflowEvent], None]

#: The other fields of a checkpoint event: none (shared, never changed: see ``Run.keep``).
_NO_FIELDS: dict[str, Any] = {}


@dataclass(frozen=True, slots=True)
class Driven:
    """What driving a run gave: its result, and the step records it committed, in order.

    The records are the ones that are durable in the run's chain, held from the commits
    themselves: a caller that compares them (``wfctl replay``) need not read the chain back.
    They are kept only when the options ask (``keep_records``); else ``records`` is empty,
    so a long run holds no record of each step it committed.
    """

    result: WorkflowRunResult
    records: tuple[StepRecord, ...]
    #: The step failures it committed (calls that failed for good, the run going on), kept
    #: as the records are.
    failures: tuple[StepFailure, ...] = ()


async def drive(
    workflow: DefinedWorkflow,
    chain: CheckpointChain,
    lease: RunLease,
    message: Any,
    history: History,
    responses: dict[str, Any],
    options: RunOptions,
    on_event: EventListener | None,
) -> Driven:
    """Run ``workflow``'s body on ``message`` in the admitted ``chain``; release ``lease``.

    Args:
        history: the records and answers the run may serve (empty for a fresh run). Its
            records are taken over (the history is left without them), so each can be let
            go once served.
        responses: answers given with this call, already converted to their types.
    """
    storage = workflow.storage
    answers = {
        key: decode(value, where=f"answer to {key}") for key, value in history.responses.items()
    }
    answers.update(responses)
    run = Run(
        run_id=chain.run_id,
        chain=chain,
        recorded=history.take_calls(),
        responses=answers,
        options=options,
        on_event=on_event,
        pause_probe=lease.pause_requested,
        step_retries=workflow.step_retries,
        past_attempts=history.attempts,
        past_failures={failure.key: failure for _, failure in history.failures},
        past_starts=history.started,
    )

    def announce(checkpoint: Checkpoint) -> None:
        run.keep("checkpoint", None, checkpoint.checkpoint_id, 0, _NO_FIELDS)

    chain.on_commit = announce
    chain.keep_committed = options.keep_records
    run.emit("run_started", None, {"checkpoint": chain.head_id})
    run.emit("status", state=WorkflowRunState.IN_PROGRESS)
    try:
        outcome = await run.execute(lambda: workflow.body(message, run.context))
        # A pause asked by `wfctl cancel` names who asked: the run ends cancelled instead.
        cancel = await cancel_request(storage, run.run_id) if outcome.status == "paused" else None
        outcome = await commit_ending(run, outcome, _pause_reason(lease), cancel)
        if outcome.status in ("paused", "cancelled"):
            await clear_pause(storage, run.run_id)
        if outcome.status == "paused":
            workflow._last_paused = chain.head_id
    finally:
        await chain.drain()
        await lease.release()
    return Driven(
        build_result(run, outcome), tuple(chain.committed), tuple(chain.committed_failures)
    )


def _pause_reason(lease: RunLease) -> str:
    """The reason a pause without requests records: the lease's own (a worker's), else the
    plain ``interrupt``."""
    reason_of = getattr(lease, "pause_reason", None)
    return str(reason_of()) if callable(reason_of) else "interrupt"
