"""The records of a step's attempts and failures: each failed attempt (:class:`AttemptRecord`),
each attempt's start (:class:`AttemptStart`), a call that failed for good while the run went on
(:class:`StepFailure`), and the record of a durable sleep.

They are entries of ``step`` records (``attempts``, ``started``, ``failures``), committed
through the run's chain by the engine's policies and run loop, folded back by a resume
(``wfctl._engine._restore``) and shown by ``log``. Each reads a malformed stored entry as
absent: they inform and count, and are never served as results.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, TypeGuard

if TYPE_CHECKING:
    from ._recorded import StepRecord

__all__ = [
    "CUT_OFF",
    "SLEEP_STEP",
    "AttemptRecord",
    "AttemptStart",
    "StepFailure",
    "is_durable_sleep",
    "iso",
]

#: The step name a durable sleep is keyed and recorded under (``<scope>/sleep#<n>``).
SLEEP_STEP = "sleep"


def is_durable_sleep(record: StepRecord) -> bool:
    """Whether ``record`` is a durable sleep's (its result a wake-up time, not a value).

    A user's step may be named ``sleep`` too; its record has an argument digest, or says why
    its arguments were not stored. A durable sleep's has neither.
    """
    return (
        record.name == SLEEP_STEP
        and record.digest is None
        and record.args is None
        and record.args_omitted is None
    )


#: Epoch seconds of 10000-01-01: a time at or past it has no date to show.
_END_OF_DATES = 253_402_300_800


def _is_time(value: Any) -> TypeGuard[float]:
    """Whether ``value`` is epoch seconds a date can show (finite, from 1970 to year 9999).

    A stored entry's times are shown as dates (``log``): one that cannot be (an edited
    record's ``1e300``, ``NaN``, a negative time) makes the entry malformed, read as absent.
    """
    return (
        isinstance(value, int | float)
        and not isinstance(value, bool)
        and 0 <= value < _END_OF_DATES  # False for NaN too
    )


@dataclass(frozen=True, slots=True)
class AttemptRecord:
    """One failed attempt of a step call, committed before the step backs off."""

    key: str
    attempt: int
    error_type: str
    message: str
    at: float
    retry_at: float

    def to_json(self) -> dict[str, Any]:
        """Return the entry as stored in a ``step`` checkpoint's ``attempts``."""
        return {
            "key": self.key,
            "attempt": self.attempt,
            "error": {"type": self.error_type, "message": self.message},
            "at": self.at,
            "retry_at": self.retry_at,
        }

    @classmethod
    def from_json(cls, raw: Any) -> AttemptRecord | None:
        """Read a stored entry; a malformed one reads as None (it only informs)."""
        if not isinstance(raw, dict):
            return None
        error = raw.get("error")
        if not isinstance(error, dict):
            error = {}
        key, attempt, at, retry_at = (raw.get(k) for k in ("key", "attempt", "at", "retry_at"))
        if not isinstance(key, str) or type(attempt) is not int:
            return None
        if not _is_time(at) or not _is_time(retry_at):
            return None
        return cls(
            key, attempt, str(error.get("type", "?")), str(error.get("message", "")), at, retry_at
        )


@dataclass(frozen=True, slots=True)
class AttemptStart:
    """An attempt of a step call that may be retried, committed before its body runs.

    It is what makes the retry limit hold across a kill: an attempt that started and has no
    outcome when the run is resumed was cut off (the process died in it) and counts as made.
    """

    key: str
    attempt: int
    at: float
    #: The run paused inside this attempt (a request, or a pause asked at a step boundary in
    #: its body): it is taken back, not counted (written with the pause).
    withdrawn: bool = False

    def to_json(self) -> dict[str, Any]:
        """Return the entry as stored in a ``step`` checkpoint's ``started``."""
        entry: dict[str, Any] = {"key": self.key, "attempt": self.attempt, "at": self.at}
        if self.withdrawn:
            entry["withdrawn"] = True
        return entry

    @classmethod
    def from_json(cls, raw: Any) -> AttemptStart | None:
        """Read a stored entry; a malformed one reads as None."""
        if not isinstance(raw, dict):
            return None
        key, attempt, at = (raw.get(k) for k in ("key", "attempt", "at"))
        if not isinstance(key, str) or type(attempt) is not int or not _is_time(at):
            return None
        return cls(key, attempt, at, raw.get("withdrawn") is True)

    def ended(self, delay: float, failure: StepFailure | None) -> AttemptRecord:
        """The failed attempt this one counts as, with no outcome of its own recorded.

        ``failure`` is the call's recorded failure, if its last attempt failed for good and
        the run went on; else the attempt was cut off (the process died in it). Its backoff,
        ``delay`` seconds, is counted from its start.
        """
        error_type, message = (
            (failure.error_type, failure.message)
            if failure is not None
            else (CUT_OFF, "the run stopped during this attempt (killed, or its lease lost)")
        )
        return AttemptRecord(self.key, self.attempt, error_type, message, self.at, self.at + delay)


#: The error type of an attempt that was cut off (:meth:`AttemptStart.ended`).
CUT_OFF = "AttemptCutOff"


@dataclass(frozen=True, slots=True)
class StepFailure:
    """A step call that failed for good (its last attempt raised) while the run went on.

    The workflow caught the step's exception (or had not yet let it out when a sibling's
    commit wrote this): the call left no result. This says that it failed, and how, so a
    replay can compare a call that fails again with the source's failure instead of with
    nothing. It informs only: a resume executes the call again, as it executes any call
    without a result.
    """

    key: str
    #: The call's argument digest (None for a step that records none), as a record has it.
    digest: str | None
    error_type: str
    message: str
    at: float

    @property
    def error(self) -> str:
        """``Type: message``, as a ``step_failed`` event says it (``Type`` without one)."""
        return f"{self.error_type}: {self.message}" if self.message else self.error_type

    def to_json(self) -> dict[str, Any]:
        """Return the entry as stored in a ``step`` checkpoint's ``failures``."""
        return {
            "key": self.key,
            "digest": self.digest,
            "error": {"type": self.error_type, "message": self.message},
            "at": self.at,
        }

    @classmethod
    def from_json(cls, raw: Any) -> StepFailure | None:
        """Read a stored entry; a malformed one reads as None (it only informs)."""
        if not isinstance(raw, dict):
            return None
        key, digest, error, at = (raw.get(k) for k in ("key", "digest", "error", "at"))
        if not isinstance(key, str) or not isinstance(error, dict):
            return None
        if not _is_time(at):
            return None
        digest = digest if isinstance(digest, str) else None
        return cls(key, digest, str(error.get("type", "?")), str(error.get("message", "")), at)


def iso(seconds: float) -> str:
    """Return epoch ``seconds`` as an ISO 8601 UTC time (to the second)."""
    return datetime.fromtimestamp(seconds, UTC).isoformat(timespec="seconds")
