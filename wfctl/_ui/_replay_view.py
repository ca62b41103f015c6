"""A replay beside its source run, read from the store: the step table and the output diff.

A replay is a run whose root names the checkpoint it started from (its origin, in another run).
Its own records are the calls it executed; what it was served from the record is not stored
call by call. So the table counts every source record up to the origin as served (``cached``:
the replay's history, never executed again), pairs each record the replay wrote with the
source's as the CLI's replay report does (:func:`~wfctl._inspect._diff.diff_steps`: ``same``,
``changed``, ``new``, ``not reached``, ``failed``), and diffs the two runs' outputs when both
completed (:func:`~wfctl._inspect._diff.diff_outputs`), folded past a size as values are.
Nothing is run again.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from wfctl._inspect._diff import ReplayCalls, StepDiff, count_statuses, diff_outputs
from wfctl._inspect._pairing import diff_steps
from wfctl._records._attempts import StepFailure
from wfctl._records._checkpoint import split_checkpoint_id
from wfctl._records._payloads import StepPayload
from wfctl._records._recorded import StepRecord
from wfctl._sources._protocol import Entry, Source

from ._values import Shown, folded

__all__ = ["ReplayView", "replay_view"]


@dataclass(frozen=True, slots=True)
class ReplayView:
    """A replay run against its source run: rows, counts and the output diff (folded)."""

    replay_run_id: str
    source_run_id: str
    origin: str
    steps: tuple[StepDiff, ...]
    counts: dict[str, int]
    outputs_diff: Shown
    both_completed: bool


@dataclass(slots=True)
class _Read:
    records: list[tuple[int, StepRecord]]
    failures: list[tuple[int, StepFailure]]
    outputs: object
    completed: bool


def _read(entries: Iterable[Entry]) -> _Read:
    read = _Read([], [], None, False)
    for entry in entries:
        data = entry.data.get("data") if isinstance(entry.data, dict) else None
        if not isinstance(data, dict):
            continue
        if entry.kind == "step":
            payload = StepPayload.from_json(data, entry.entry_id)
            for failure in payload.failures:
                read.failures.append((len(read.records), failure))
            read.records.extend((entry.order, record) for record in payload.steps)
        elif entry.kind == "completed":
            read.outputs, read.completed = data, True
    return read


def replay_view(source: Source, replay_run_id: str, origin: str) -> ReplayView:
    """Return the replay ``replay_run_id`` (started from ``origin``, ``RUN.SEQ``) beside its
    source run.

    Raises:
        InvalidIdError: ``origin`` is no checkpoint id.
        RunNotFoundError: either run is not in the store.
        CheckpointCorruptError: a record of either run cannot be read.
    """
    source_run_id, origin_seq = split_checkpoint_id(origin)
    before = _read(source.records(source_run_id))
    after = _read(source.records(replay_run_id))
    own = {record.key: record for _, record in after.records}
    calls = ReplayCalls(
        order=list(own),
        served={
            record.key: record.key
            for seq, record in before.records
            if seq <= origin_seq and record.key not in own
        },
        records=own,
        failures={failure.key: failure for _, failure in after.failures},
    )
    steps = diff_steps([record for _, record in before.records], calls, before.failures)
    both = before.completed and after.completed
    return ReplayView(
        replay_run_id=replay_run_id,
        source_run_id=source_run_id,
        origin=origin,
        steps=steps,
        counts=dict(count_statuses(steps)),
        outputs_diff=folded(diff_outputs(before.outputs, after.outputs) if both else ""),
        both_completed=both,
    )
