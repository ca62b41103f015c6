"""Replay with a diff: run a workflow again from a checkpoint and compare it with the source run.

:func:`replay` restores ``checkpoint_id`` into a new run (its root names its origin; the source
run is never touched), then compares that run with the *source run*, the run holding the
checkpoint, over its whole recorded history: its final outputs if it completed, and every step
record it holds, including those of its own origin prefix. The result is a frozen
:class:`ReplayReport`; the caller decides what to raise or which exit code to pick.

Decisions (see also :mod:`wfctl._inspect._diff` for how rows are paired):

- Code that changed since the checkpoint raises :class:`~wfctl.WorkflowChangedError` before any
  run is created, unless ``allow_changed``: there is no replay to diff, and the CLI maps it to
  exit code 2 like the engine does. Every other failure *during* the replay (a divergence, a
  step raising) is reported in ``error`` and the report is not identical.
- Answers the source run received after the checkpoint are given to the replay again (they are
  part of the recorded history), so a replay from before a human answer does not stop at the
  same question. When the checkpoint is itself a pause, only the answers to the requests it
  holds can be given. ``reuse_answers=False`` turns this off; ``answers_reused`` lists them.
- ``identical`` means the replay completed, the source completed, the outputs render equally
  and no row is ``changed``, ``new`` or ``failed``. ``not reached`` rows do not count on their
  own: what the replay skipped matters only through the outputs.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Final

from wfctl._engine._admission import place_in, restore_new_run
from wfctl._engine._events import WorkflowEvent, error_message
from wfctl._engine._restore import History, load_source
from wfctl._engine._result import ResultStatus
from wfctl._engine._run import RunOptions
from wfctl._engine._workflow import Workflow
from wfctl._records._checkpoint import Checkpoint, Kind
from wfctl._records._codec import decode, encode
from wfctl._records._payloads import (
    CompletedPayload,
    ended_as,
    recorded_requests,
    recorded_signature,
)

from ._diff import (
    STEP_STATUSES,
    ReplayCalls,
    StepDiff,
    count_statuses,
    diff_outputs,
    diff_steps,
    render_json,
)
from ._documents import document

__all__ = ["STEP_STATUSES", "ReplayReport", "Source", "StepDiff", "replay", "replay_from"]

#: Row statuses that make a replay differ from its source.
_DIFFERING: Final = frozenset({"changed", "new", "failed"})


@dataclass(frozen=True, slots=True)
class ReplayReport:
    """How a replay went and how it differs from the source run.

    ``source_status`` is ``completed``, ``paused``, ``failed`` or ``interrupted`` (the source
    run's last checkpoint is none of those: it was killed or is still running).
    ``outputs_source``/``outputs_replay`` are as ``get_outputs()`` returns them, or None for a
    run that did not complete; ``outputs_diff`` is a unified diff of their pretty JSON, empty
    when they are equal. ``error`` is the replay's failure message (``error_type`` its class).
    ``code_changed``: the workflow's code signature differs from the one that wrote the
    checkpoint (possible only with ``allow_changed``). A changed step whose arguments did not
    change is still served from the record, so a changed workflow can replay as identical.
    ``target`` is the code the CLI imported (``target_recorded``: it came from the source run's
    record); empty when the report was made by the library.
    """

    source_run_id: str
    source_checkpoint_id: str
    source_status: str
    replay_run_id: str
    replay_checkpoint_id: str
    replay_status: ResultStatus
    error: str | None
    error_type: str | None
    outputs_source: list[Any] | None
    outputs_replay: list[Any] | None
    outputs_diff: str
    steps: tuple[StepDiff, ...]
    answers_reused: tuple[str, ...] = ()
    code_changed: bool = False
    target: str = ""
    target_recorded: bool = False

    @property
    def outputs_equal(self) -> bool:
        """Whether both runs completed with outputs that render the same."""
        return (
            self.outputs_source is not None
            and self.outputs_replay is not None
            and not self.outputs_diff
        )

    @property
    def identical(self) -> bool:
        """Whether the replay completed like the source, with equal outputs and matching steps.

        A replay that failed or paused is never identical; ``not reached`` rows count only
        through the outputs.
        """
        return (
            self.replay_status == "completed"
            and self.source_status == "completed"
            and self.outputs_equal
            and not any(row.status in _DIFFERING for row in self.steps)
        )

    @property
    def counts(self) -> Mapping[str, int]:
        """How many rows have each status (every status present, in a fixed order)."""
        return count_statuses(self.steps)

    def to_json(self) -> dict[str, Any]:
        """Return the ``wfctl/replay@1`` document (see docs/json.md).

        Outputs appear in their codec encoding (bytes, dates and registered classes as tagged
        objects), exactly as they were compared.
        """
        return document(
            "replay",
            {
                "identical": self.identical,
                "source_run_id": self.source_run_id,
                "source_checkpoint_id": self.source_checkpoint_id,
                "source_status": self.source_status,
                "replay_run_id": self.replay_run_id,
                "replay_head_checkpoint_id": self.replay_checkpoint_id,
                "replay_status": self.replay_status,
                "error": self.error,
                "error_type": self.error_type,
                "reused_answer_ids": list(self.answers_reused),
                "code_changed": self.code_changed,
                "target": self.target,
                "target_recorded": self.target_recorded,
                "outputs_equal": self.outputs_equal,
                "source_outputs": _encoded(self.outputs_source),
                "replay_outputs": _encoded(self.outputs_replay),
                "outputs_diff": self.outputs_diff,
                "step_counts": {
                    status.replace(" ", "_"): count for status, count in self.counts.items()
                },
                "steps": [row.to_json() for row in self.steps],
            },
        )


def _encoded(value: Any) -> Any:
    try:
        return encode(value)
    except Exception:  # only values that came out of the codec get here; never fail a report
        return render_json(repr(value))


async def replay(
    workflow: Workflow,
    checkpoint_id: str,
    *,
    allow_changed: bool = False,
    execute: bool = True,
    shuffle_seed: int | None = None,
    on_event: Callable[[WorkflowEvent], None] | None = None,
    reuse_answers: bool = True,
) -> ReplayReport:
    """Replay ``workflow`` from ``checkpoint_id`` as a new run and diff it against the source.

    Args:
        workflow: the workflow, bound to the storage that holds the checkpoint.
        checkpoint_id: any checkpoint of any run of this workflow.
        allow_changed: replay even though the code changed; calls whose record no longer
            matches run live and are reported ``changed``.
        execute: False serves recorded results only (a determinism check): a call that would
            have to run, or a digest mismatch, fails the replay with a divergence.
        shuffle_seed: hand cached results back in a seeded, perturbed order.
        on_event: called with each event of the replay as it happens.
        reuse_answers: give the replay the answers the source run received after the
            checkpoint.

    Returns:
        The report; ``report.identical`` says whether the replay matched.

    Raises:
        CheckpointNotFoundError, CheckpointCorruptError, InvalidIdError: bad checkpoint.
        WorkflowChangedError: the code changed and ``allow_changed`` is False.
        RunStateError: the checkpoint belongs to another workflow.
    """
    outline, target, source_history, known = await load_source(workflow.storage, checkpoint_id)
    options = RunOptions(allow_changed, execute, shuffle_seed)
    return await replay_from(
        workflow,
        checkpoint_id,
        (outline, target, source_history, known),
        options,
        on_event,
        reuse_answers,
    )


#: What :func:`~wfctl._engine._restore.load_source` returns: the source run's outline, the
#: checkpoint replayed from, its whole history and its history up to that checkpoint.
Source = tuple[list[Checkpoint], Checkpoint, History, History]


async def replay_from(
    workflow: Workflow,
    checkpoint_id: str,
    source: Source,
    options: RunOptions,
    on_event: Callable[[WorkflowEvent], None] | None = None,
    reuse_answers: bool = True,
) -> ReplayReport:
    """Replay ``checkpoint_id`` from the source run the caller read (see :func:`replay`).

    ``source`` is what :func:`~wfctl._engine._restore.load_source` returned for
    ``checkpoint_id``; ``options`` carry ``replay``'s ``allow_changed``, ``execute`` and
    ``shuffle_seed``.

    The source is read once, folded as it was read: no step checkpoint of it is held but the
    target and the head. What the replay did with each call is gathered from its events as
    they happen (none is kept on its result); its own records come back from the run that
    committed them.
    """
    outline, target, source_history, known = source
    # The diff reads every record the replay commits; its calls are watched as they happen.
    options = dataclasses.replace(options, event_history=0, keep_records=True)
    watch = _CallWatch(on_event)
    answers: dict[str, Any] = {}
    if reuse_answers:
        answers = _later_answers(target, source_history, known)
    driven = await restore_new_run(
        workflow, checkpoint_id, outline, target, known, answers, None, options, watch.seen
    )
    del known  # its records were handed to the run, which lets each go once served
    result = driven.result
    calls = watch.calls
    calls.changed = set(result.changed)
    calls.records = {record.key: record for record in driven.records}
    calls.failures = {failure.key: failure for failure in driven.failures}
    head = outline[-1]
    source_encoded = _final_outputs(head)
    replay_encoded = encode(result.get_outputs()) if result.status == "completed" else None
    error = result.error
    return ReplayReport(
        source_run_id=target.run_id,
        source_checkpoint_id=checkpoint_id,
        source_status=ended_as(head) or "interrupted",
        replay_run_id=result.run_id,
        replay_checkpoint_id=result.checkpoint_id,
        replay_status=result.status,
        error=error_message(error) if error is not None else None,
        error_type=type(error).__name__ if error is not None else None,
        outputs_source=_decoded(source_encoded, f"{head.checkpoint_id} outputs"),
        outputs_replay=result.get_outputs() if result.status == "completed" else None,
        outputs_diff=diff_outputs(source_encoded, replay_encoded),
        steps=diff_steps(source_history.records, calls, source_history.failures),
        answers_reused=tuple(answers),
        code_changed=recorded_signature(outline, place_in(outline, target)) != workflow.signature,
    )


def _later_answers(target: Checkpoint, full: History, known: History) -> dict[str, Any]:
    """Return the source run's answers given after ``target``, decoded."""
    later = {k: v for k, v in full.responses.items() if k not in known.responses}
    if target.kind == Kind.PAUSE:
        pending = {request.request_id for request in recorded_requests(target)}
        later = {k: v for k, v in later.items() if k in pending}
    return {k: decode(v, where=f"answer to {k}") for k, v in later.items()}


def _final_outputs(last: Checkpoint) -> list[Any] | None:
    """Return the encoded ``get_outputs()`` of a run whose last checkpoint is ``last``."""
    if last.kind != Kind.COMPLETED:
        return None
    return CompletedPayload.of(last).all_outputs


def _decoded(encoded: list[Any] | None, where: str) -> list[Any] | None:
    if encoded is None:
        return None
    return [decode(value, where=where) for value in encoded]


#: The events that say what a replay did with a call.
_CALL_EVENTS: Final = frozenset({"step_started", "step_cached", "step_failed"})


class _CallWatch:
    """What the replay does with each call, gathered from its events as they happen.

    The run keeps no event history (a replay of 100,000 steps would hold every event to its
    end); this listener keeps what the diff reads: the calls' order, which record served each
    cached call, and each failed call's error.
    """

    def __init__(self, on_event: Callable[[WorkflowEvent], None] | None) -> None:
        self.calls = ReplayCalls()
        self._seen: set[str] = set()
        self._on_event = on_event

    def seen(self, event: WorkflowEvent) -> None:
        """Note ``event`` if it is about a call, then hand it to the caller's listener."""
        key = event.key
        if key is not None and event.kind in _CALL_EVENTS:
            calls = self.calls
            if key not in self._seen:
                self._seen.add(key)
                calls.order.append(key)
            if event.kind == "step_cached":
                calls.served[key] = str(event.extra.get("recorded_as", key))
            elif event.kind == "step_failed":
                calls.failed[key] = str(event.extra.get("error", "failed"))
        if self._on_event is not None:
            self._on_event(event)
