"""A run's timeline entries: what ``log`` shows of each checkpoint (``LogEntry``, ``StepEntry``), and the page of a chain asked for (``LogPage``)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from wfctl._frozen import slot_setters
from wfctl._readable import readable, readable_text
from wfctl._records._attempts import AttemptRecord, StepFailure
from wfctl._records._checkpoint import Checkpoint
from wfctl._records._payloads import (
    CancelledPayload,
    CompletedPayload,
    FailedPayload,
    PausePayload,
    ResumePayload,
    RootPayload,
    StepPayload,
    payload_of,
    served_count,
    served_keys,
)
from wfctl._records._recorded import args_text

from ._documents import epoch_time, utc_time

if TYPE_CHECKING:
    from wfctl._records._recorded import StepRecord


__all__ = ["WHOLE_CHAIN", "LogEntry", "LogPage", "StepEntry", "log_entry"]


@dataclass(frozen=True, slots=True)
class StepEntry:
    """A step result a checkpoint committed: its key and how long the call took (seconds).

    ``record`` is the stored step record (arguments and result, for ``wfctl log -v``).
    """

    key: str
    duration: float | None
    record: StepRecord | None = None

    def describe_args(self) -> str:
        """Return the arguments the call received as people read them (cut to 200
        characters), or why they are not stored."""
        record = self.record
        if record is None or record.args is None:
            return record.describe_args() if record else "not recorded"
        keyword = {name: readable(value) for name, value in (record.kwargs or {}).items()}
        return args_text([readable(value) for value in record.args], keyword)

    def describe_result(self) -> str:
        """Return the call's stored result as people read it (cut to 200 characters)."""
        return readable_text(self.record.result, 200) if self.record else "not recorded"


@dataclass(frozen=True, slots=True)
class LogEntry:
    """One checkpoint of a run's timeline and what it recorded."""

    checkpoint_id: str
    seq: int
    kind: str
    timestamp: str
    steps: tuple[StepEntry, ...] = ()
    served: tuple[str, ...] = ()
    #: How many calls were served from the cache (``served`` names them in older records).
    served_count: int = 0
    requests: tuple[str, ...] = ()
    answers: tuple[tuple[str, Any], ...] = ()
    error: str | None = None
    detail: str | None = None
    #: Failed attempts of step calls recorded here (each retried after its backoff).
    attempts: tuple[AttemptRecord, ...] = ()
    #: Step calls recorded here as failed for good, the workflow going on (it caught them).
    failures: tuple[StepFailure, ...] = ()

    def to_json(self) -> dict[str, Any]:
        """Return the entry as an item of the log document's ``checkpoints``."""
        return self._document(utc_time)

    def _document(self, utc: Callable[[str], str | None]) -> dict[str, Any]:
        """:meth:`to_json`, with stored times converted by ``utc`` (:func:`utc_time`'s results)."""
        return {
            "checkpoint_id": self.checkpoint_id,
            "seq": self.seq,
            "kind": self.kind,
            "created_at": utc(self.timestamp),
            "steps": [{"key": s.key, "duration_s": s.duration} for s in self.steps],
            "served_keys": list(self.served),
            "served_count": self.served_count,
            "request_ids": list(self.requests),
            "answers": dict(self.answers),
            "error": self.error,
            "detail": self.detail,
            "attempts": [_attempt_json(a) for a in self.attempts],
            "failures": [
                {"key": f.key, "error": f.error, "failed_at": epoch_time(f.at)}
                for f in self.failures
            ],
        }


def _attempt_json(attempt: AttemptRecord) -> dict[str, Any]:
    return {
        "key": attempt.key,
        "attempt": attempt.attempt,
        "error": f"{attempt.error_type}: {attempt.message}",
        "failed_at": epoch_time(attempt.at),
        "retry_at": epoch_time(attempt.retry_at),
    }


@dataclass(frozen=True, slots=True)
class LogPage:
    """Which checkpoints of a run ``wfctl log`` lists: all of them by default.

    ``from_seq`` starts the list at that seq; ``last`` lists only the chain's last N (the two
    exclude each other); ``limit`` lists at most N from where the list starts. The list is
    always in chain order, and every record before its end is verified whether it is listed
    or not.

    Raises:
        ValueError: (from the constructor) a negative number, or both ``from_seq`` and
            ``last``.
    """

    from_seq: int | None = None
    last: int | None = None
    limit: int | None = None

    def __post_init__(self) -> None:
        for name in ("from_seq", "last", "limit"):
            value = getattr(self, name)
            if value is not None and (type(value) is not int or value < 0):
                raise ValueError(f"{name} must be an integer of 0 or more, not {value!r}")
        if self.from_seq is not None and self.last is not None:
            raise ValueError("give from_seq or last, not both")

    def seqs(self, head_seq: int) -> range:
        """The seqs listed of a chain whose head is ``head_seq`` (empty past the head)."""
        end = head_seq + 1
        first = self.from_seq or 0
        if self.last is not None:
            first = max(0, end - self.last)
        if self.limit is not None:
            end = min(end, first + self.limit)
        return range(first, max(first, end))


#: Every checkpoint.
WHOLE_CHAIN = LogPage()


def log_entry(checkpoint: Checkpoint) -> LogEntry:
    """Return the timeline entry of one checkpoint (what ``log`` shows of it)."""
    steps: tuple[StepEntry, ...] = ()
    requests: tuple[str, ...] = ()
    answers: tuple[tuple[str, Any], ...] = ()
    attempts: tuple[AttemptRecord, ...] = ()
    failures: tuple[StepFailure, ...] = ()
    error = detail = None
    match payload_of(checkpoint):
        case StepPayload(steps=records, attempts=failed, failures=failed_for_good, started=started):
            steps = tuple([_step_entry(r) for r in records])
            attempts = tuple(failed)
            failures = tuple(failed_for_good)
            if started:  # the retry limit's count: say which attempts began here
                detail = "; ".join(
                    f"{s.key} attempt {s.attempt} paused in, not counted"
                    if s.withdrawn
                    else f"started {s.key} attempt {s.attempt}"
                    for s in started
                )
        case PausePayload(requests=asked, reason=reason):
            requests = tuple(r.request_id for r in asked)
            detail = f"reason: {reason}"
        case ResumePayload(responses=responses, reason=reason):
            answers = tuple(sorted(responses.items()))
            detail = f"reason: {reason}"
        case FailedPayload(error_type=error_type, message=message):
            error = f"{error_type}: {message}"
        case CancelledPayload(status=before, reason=why, by=by):
            asker = f" by {by}" if by is not None else ""  # a running run's driver ended it
            detail = f"cancelled while {before}{asker}" + (f": {why}" if why is not None else "")
        case CompletedPayload(result=result):
            detail = f"result: {readable_text(result, 100)}"
        case RootPayload(workflow=workflow, input=encoded_input):
            detail = f"workflow {workflow or '?'}, input: {readable_text(encoded_input, 100)}"
            if checkpoint.origin_checkpoint_id:
                detail += f", restored from {checkpoint.origin_checkpoint_id}"
    # Filled in slot by slot (one entry per record of a run, however long): what
    # ``LogEntry(...)`` makes of these values, at half the cost.
    entry = _new(LogEntry)
    _SET_CHECKPOINT_ID(entry, checkpoint.checkpoint_id)
    _SET_SEQ(entry, checkpoint.seq)
    _SET_KIND(entry, checkpoint.kind)
    _SET_TIMESTAMP(entry, checkpoint.timestamp)
    _SET_STEPS(entry, steps)
    if "served" in checkpoint.data:
        _SET_SERVED(entry, served_keys(checkpoint))
        _SET_SERVED_COUNT(entry, served_count(checkpoint))
    else:  # what both give without it: most records served nothing
        _SET_SERVED(entry, ())
        _SET_SERVED_COUNT(entry, 0)
    _SET_REQUESTS(entry, requests)
    _SET_ANSWERS(entry, answers)
    _SET_ERROR(entry, error)
    _SET_DETAIL(entry, detail)
    _SET_ATTEMPTS(entry, attempts)
    _SET_FAILURES(entry, failures)
    return entry


def _step_entry(record: StepRecord) -> StepEntry:
    entry = _new(StepEntry)
    _SET_STEP_KEY(entry, record.key)
    _SET_STEP_DURATION(entry, float(record.duration))
    _SET_STEP_RECORD(entry, record)
    return entry


(
    _SET_CHECKPOINT_ID,
    _SET_SEQ,
    _SET_KIND,
    _SET_TIMESTAMP,
    _SET_STEPS,
    _SET_SERVED,
    _SET_SERVED_COUNT,
    _SET_REQUESTS,
    _SET_ANSWERS,
    _SET_ERROR,
    _SET_DETAIL,
    _SET_ATTEMPTS,
    _SET_FAILURES,
) = slot_setters(
    LogEntry,
    *("checkpoint_id", "seq", "kind", "timestamp", "steps", "served", "served_count"),
    *("requests", "answers", "error", "detail", "attempts", "failures"),
)
_SET_STEP_KEY, _SET_STEP_DURATION, _SET_STEP_RECORD = slot_setters(
    StepEntry, "key", "duration", "record"
)
_new = object.__new__
