"""Replay diffing: line a replay's step calls up against the source run's records.

The rows, the output diff and the previews are here; :mod:`._pairing` pairs the calls with the
records (:func:`~._pairing.diff_rows`, a row at a time).

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
from collections.abc import Iterable, Mapping
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
    "against_failure",
    "bucket",
    "count_statuses",
    "diff_outputs",
    "executed_row",
    "failure_row",
    "preview",
    "render_json",
    "row_of",
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


def bucket(record: StepRecord) -> tuple[str, str, str | None, str | None]:
    """The calls a record may serve: its step (scope, name, explicit key) and argument digest."""
    return (record.scope, record.name, record.explicit, record.digest)


def executed_row(
    key: str, record: StepRecord, counterpart: StepRecord | None, changed: bool
) -> StepDiff:
    """The row of a call the replay executed (``record``), beside its source ``counterpart``."""
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
    return row_of(key, status, counterpart, record.digest, record.result)


def row_of(
    key: str,
    status: StepStatus,
    source: StepRecord | None,
    replay_digest: str | None,
    replay_result: Any = None,
    error: str | None = None,
) -> StepDiff:
    """A row of the call ``key`` compared with the source record ``source`` (None: none)."""
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


def failure_row(
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
    return against_failure(key, failure, status, digest, result, error)


def against_failure(
    key: str,
    failure: StepFailure,
    status: StepStatus = "not reached",
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


def count_statuses(rows: Iterable[StepDiff]) -> Mapping[str, int]:
    """Return how many rows have each status (every status present, in a fixed order)."""
    counts: dict[str, int] = dict.fromkeys(STEP_STATUSES, 0)
    for row in rows:
        counts[row.status] += 1
    return counts
