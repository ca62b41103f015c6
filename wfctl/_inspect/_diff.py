"""Replay diffing: line a replay's step calls up against the source run's records.

Rows are aligned by durable key. A call served from the record is paired with the record that
served it; a call that ran is paired with the source record of the same key when their argument
digests agree, else with the oldest unpaired source record of the same step, scope and digest
(calls whose keys follow completion order, such as ``asyncio.as_completed``, keep their
counterpart), else with the source record of its key (then it is ``changed``). Source records
no call was paired with are ``not reached``.

A call that failed for good while the source run went on (its workflow caught the error) left
no record, but a failure entry (:class:`~wfctl._records._attempts.StepFailure`). A replay call of that
key with no source record is compared with it: failed again with the same argument digest and
the same error, it is ``same``; otherwise (another error, another argument, or a result this
time) ``changed``. A failure no call was paired with is ``not reached``.

Outputs are compared as pretty JSON of their codec encoding, so bytes, dates and registered
classes render, and two outputs are equal exactly when their rendering is.
"""

from __future__ import annotations

import difflib
import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final, Literal

from wfctl._readable import readable_text
from wfctl._records._attempts import StepFailure, is_durable_sleep
from wfctl._records._codec import canonical_json
from wfctl._records._recorded import StepRecord

__all__ = [
    "STEP_STATUSES",
    "ReplayCalls",
    "StepDiff",
    "StepStatus",
    "count_statuses",
    "diff_outputs",
    "diff_steps",
    "preview",
    "render_json",
]

StepStatus = Literal["cached", "same", "changed", "new", "not reached", "failed"]

#: Every row status, in the order reports list their counts.
STEP_STATUSES: Final[tuple[StepStatus, ...]] = (
    "cached",
    "same",
    "changed",
    "new",
    "not reached",
    "failed",
)

_PREVIEW_WIDTH: Final = 60


@dataclass(frozen=True, slots=True)
class StepDiff:
    """One row of a replay's step table.

    ``status`` is one of:

    - ``cached``: served from the record in the replay (not executed);
    - ``same``: executed again, same argument digest and same encoded result as the source,
      or failed again with the same argument digest and error as the source's call did (the
      source's workflow having caught it: ``source_error``);
    - ``changed``: executed again with another result or another argument digest, or reported
      changed by the engine (a recorded call replaced under ``allow_changed``), or a call
      that failed in one run and not the same way in the other;
    - ``new``: executed in the replay, with no counterpart in the source run;
    - ``not reached``: recorded by the source run, never called by the replay;
    - ``failed``: called by the replay but returned no result (it raised, diverged, or the
      replay paused first); ``replay_preview`` holds the error.

    ``source_key`` is the key of the source record the row is compared with (None when there
    is none); it differs from ``key`` only for calls matched by digest across keys.
    ``source_result`` and ``replay_result`` are the encoded results (the codec's encoding):
    ``source_result`` is None when there is no source record, ``replay_result`` when the
    replay has no result for the row (``not reached``, ``failed``). ``error`` is why a
    ``failed`` row has none (and a ``same`` or ``changed`` one that failed again);
    ``source_error`` why the source's call had none (it failed, its workflow going on).
    """

    key: str
    status: StepStatus
    source_digest: str | None
    replay_digest: str | None
    source_result: Any = None
    replay_result: Any = None
    source_key: str | None = None
    error: str | None = None
    source_error: str | None = None

    @property
    def has_replay_result(self) -> bool:
        """Whether the replay has a result for this row (it was served or executed)."""
        return self.status not in ("not reached", "failed") and self.error is None

    @property
    def source_preview(self) -> str | None:
        """The source result as short readable text (None without a source record), or the
        error of a source call that failed."""
        if self.source_error is not None:
            return _shorten(self.source_error)
        return preview(self.source_result) if self.source_key is not None else None

    @property
    def replay_preview(self) -> str | None:
        """The replay's result as short readable text, or the error of a ``failed`` row."""
        if self.error is not None:
            return _shorten(self.error)
        return preview(self.replay_result) if self.has_replay_result else None

    def to_json(self) -> dict[str, Any]:
        """Return the row as an item of the replay document's ``steps``.

        Results are in the codec's encoding; the status says ``not_reached`` (no space).
        """
        return {
            "key": self.key,
            "status": self.status.replace(" ", "_"),
            "source_key": self.source_key,
            "source_digest": self.source_digest,
            "replay_digest": self.replay_digest,
            "source_result": self.source_result,
            "replay_result": self.replay_result,
            "error": self.error,
            "source_error": self.source_error,
        }


@dataclass(slots=True)
class ReplayCalls:
    """What the replay did with each step call, gathered from its result and its own chain.

    ``order``: call keys in the order the calls were made. ``served``: cached key -> key of the
    record that served it. ``records``: the replay's own committed records (executed calls).
    ``changed``: keys the engine reported changed. ``failed``: key -> error text.
    ``failures``: the replay's own committed failures (calls that failed, the run going on).
    """

    order: list[str] = field(default_factory=list)
    served: dict[str, str] = field(default_factory=dict)
    records: dict[str, StepRecord] = field(default_factory=dict)
    changed: set[str] = field(default_factory=set)
    failed: dict[str, str] = field(default_factory=dict)
    failures: dict[str, StepFailure] = field(default_factory=dict)


def preview(encoded: Any) -> str:
    """Return an encoded value as short readable text (JSON, at most 60 characters)."""
    return _shorten(readable_text(encoded))


def _shorten(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= _PREVIEW_WIDTH else text[: _PREVIEW_WIDTH - 3] + "..."


def render_json(encoded: Any) -> str:
    """Return the pretty JSON text that outputs are compared and diffed by."""
    return json.dumps(encoded, indent=2, sort_keys=True, default=repr, ensure_ascii=False)


def diff_outputs(source: Any, replay: Any) -> str:
    """Return a unified diff (``source`` -> ``replay``) of two encoded values; empty if equal."""
    before, after = render_json(source), render_json(replay)
    if before == after:
        return ""
    lines = difflib.unified_diff(
        before.splitlines(), after.splitlines(), "source", "replay", lineterm=""
    )
    return "\n".join(lines) + "\n"


def _same_result(a: Any, b: Any) -> bool:
    try:
        return canonical_json(a) == canonical_json(b)
    except (TypeError, ValueError):
        return bool(a == b)


def _bucket(record: StepRecord) -> tuple[str, str, str | None, str | None]:
    return (record.scope, record.name, record.explicit, record.digest)


class _Source:
    """The source run's records by key (a later record of a key supersedes an earlier one)."""

    def __init__(self, records: Iterable[StepRecord]) -> None:
        self.by_key: dict[str, StepRecord] = {}
        self.position: dict[str, int] = {}
        #: For each record, how many keys came before it (a place in ``position``'s order).
        self._keys_before: list[int] = []
        for record in records:
            self._keys_before.append(len(self.position))
            self.position.setdefault(record.key, len(self.position))
            self.by_key[record.key] = record
        self.paired: set[str] = set()

    def place(self, records_before: int) -> int:
        """The place, in ``position``'s order, of what came after ``records_before`` records."""
        before = self._keys_before
        return before[records_before] if records_before < len(before) else len(self.position)

    def free(self, key: str | None) -> StepRecord | None:
        if key is None or key in self.paired:
            return None
        return self.by_key.get(key)

    def same_call(self, record: StepRecord) -> StepRecord | None:
        """Return the oldest unpaired record of the same step, scope, explicit key and digest."""
        wanted = _bucket(record)
        candidates = (
            r for k, r in self.by_key.items() if k not in self.paired and _bucket(r) == wanted
        )
        return min(candidates, key=lambda r: self.position[r.key], default=None)


def _executed_row(
    key: str, record: StepRecord, source: _Source, changed: bool
) -> tuple[StepRecord | None, StepDiff]:
    counterpart = source.free(key)
    if counterpart is None or counterpart.digest != record.digest:
        counterpart = source.same_call(record) or counterpart
    status: StepStatus
    if counterpart is None:
        status = "changed" if changed else "new"
    elif (
        changed
        or counterpart.digest != record.digest
        # A durable sleep's result is its wake-up time: a timer, not a value to compare.
        or (not is_durable_sleep(record) and not _same_result(counterpart.result, record.result))
    ):
        status = "changed"
    else:
        status = "same"
    return counterpart, _row(key, status, counterpart, record.digest, record.result)


def _row(
    key: str,
    status: StepStatus,
    source: StepRecord | None,
    replay_digest: str | None,
    replay_result: Any = None,
    error: str | None = None,
) -> StepDiff:
    return StepDiff(
        key=key,
        status=status,
        source_digest=source.digest if source else None,
        replay_digest=replay_digest,
        source_result=source.result if source else None,
        replay_result=replay_result,
        source_key=source.key if source else None,
        error=error,
    )


def _failure_row(
    key: str, failure: StepFailure, calls: ReplayCalls, record: StepRecord | None
) -> StepDiff:
    """The row of a replay call whose source counterpart is a failure (no record)."""
    again = calls.failures.get(key)
    status: StepStatus = "changed"
    if record is not None:  # it returned this time
        digest, result, error = record.digest, record.result, None
    elif again is not None:  # it failed again (or the workflow cancelled it again)
        digest, result, error = again.digest, None, again.error
        if (again.digest, again.error) == (failure.digest, failure.error):
            status = "same"
    else:  # no failure recorded: the replay stopped, or failed with the error itself
        digest = result = None
        error = calls.failed.get(key, "no result: the replay stopped before it returned")
    return _against_failure(key, failure, status, digest, result, error)


def _against_failure(
    key: str,
    failure: StepFailure,
    status: StepStatus,
    replay_digest: str | None = None,
    replay_result: Any = None,
    error: str | None = None,
) -> StepDiff:
    """A row whose source counterpart is the failure of the call ``key`` (no record)."""
    return StepDiff(
        key=key,
        status=status,
        source_digest=failure.digest,
        replay_digest=replay_digest,
        replay_result=replay_result,
        source_key=key,
        error=error,
        source_error=failure.error,
    )


def diff_steps(
    source_records: Sequence[StepRecord],
    calls: ReplayCalls,
    source_failures: Sequence[tuple[int, StepFailure]] = (),
) -> tuple[StepDiff, ...]:
    """Return the step table of a replay against the source run's records.

    Rows are ordered by the position of their source record (or failure), then (for rows
    without one) by the order of the replay's calls.

    Args:
        source_records: every record of the source run's history, origins first.
        calls: what the replay did with its calls.
        source_failures: the source's step failures, each with how many of ``source_records``
            came before the record that holds it (:attr:`~wfctl._engine._restore.History.failures`).
    """
    source = _Source(source_records)
    # A later failure of a key supersedes an earlier one, as a later record does.
    failures = {
        failure.key: (source.place(before) - 0.5, failure) for before, failure in source_failures
    }
    rows: list[tuple[float, StepDiff]] = []
    tail = len(source.position)
    # Served calls first: the record that served a call is its counterpart, whatever its key.
    for key, recorded_as in calls.served.items():
        served = source.by_key.get(recorded_as)
        source.paired.add(recorded_as)
        digest = served.digest if served else None
        result = served.result if served else None
        rows.append(
            (source.position.get(recorded_as, tail), _row(key, "cached", served, digest, result))
        )
    for index, key in enumerate(calls.order):
        if key in calls.served:
            continue
        record = calls.records.get(key)
        counterpart: StepRecord | None
        if key in failures and key not in source.by_key:
            position, failure = failures.pop(key)
            rows.append((position, _failure_row(key, failure, calls, record)))
            continue
        if record is not None:
            counterpart, row = _executed_row(key, record, source, key in calls.changed)
        else:
            counterpart = source.free(key)
            error = calls.failed.get(key, "no result: the replay stopped before it returned")
            row = _row(key, "failed", counterpart, None, error=error)
        if counterpart is not None:
            source.paired.add(counterpart.key)
            rows.append((source.position[counterpart.key], row))
        else:
            rows.append((tail + index, row))
    for key, record in source.by_key.items():
        if key not in source.paired:
            rows.append((source.position[key], _row(key, "not reached", record, None)))
    for key, (position, failure) in failures.items():
        if key not in source.by_key:  # else a record of the key came later: it is the call's
            rows.append((position, _against_failure(key, failure, "not reached")))
    rows.sort(key=lambda item: item[0])
    return tuple(row for _, row in rows)


def count_statuses(rows: Iterable[StepDiff]) -> Mapping[str, int]:
    """Return how many rows have each status (every status present, in a fixed order)."""
    counts: dict[str, int] = dict.fromkeys(STEP_STATUSES, 0)
    for row in rows:
        counts[row.status] += 1
    return counts
