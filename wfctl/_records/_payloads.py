"""What each kind of checkpoint record holds: one typed payload class per :class:`Kind`.

A checkpoint's ``data`` is the JSON object its kind's payload writes (``to_json``) and reads back
(``from_json``); this module is the one place that knows those shapes, so the engine, the
inspectors and the storages never look inside ``data`` themselves. The shapes on disk:

- :class:`RootPayload` (``root``): ``input``, ``workflow``, ``signature``, ``restored_from``
  (on a run restored from another run's checkpoint), ``target``.
- :class:`StepPayload` (``step``): ``steps``, each a :class:`~wfctl._records._recorded.StepRecord`;
  ``attempts`` (only when some step call failed an attempt and backs off), each a
  :class:`~wfctl._records._attempts.AttemptRecord`; ``failures`` (only when a step call failed for
  good and the workflow went on), each a :class:`~wfctl._records._attempts.StepFailure`; ``started``
  (only when a call that may be retried starts an attempt), each a
  :class:`~wfctl._records._attempts.AttemptStart`. A record may hold attempts, failures or starts and
  no steps. Readers that predate ``attempts``, ``failures`` or ``started`` ignore them: the
  format version stays as it was.
- :class:`ResumePayload` (``resume``): ``responses`` (request id -> encoded answer), ``reason``
  (``answer``, ``continue`` after a pause, ``recover`` after a crash, or ``retry`` of a failed
  run), ``signature`` (only when a resume was allowed to change the code).
- :class:`PausePayload` (``pause``): ``requests`` (:class:`RecordedRequest`), ``reason``
  (``request``, ``interrupt``, or ``handoff`` from a stopping worker).
- :class:`CompletedPayload` (``completed``): ``result``, ``outputs``.
- :class:`FailedPayload` (``failed``): ``error`` (``type``, ``message``), ``step`` (the step it
  failed in, when it failed in one).
- :class:`CancelledPayload` (``cancelled``): ``status`` (what the run was when it was
  cancelled: ``paused``, ``failed``, ``interrupted``, ``queued`` or ``running``), ``reason`` (only
  when one was given), ``by`` and ``asked_at`` (only for a running run, which its own driver
  ended: who asked, :class:`CancelRequest`, and when).

Any kind may also end with ``served``: how many calls were served from the cache since the
previous checkpoint (the chain adds it at commit time; :func:`served_count` reads it). Records
written before it was a count list the keys instead (:func:`served_keys` reads them).

Reading is as forgiving as a reader can afford: a field of the wrong type reads as absent,
except where the engine cannot go on without it (a step checkpoint's ``steps``, a resume's
``responses``, a completed run's ``outputs``), which raise :class:`CheckpointCorruptError`.
Writing builds the same JSON objects, key for key, that earlier versions wrote.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar, Self, TypeAlias, TypeVar

from wfctl._errors import CheckpointCorruptError
from wfctl._frozen import slot_setters

from ._attempts import SLEEP_STEP, AttemptRecord, AttemptStart, StepFailure, iso
from ._checkpoint import ENDING_STATUS, Checkpoint, Kind, RunStatus
from ._recorded import StepRecord

_Entry = TypeVar("_Entry")

__all__ = [
    "HANDOFF",
    "CancelRequest",
    "CancelledPayload",
    "CompletedPayload",
    "FailedPayload",
    "PausePayload",
    "Payload",
    "RecordedRequest",
    "ResumePayload",
    "RootPayload",
    "StepPayload",
    "ended_as",
    "handed_over",
    "payload_of",
    "recorded_requests",
    "recorded_signature",
    "served_count",
    "served_keys",
    "waiting_on",
]


#: The reason of a pause a stopping worker writes: the run is anyone's to take (not a person's
#: pause, which stays until resumed).
HANDOFF = "handoff"


def _entries(raw: Any, read: Callable[[Any], _Entry | None]) -> tuple[_Entry, ...]:
    """The entries of a list that read (``read`` gives None for a malformed one)."""
    if not isinstance(raw, list):
        return ()
    return tuple([entry for entry in map(read, raw) if entry is not None])


def _text_or_none(value: Any) -> str | None:
    return value if isinstance(value, str) else None


class _KindPayload:
    """What every payload class has: its kind, and a reader from a checkpoint of that kind."""

    __slots__ = ()
    KIND: ClassVar[Kind]

    @classmethod
    def from_json(cls, raw: dict[str, Any], where: str) -> Self:
        """Read a record's ``data`` (``where`` names the record in errors)."""
        raise NotImplementedError

    @classmethod
    def of(cls, checkpoint: Checkpoint) -> Self:
        """Read the payload of ``checkpoint``, which must be of this class's kind.

        Raises:
            CheckpointCorruptError: as :meth:`from_json`.
        """
        if checkpoint.kind != cls.KIND:
            raise ValueError(
                f"{checkpoint.checkpoint_id} is a {checkpoint.kind} record, not {cls.KIND}"
            )
        return cls.from_json(checkpoint.data, checkpoint.checkpoint_id)


@dataclass(frozen=True, slots=True)
class RootPayload(_KindPayload):
    """The start of a run: its encoded input and the code that runs it."""

    KIND: ClassVar[Kind] = Kind.ROOT

    #: The run's input, as the codec encoded it.
    input: Any
    #: ``module:qualname`` of the workflow.
    workflow: str | None
    #: The code signature the run was started with.
    signature: str | None
    #: The checkpoint a restored run started from (its origin).
    restored_from: str | None = None
    #: How the CLI loads the code again (``file.py:name`` or ``module:name``).
    target: str | None = None
    #: Admitted without being driven (``wfctl submit``): it waits for a worker.
    submitted: bool = False
    #: The directory the run was started in, for code found by module name (which may be
    #: found through the current directory): see :mod:`wfctl._engine._trust`.
    started_in: str | None = None

    def to_json(self) -> dict[str, Any]:
        """Return the ``data`` of the root record."""
        data: dict[str, Any] = {
            "input": self.input,
            "workflow": self.workflow,
            "signature": self.signature,
        }
        if self.restored_from is not None:
            data["restored_from"] = self.restored_from
        if self.target is not None:
            data["target"] = self.target
        if self.submitted:
            data["submitted"] = True
        if self.started_in is not None:
            data["started_in"] = self.started_in
        return data

    @classmethod
    def from_json(cls, raw: dict[str, Any], where: str) -> Self:
        """Read a root record's ``data`` (never raises: a missing field reads as None)."""
        return cls(
            raw.get("input"),
            _text_or_none(raw.get("workflow")),
            _text_or_none(raw.get("signature")),
            _text_or_none(raw.get("restored_from")),
            _text_or_none(raw.get("target")),
            raw.get("submitted") is True,
            _text_or_none(raw.get("started_in")),
        )


@dataclass(frozen=True, slots=True)
class StepPayload(_KindPayload):
    """Step results committed together (group commit), in the order they were queued."""

    KIND: ClassVar[Kind] = Kind.STEP

    steps: Sequence[StepRecord]
    #: Failed attempts of step calls that back off and try again (see ``wfctl._engine._policies``).
    attempts: Sequence[AttemptRecord] = ()
    #: Step calls that failed for good while the workflow went on (it caught the error).
    failures: Sequence[StepFailure] = ()
    #: Attempts of step calls that may be retried, each committed before its body ran.
    started: Sequence[AttemptStart] = ()

    def to_json(self) -> dict[str, Any]:
        """Return the ``data`` of the step record (the hot path: nothing but the records)."""
        data: dict[str, Any] = {"steps": [record.to_json() for record in self.steps]}
        if self.attempts:
            data["attempts"] = [attempt.to_json() for attempt in self.attempts]
        if self.failures:
            data["failures"] = [failure.to_json() for failure in self.failures]
        if self.started:
            data["started"] = [start.to_json() for start in self.started]
        return data

    @classmethod
    def from_json(cls, raw: dict[str, Any], where: str) -> Self:
        """Read a step record's ``data`` (a malformed attempt or failure entry reads as absent).

        Raises:
            CheckpointCorruptError: ``steps`` is not a list, or a step record is malformed.
        """
        steps = raw.get("steps")
        if not isinstance(steps, list):
            raise CheckpointCorruptError(where, "step checkpoint without a steps list")
        read = StepRecord.from_json
        records = tuple([read(step, where) for step in steps])
        if "attempts" not in raw and "failures" not in raw and "started" not in raw:
            # A step's record alone: every record of a run read back, filled in slot by slot.
            payload: Self = _new(cls)
            _SET_STEPS(payload, records)
            _SET_ATTEMPTS(payload, ())
            _SET_FAILURES(payload, ())
            _SET_STARTED(payload, ())
            return payload
        return cls(
            records,
            _entries(raw.get("attempts"), AttemptRecord.from_json),
            _entries(raw.get("failures"), StepFailure.from_json),
            _entries(raw.get("started"), AttemptStart.from_json),
        )


_SET_STEPS, _SET_ATTEMPTS, _SET_FAILURES, _SET_STARTED = slot_setters(
    StepPayload, "steps", "attempts", "failures", "started"
)
_new = object.__new__


@dataclass(frozen=True, slots=True)
class ResumePayload(_KindPayload):
    """A run going on from its head: the answers it was given, and why it went on."""

    KIND: ClassVar[Kind] = Kind.RESUME

    #: Request id -> the answer, as the codec encoded it.
    responses: dict[str, Any]
    #: ``answer``, ``continue`` (after a pause), ``recover`` (after a crash: the head is no
    #: ending) or ``retry`` (of a failed run).
    reason: str
    #: The new code signature, when a retry was allowed to run changed code.
    signature: str | None = None

    def to_json(self) -> dict[str, Any]:
        """Return the ``data`` of the resume record."""
        data: dict[str, Any] = {"responses": self.responses, "reason": self.reason}
        if self.signature is not None:
            data["signature"] = self.signature
        return data

    @classmethod
    def from_json(cls, raw: dict[str, Any], where: str) -> Self:
        """Read a resume record's ``data`` (a missing reason reads as ``answer``).

        Raises:
            CheckpointCorruptError: ``responses`` is present and not an object.
        """
        responses = raw.get("responses", {})
        if not isinstance(responses, dict):
            raise CheckpointCorruptError(where, "resume checkpoint with invalid responses")
        reason = raw.get("reason", "answer")
        return cls(responses, str(reason), _text_or_none(raw.get("signature")))


@dataclass(frozen=True, slots=True)
class RecordedRequest:
    """A request a pause record is waiting for: its id, encoded data and declared answer type."""

    request_id: str
    data: Any
    response_type: str | None

    def to_json(self) -> dict[str, Any]:
        """Return the request as stored inside a pause record."""
        return {
            "request_id": self.request_id,
            "data": self.data,
            "response_type": self.response_type,
        }


@dataclass(frozen=True, slots=True)
class PausePayload(_KindPayload):
    """A run that stopped for answers (``request``), was interrupted (``interrupt``: stays
    paused until resumed) or was handed over by a stopping worker (``handoff``: any worker may
    take it, see :func:`handed_over`)."""

    KIND: ClassVar[Kind] = Kind.PAUSE

    requests: tuple[RecordedRequest, ...]
    reason: str

    def to_json(self) -> dict[str, Any]:
        """Return the ``data`` of the pause record."""
        return {"requests": [r.to_json() for r in self.requests], "reason": self.reason}

    @classmethod
    def from_json(cls, raw: dict[str, Any], where: str) -> Self:
        """Read a pause record's ``data`` (never raises).

        A request that is not an object with a string ``request_id`` is not a request anyone
        can answer, and is left out; a missing reason reads as ``request``.
        """
        requests = raw.get("requests")
        found = []
        for request in requests if isinstance(requests, list) else ():
            if isinstance(request, dict) and isinstance(request.get("request_id"), str):
                found.append(
                    RecordedRequest(
                        request["request_id"],
                        request.get("data"),
                        _text_or_none(request.get("response_type")),
                    )
                )
        return cls(tuple(found), str(raw.get("reason", "request")))


@dataclass(frozen=True, slots=True)
class CompletedPayload(_KindPayload):
    """A run that returned: its encoded result, and the outputs it yielded before."""

    KIND: ClassVar[Kind] = Kind.COMPLETED

    result: Any
    outputs: list[Any]

    def to_json(self) -> dict[str, Any]:
        """Return the ``data`` of the completed record."""
        return {"result": self.result, "outputs": self.outputs}

    @classmethod
    def from_json(cls, raw: dict[str, Any], where: str) -> Self:
        """Read a completed record's ``data`` (missing outputs read as none).

        Raises:
            CheckpointCorruptError: ``outputs`` is present and not a list.
        """
        outputs = raw.get("outputs", [])
        if not isinstance(outputs, list):
            raise CheckpointCorruptError(where, "completed checkpoint without outputs")
        return cls(raw.get("result"), outputs)

    @property
    def all_outputs(self) -> list[Any]:
        """What ``get_outputs()`` returned: the outputs, then the result (unless None)."""
        return [*self.outputs, self.result] if self.result is not None else list(self.outputs)


@dataclass(frozen=True, slots=True)
class FailedPayload(_KindPayload):
    """A run that raised: the error's type and message, and the step it failed in."""

    KIND: ClassVar[Kind] = Kind.FAILED

    error_type: str
    message: str
    #: The key of the step the run failed in (None: it failed in its own body).
    step: str | None = None

    def to_json(self) -> dict[str, Any]:
        """Return the ``data`` of the failed record."""
        data: dict[str, Any] = {"error": {"type": self.error_type, "message": self.message}}
        if self.step is not None:
            data["step"] = self.step
        return data

    @classmethod
    def from_json(cls, raw: dict[str, Any], where: str) -> Self:
        """Read a failed record's ``data`` (never raises).

        An ``error`` that is not an object reads as type ``Error`` with the value as message.
        """
        error = raw.get("error")
        if isinstance(error, dict):
            error_type, message = error.get("type", "Error"), error.get("message", "")
        else:
            error_type, message = "Error", error
        return cls(str(error_type), str(message), _text_or_none(raw.get("step")))


@dataclass(frozen=True, slots=True)
class CancelRequest:
    """Who asked a running run to be cancelled, when, and why: what ``wfctl cancel`` leaves in
    the store for the run's driver, which ends the run at its next step boundary."""

    #: Who asked: ``user@host (pid N)``.
    by: str
    #: When, as an ISO 8601 UTC time.
    at: str
    #: The reason given (``--reason``), if any.
    reason: str | None = None

    def to_json(self) -> dict[str, Any]:
        """Return the request as stored (a JSON object)."""
        return {"by": self.by, "at": self.at, "reason": self.reason}

    @classmethod
    def from_json(cls, raw: Any) -> CancelRequest | None:
        """Read a stored request; None for anything that is not one (a store is data)."""
        if not isinstance(raw, dict) or not isinstance(raw.get("by"), str):
            return None
        return cls(raw["by"][:200], str(raw.get("at", ""))[:40], _text_or_none(raw.get("reason")))


@dataclass(frozen=True, slots=True)
class CancelledPayload(_KindPayload):
    """A run ended for good by ``wfctl cancel``: what it was before, why (if said), and for a
    running run, who asked its driver to end it and when."""

    KIND: ClassVar[Kind] = Kind.CANCELLED

    #: The run's status when it was cancelled (``paused``, ``failed``, ``interrupted``,
    #: ``queued``, or ``running``: its driver honoured a :class:`CancelRequest`).
    status: str
    #: The reason the canceller gave (``--reason``), if any.
    reason: str | None = None
    #: Who asked (a running run's :attr:`CancelRequest.by`), else None.
    by: str | None = None
    #: When they asked (a running run's :attr:`CancelRequest.at`), else None.
    asked_at: str | None = None

    @classmethod
    def honouring(cls, request: CancelRequest) -> CancelledPayload:
        """Return the record a running run's driver commits for ``request``."""
        return cls("running", request.reason, request.by, request.at)

    def to_json(self) -> dict[str, Any]:
        """Return the ``data`` of the cancelled record."""
        data: dict[str, Any] = {"status": self.status}
        if self.reason is not None:
            data["reason"] = self.reason
        if self.by is not None:
            data["by"] = self.by
            data["asked_at"] = self.asked_at
        return data

    @classmethod
    def from_json(cls, raw: dict[str, Any], where: str) -> Self:
        """Read a cancelled record's ``data`` (never raises: a missing field reads as unknown)."""
        return cls(
            str(raw.get("status", "unknown")),
            _text_or_none(raw.get("reason")),
            _text_or_none(raw.get("by")),
            _text_or_none(raw.get("asked_at")),
        )


Payload: TypeAlias = (
    RootPayload
    | StepPayload
    | ResumePayload
    | PausePayload
    | CompletedPayload
    | FailedPayload
    | CancelledPayload
)
_PAYLOADS: dict[str, type[Payload]] = {
    cls.KIND: cls
    for cls in (
        RootPayload,
        StepPayload,
        ResumePayload,
        PausePayload,
        CompletedPayload,
        FailedPayload,
        CancelledPayload,
    )
}


def payload_of(checkpoint: Checkpoint) -> Payload:
    """Read ``checkpoint``'s payload as its kind's class.

    Raises:
        CheckpointCorruptError: as that class's ``from_json``.
    """
    return _PAYLOADS[checkpoint.kind].from_json(checkpoint.data, checkpoint.checkpoint_id)


def served_keys(checkpoint: Checkpoint) -> tuple[str, ...]:
    """Return the keys served from the cache since the checkpoint before ``checkpoint``.

    Only records written before ``served`` became a count list them; others give ``()``.
    """
    served = checkpoint.data.get("served")
    return tuple(str(key) for key in served) if isinstance(served, list) else ()


def served_count(checkpoint: Checkpoint) -> int:
    """Return how many calls were served from the cache since the checkpoint before it."""
    served = checkpoint.data.get("served")
    if isinstance(served, list):
        return len(served)
    return served if type(served) is int and served > 0 else 0


def recorded_requests(checkpoint: Checkpoint) -> tuple[RecordedRequest, ...]:
    """Return the requests a pause record waits for (none for a record of another kind)."""
    if checkpoint.kind != Kind.PAUSE:
        return ()
    return PausePayload.of(checkpoint).requests


def ended_as(checkpoint: Checkpoint) -> RunStatus | None:
    """Return the status of a run whose head is ``checkpoint``, if that head ends the call
    that wrote it (None: a root, step or resume record, which only a lock can tell apart).

    One vocabulary for every command: a pause that waits for answers is ``paused``; a pause
    with nothing to answer (Ctrl-C, a signal, ``wfctl pause``, a stopping worker's hand-over)
    is ``interrupted``, as a run whose driver died is.
    """
    status = ENDING_STATUS.get(checkpoint.kind)
    if status is RunStatus.PAUSED and not recorded_requests(checkpoint):
        return RunStatus.INTERRUPTED
    return status


def handed_over(checkpoint: Checkpoint) -> bool:
    """Whether ``checkpoint`` is a pause a stopping worker wrote to hand its run over.

    Such a run waits for no answer and no person: a worker may take it as it takes an
    interrupted run, and ``wfctl runs`` lists it as ``interrupted``.
    """
    if checkpoint.kind != Kind.PAUSE:
        return False
    pause = PausePayload.of(checkpoint)
    return pause.reason == HANDOFF and not pause.requests


def recorded_signature(chain: Sequence[Checkpoint], upto: int) -> str:
    """Return the code signature that wrote ``chain[upto]`` ("" if none is recorded).

    That is the root's, unless a retry that was allowed to change code recorded a newer one in
    a ``resume`` record before it.
    """
    for checkpoint in reversed(chain[: upto + 1]):
        if checkpoint.kind == Kind.ROOT or checkpoint.kind == Kind.RESUME:
            signature = _text_or_none(checkpoint.data.get("signature"))
            if signature is not None:
                return signature
    return ""


def waiting_on(head: Checkpoint) -> str | None:
    """Say what a running run whose newest record is ``head`` waits for, if that is a durable
    sleep or a backoff still ahead of the wall clock (``wfctl runs``); else None."""
    if head.kind != Kind.STEP:
        return None
    try:
        payload = StepPayload.of(head)
    except CheckpointCorruptError:  # only informs: a record that cannot be read says nothing
        return None
    now = time.time()
    if payload.attempts:
        last = payload.attempts[-1]
        if last.retry_at > now:
            return f"backing off {last.key}: attempt {last.attempt + 1} at {iso(last.retry_at)}"
    for record in reversed(payload.steps):
        if record.name == SLEEP_STEP and isinstance(record.result, int | float):
            if record.result > now:
                return f"sleeping until {iso(record.result)}"
            break
    return None
