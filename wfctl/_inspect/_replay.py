"""Replay with a diff: run a workflow again from a checkpoint and compare it with the source run.

:func:`replay` restores ``checkpoint_id`` into a new run (its root names its origin; the source
run is never touched), then compares that run with the *source run*, the run holding the
checkpoint, over its whole recorded history: its final outputs if it completed, and every step
record it holds, including those of its own origin prefix. The result is a frozen
:class:`ReplayReport`; the caller decides what to raise or which exit code to pick.
:func:`start_replay` gives the rows one at a time instead, each as soon as it is decided
(:class:`~._replay_rows.ReplayRows`), which is how ``wfctl replay`` writes them.

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

import contextlib
import dataclasses
import functools
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from wfctl._engine._admission import place_in, restore_new_run
from wfctl._engine._events import WorkflowEvent, error_message
from wfctl._engine._plain_source import SourceFeed, read_plain_source
from wfctl._engine._restore import History, history_records, load_source
from wfctl._engine._run import RunOptions
from wfctl._engine._workflow import Workflow
from wfctl._errors import WfctlError
from wfctl._records._checkpoint import Checkpoint, Kind
from wfctl._records._codec import decode, encode
from wfctl._records._payloads import (
    CompletedPayload,
    ended_as,
    recorded_requests,
    recorded_signature,
)
from wfctl._storage._protocol import CheckpointStorage

from ._diff import (
    STEP_STATUSES,
    StepDiff,
    diff_outputs,
)
from ._pairing import RowPairing, SourceIndex, SourceIndexing, index_of
from ._replay_report import ReplayReport
from ._replay_rows import CallWatch, LiveRows, ReplayRows, RowSink

__all__ = [
    "STEP_STATUSES",
    "ReplayReport",
    "ReplayRows",
    "ReplaySource",
    "RowSink",
    "StepDiff",
    "read_source",
    "replay",
    "start_replay",
]


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

    The report holds every row; :func:`start_replay` gives them one at a time instead.

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
        CheckpointNotFoundError, CheckpointCorruptError, InvalidIdError: bad checkpoint (a
            plain source's record found corrupt while the replay runs too: its run is
            withdrawn, see :func:`start_replay`).
        WorkflowChangedError: the code changed and ``allow_changed`` is False.
        RunStateError: the checkpoint belongs to another workflow.
    """
    source = await read_source(workflow.storage, checkpoint_id)
    options = RunOptions(allow_changed, execute, shuffle_seed)
    rows = await start_replay(workflow, checkpoint_id, source, options, on_event, reuse_answers)
    return rows.finished(tuple([row async for row in rows]))


@dataclass(slots=True)
class ReplaySource:
    """The source run as a replay reads it once, before it runs (see :func:`read_source`).

    ``outline``: its chain without its step checkpoints but the target and the head.
    ``whole``: its whole history's answers and failures (no records). ``known``: what the
    replay may be served, handed to the replay's run. ``index``: what the step table must
    know before it reads the source's records again. ``feed``: a plain run's records, read as
    the replay's calls ask for them (None: every record was read already).
    """

    outline: list[Checkpoint]
    target: Checkpoint
    whole: History
    known: History
    index: SourceIndex
    feed: SourceFeed | None = None


async def read_source(storage: CheckpointStorage, checkpoint_id: str) -> ReplaySource:
    """Read the run holding ``checkpoint_id`` once, folded as it is read, for a replay.

    A plain run (never paused and resumed, never restored from another) in a store that can
    tell is verified whole, and its step records are read as the replay asks for them
    (:mod:`wfctl._engine._plain_source`); any other run is read whole, its records folded.

    Raises:
        CheckpointNotFoundError, CheckpointCorruptError, InvalidIdError: bad checkpoint.
    """
    plain = await read_plain_source(storage, checkpoint_id)
    if plain is not None:
        index = index_of(plain.keys, plain.widest, plain.whole.failures)
        return ReplaySource(
            plain.outline, plain.target, plain.whole, plain.known, index, plain.feed
        )
    indexing = SourceIndexing()
    outline, target, whole, known = await load_source(storage, checkpoint_id, indexing.add)
    return ReplaySource(outline, target, whole, known, indexing.index(whole.failures))


async def start_replay(
    workflow: Workflow,
    checkpoint_id: str,
    source: ReplaySource,
    options: RunOptions,
    on_event: Callable[[WorkflowEvent], None] | None = None,
    reuse_answers: bool = True,
    rows_to: RowSink | None = None,
) -> ReplayRows:
    """Replay ``checkpoint_id`` from the source run the caller read, and return its rows to
    compare, one at a time (see :class:`ReplayRows`; :func:`replay` for the arguments).

    ``source`` is what :func:`read_source` returned for ``checkpoint_id``, and is used up;
    ``options`` carry ``replay``'s ``allow_changed``, ``execute`` and ``shuffle_seed``.
    ``rows_to``, if given, is handed the first rows while the replay runs, as soon as each is
    decided (:class:`~._replay_rows.LiveRows`); the rows returned are those after them. What
    it raises is raised once the replay ended.

    What the replay did with each call is gathered from its events as they happen (none is
    kept on its result); its own records come back from the run that committed them.

    A plain source's records (``source.feed``) are read as the replay's calls ask for them,
    and those no call asked for once it ended. One that cannot be read (or is not the record
    read before the replay started) refuses the replay as :func:`read_source` would have: its
    run is withdrawn (nothing ran but calls served from records read), and the error raised.

    Raises:
        CheckpointCorruptError, RunNotFoundError, OSError: a plain source's record cannot be
            read.
    """
    outline, target, known = source.outline, source.target, source.known
    live = None
    if rows_to is not None:
        rows_to.start(target.run_id, checkpoint_id, source.index.widest_key)
        live = LiveRows(source.index, rows_to)
    source.index.keys = {}  # held by the live rows alone, as long as they go on
    # The diff reads every record the replay commits; its calls are watched as they happen.
    options = dataclasses.replace(
        options,
        event_history=0,
        keep_records=True,
        on_served=live.served if live is not None else None,
    )
    watch = CallWatch(on_event)
    answers: dict[str, Any] = {}
    if reuse_answers:
        answers = _later_answers(target, source.whole, known)
    feed = source.feed
    try:
        driven = await restore_new_run(
            workflow, checkpoint_id, outline, target, known, answers, None, options, watch.seen
        )
        if live is not None:
            live.close()
        if feed is not None:
            feed.finish()  # what no call asked for: read as the whole read reads it
    except BaseException:
        if feed is not None and feed.error is not None:
            # The source cannot be read whole: refused, as the whole read refuses it.
            await _withdraw(workflow.storage, watch.run_id)
            raise feed.error from None
        raise
    finally:
        if feed is not None:
            feed.close()
    given = 0
    if live is not None:
        if live.error is not None:
            raise live.error
        given = live.given
    result = driven.result
    calls = watch.calls
    calls.changed = set(result.changed)
    calls.records = {record.key: record for record in driven.records}
    calls.failures = {failure.key: failure for failure in driven.failures}
    head = outline[-1]
    source_encoded = _final_outputs(head)
    replay_encoded = encode(result.get_outputs()) if result.status == "completed" else None
    error = result.error
    report = ReplayReport(
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
        steps=(),
        answers_reused=tuple(answers),
        code_changed=recorded_signature(outline, place_in(outline, target)) != workflow.signature,
    )
    compared = RowPairing(source.index, calls, served_from_source=True)
    records = functools.partial(history_records, workflow.storage, outline[0], head.seq)
    return ReplayRows(report, compared, records, given)


async def _withdraw(storage: CheckpointStorage, run_id: str | None) -> None:
    """Remove the replay's run, refused once it started: nothing is left of it."""
    delete = getattr(storage, "delete_run", None)  # a store that can hand out a plain run
    if run_id is None or delete is None:
        return
    with contextlib.suppress(WfctlError, OSError):
        await delete(run_id)


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
