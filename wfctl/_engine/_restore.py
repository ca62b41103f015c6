"""Reading a run's history back: the records and answers a restored run may use.

Restoring from the head of a paused, failed or interrupted run continues that run's chain.
Restoring from any other checkpoint, or from a completed run, starts a new run whose root names
its origin; its cache is the origin chain up to that checkpoint (and, recursively, that run's
own origin), so a restored run never copies earlier results into its own chain.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncGenerator, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from wfctl._errors import (
    CheckpointCorruptError,
    CheckpointNotFoundError,
    RunNotFoundError,
    RunStateError,
    UnencodableValueError,
)
from wfctl._records._attempts import AttemptRecord, AttemptStart, StepFailure
from wfctl._records._checkpoint import Checkpoint, Kind, split_checkpoint_id, validate_run_id
from wfctl._records._codec import canonical_json, encode
from wfctl._records._payloads import ResumePayload, StepPayload, recorded_requests
from wfctl._records._recorded import RecordedCalls, StepRecord
from wfctl._records._refs import Resolver
from wfctl._storage._capabilities import chain_records, load_chain
from wfctl._storage._pages import PagedStore
from wfctl._storage._protocol import CheckpointStorage

from ._af_log import AF_LOGGER
from ._response_types import convert_answer

__all__ = [
    "History",
    "check_answers",
    "collect_history",
    "convert_answers",
    "drop_resent_answers",
    "encode_answers",
    "fold_history",
    "history_records",
    "load_folded",
    "load_outline",
    "load_source",
    "load_target",
    "read_origins",
]

_MAX_ORIGIN_DEPTH = 1000


@dataclass(slots=True)
class History:
    """Step records and answers gathered from a chain prefix, oldest first.

    ``records`` lists the step records in order; ``calls`` holds those already handed to the
    calls of a run (packed, see :class:`~wfctl._records._recorded.RecordedCalls`), which come before
    them. A resume folds its chain straight into ``calls`` as it is read, so it never holds
    every record unpacked at once.
    """

    records: list[StepRecord] = field(default_factory=list)
    responses: dict[str, Any] = field(default_factory=dict)
    #: Failed attempts of step calls, by call key, and the last attempt each started; a
    #: ``resume`` of a failed run, or a new run, starts them afresh (:meth:`forget_attempts`).
    attempts: dict[str, list[AttemptRecord]] = field(default_factory=dict)
    started: dict[str, AttemptStart] = field(default_factory=dict)
    #: The kind of the last checkpoint folded (whether a ``resume`` follows a failure).
    last_kind: Kind | None = None
    #: Step calls that failed for good while the run went on, each with how many of
    #: ``records`` came before the record that holds it (a replay compares them).
    failures: list[tuple[int, StepFailure]] = field(default_factory=list)
    calls: RecordedCalls = field(default_factory=RecordedCalls)
    #: The step results of the last records read, each with its seq and base, oldest first
    #: (``Resolver.held_records``): what the run, resumed after them, may refer to.
    held: list[tuple[int, int, list[Any]]] = field(default_factory=list)

    def forget_attempts(self) -> None:
        """Forget every call's attempts: what follows gets its full retries again.

        Only two things do that: a resume of a ``failed`` run (its user asks for another go)
        and a new run (a root: a restore or a replay is a run of its own). A resume after a
        crash, an interrupt, a pause or a lost lease goes on counting, so no kill ever adds an
        attempt.
        """
        self.attempts.clear()
        self.started.clear()

    def hand_records_to_calls(self) -> None:
        """Move the records listed so far into ``calls``, in order."""
        add = self.calls.add
        for record in self.records:
            add(record)
        self.records.clear()

    def take_calls(self) -> RecordedCalls:
        """Return every record as calls may claim them, and leave the history without them.

        Their new owner lets each go once it is served, so a long resume does not hold
        them all to its end.
        """
        self.hand_records_to_calls()
        calls, self.calls = self.calls, RecordedCalls()
        return calls


async def load_target(
    storage: CheckpointStorage, checkpoint_id: str
) -> tuple[list[Checkpoint], Checkpoint]:
    """Return the chain of the run holding ``checkpoint_id``, and that checkpoint.

    Raises:
        InvalidIdError: the id is malformed.
        CheckpointNotFoundError: no such run or no such seq in it.
        CheckpointCorruptError: the run's chain cannot be trusted.
    """
    run_id, seq = split_checkpoint_id(checkpoint_id)
    try:
        chain = await load_chain(storage, run_id)
    except RunNotFoundError:
        raise CheckpointNotFoundError(checkpoint_id) from None
    if seq >= len(chain):
        raise CheckpointNotFoundError(checkpoint_id)
    return chain, chain[seq]


def _fold(chain: Sequence[Checkpoint], upto: int, history: History) -> None:
    for checkpoint in chain[: upto + 1]:
        if checkpoint.kind == Kind.STEP:
            _fold_step(StepPayload.of(checkpoint), history)
        elif checkpoint.kind == Kind.RESUME:
            resume = ResumePayload.of(checkpoint)
            history.responses.update(resume.responses)
            # Decided by what it follows, not by its reason: before ``recover``, a resume
            # after a crash was recorded as a ``retry`` too.
            if history.last_kind == Kind.FAILED:
                history.forget_attempts()
        elif checkpoint.kind == Kind.ROOT:  # a run's own attempts, not its origin's
            history.forget_attempts()
        history.last_kind = checkpoint.kind


def _fold_step(payload: StepPayload, history: History) -> None:
    before = len(history.records)
    history.failures.extend((before, failure) for failure in payload.failures)
    history.records.extend(payload.steps)
    for attempt in payload.attempts:
        history.attempts.setdefault(attempt.key, []).append(attempt)
    for start in payload.started:
        if not start.withdrawn:
            history.started[start.key] = start
        elif (kept := history.started.get(start.key)) and kept.attempt == start.attempt:
            del history.started[start.key]  # the run paused in it: not counted


async def read_origins(
    storage: CheckpointStorage, chain: Sequence[Checkpoint]
) -> list[tuple[Sequence[Checkpoint], int]]:
    """Read the runs ``chain`` was restored from, recursively: each origin chain once.

    Returns:
        Each origin chain with the seq its successor was restored from, oldest first.

    Raises:
        CheckpointCorruptError: an origin chain is corrupt, or the origins are cyclic.
        CheckpointNotFoundError: an origin checkpoint no longer exists.
    """
    prefixes: list[tuple[Sequence[Checkpoint], int]] = []
    origin = chain[0].origin_checkpoint_id if chain else None
    seen: set[str] = set()
    while origin is not None:
        if origin in seen or len(seen) >= _MAX_ORIGIN_DEPTH:
            raise CheckpointCorruptError(origin, "origin chain is cyclic or too deep")
        seen.add(origin)
        origin_chain, target = await load_target(storage, origin)
        prefixes.append((origin_chain, target.seq))
        origin = origin_chain[0].origin_checkpoint_id
    prefixes.reverse()
    return prefixes


def fold_history(
    origins: Sequence[tuple[Sequence[Checkpoint], int]], chain: Sequence[Checkpoint], upto: int
) -> History:
    """Gather the records and encoded answers of ``origins``, then of ``chain[: upto + 1]``.

    Reads nothing: ``origins`` is what :func:`read_origins` returned for ``chain``.

    Raises:
        CheckpointCorruptError: a record is malformed.
    """
    history = History()
    for prefix, last in (*origins, (chain, upto)):
        _fold(prefix, last, history)
    return history


async def collect_history(
    storage: CheckpointStorage, chain: Sequence[Checkpoint], upto: int
) -> History:
    """Gather the records and encoded answers of ``chain[: upto + 1]``, origins first.

    Raises:
        CheckpointCorruptError: a record is malformed, or an origin chain is cyclic.
        CheckpointNotFoundError: an origin checkpoint no longer exists.
    """
    return fold_history(await read_origins(storage, chain), chain, upto)


async def load_folded(storage: CheckpointStorage, run_id: str) -> tuple[list[Checkpoint], History]:
    """Read a run's whole chain and what it recorded, folding its step records as they are read.

    The chain is read as :func:`_records_as_read` reads it, so a resume of 100,000 steps keeps
    their records (packed, see :class:`~wfctl._records._recorded.RecordedCalls`), not their checkpoints.

    Returns:
        The chain without its ``step`` checkpoints but its head (root, resumes, pauses,
        endings: what the checks on answers and code read), and its history, origins first.

    Raises:
        RunNotFoundError: the run does not exist.
        CheckpointCorruptError: a record is corrupt, the chain is broken, or an origin chain is
            cyclic.
        CheckpointNotFoundError: an origin checkpoint no longer exists.
    """
    folding = _Folding(storage)
    resolver = Resolver(f"run {run_id}")
    records = _records_as_read(storage, run_id, resolver)
    async with contextlib.aclosing(records):
        async for checkpoint in records:
            await folding.add(checkpoint)
    outline, history = folding.result(run_id)
    history.held = resolver.held_records()  # none from a store that resolves on its own
    return outline, history


async def load_outline(storage: CheckpointStorage, run_id: str) -> list[Checkpoint]:
    """Read a run's whole chain, and return it without its ``step`` checkpoints but its head.

    What is known of a run before it is resumed (its root, the requests it paused on, its
    head), read as :func:`load_folded` reads it and in memory that does not grow with its
    steps.

    Raises:
        RunNotFoundError: the run does not exist.
        CheckpointCorruptError: a record is corrupt or the chain is broken.
    """
    outline = _Outline()
    records = _records_as_read(storage, run_id)
    async with contextlib.aclosing(records):
        async for checkpoint in records:
            outline.add(checkpoint)
    return outline.result(run_id)


async def _records_as_read(
    storage: CheckpointStorage, run_id: str, resolver: Resolver | None = None
) -> AsyncGenerator[Checkpoint, None]:
    """Yield a run's checkpoints in order, each verified, from any storage.

    A storage that streams (``stream_chain``, verified whole before the first record) never
    holds the decoded chain at once; nor does a database (its records a page at a time, each
    verified as read, see :func:`~wfctl._storage._capabilities.chain_records`). Others are
    read whole first. ``resolver``, if given, resolves the records of the first two, which
    the caller may then ask what it held.

    Raises:
        RunNotFoundError: the run does not exist.
        CheckpointCorruptError: a record is corrupt or the chain is broken.
    """
    stream = getattr(storage, "stream_chain", None)
    if stream is not None:
        given = {} if resolver is None else {"resolver": resolver}
        _, records = stream(validate_run_id(run_id), **given)
        try:
            for checkpoint in records:
                yield checkpoint
        finally:
            close = getattr(records, "close", None)  # a generator left part way
            if close is not None:
                close()
    elif isinstance(storage, PagedStore):  # a database: a page of records at a time
        paged = chain_records(storage, run_id, resolver)
        async with contextlib.aclosing(paged):
            async for checkpoint in paged:
                yield checkpoint
    else:
        for checkpoint in await load_chain(storage, run_id):
            yield checkpoint


async def load_source(
    storage: CheckpointStorage,
    checkpoint_id: str,
    observe: Callable[[StepRecord], None] | None = None,
) -> tuple[list[Checkpoint], Checkpoint, History, History]:
    """Read the run holding ``checkpoint_id`` as a replay needs it, folding it as it is read.

    The chain is read as :func:`_records_as_read` reads it, and nothing read is kept that
    grows with the run's length but what a restore from the target serves (its records,
    packed, see :class:`~wfctl._records._recorded.RecordedCalls`): no step checkpoint but the
    target and the head, no step record of the whole history.

    Args:
        observe: told each step record of the run's whole history, in order, origins first.

    Returns:
        The outline (the chain without its ``step`` checkpoints but the target and the head,
        in order), the target, the run's whole history without its records (its answers and
        failures) and its history up to the target, its records handed to ``calls``.

    Raises:
        InvalidIdError: the id is malformed.
        CheckpointNotFoundError: no such run or no such seq in it, or an origin checkpoint
            no longer exists.
        CheckpointCorruptError: a record is corrupt, the chain is broken, or an origin chain
            is cyclic.
    """
    run_id, seq = split_checkpoint_id(checkpoint_id)
    reading = _SourceReading(storage, seq, observe)
    records = _records_as_read(storage, run_id)
    try:
        async with contextlib.aclosing(records):
            async for checkpoint in records:
                if reading.outline.last is None:  # the root: what its origins recorded first
                    await reading.fold_origins(checkpoint)
                reading.add(checkpoint)
    except RunNotFoundError:
        raise CheckpointNotFoundError(checkpoint_id) from None
    return reading.result(checkpoint_id)


async def history_records(
    storage: CheckpointStorage, root: Checkpoint, last_seq: int
) -> AsyncGenerator[StepRecord, None]:
    """Yield the step records of the history of ``root``'s run up to ``last_seq``, in order,
    origins first: the records :func:`load_source` told its ``observe``, read again.

    Raises:
        RunNotFoundError: the run no longer exists.
        CheckpointCorruptError: a record is corrupt or the chain is broken.
        CheckpointNotFoundError: an origin checkpoint no longer exists.
    """
    for prefix, upto in await read_origins(storage, (root,)):
        for checkpoint in prefix[: upto + 1]:
            if checkpoint.kind == Kind.STEP:
                for record in StepPayload.of(checkpoint).steps:
                    yield record
    records = _records_as_read(storage, root.run_id)
    async with contextlib.aclosing(records):
        async for checkpoint in records:
            if checkpoint.seq > last_seq:  # appended since the replay read the run
                return
            if checkpoint.kind == Kind.STEP:
                for record in StepPayload.of(checkpoint).steps:
                    yield record


class _SourceReading:
    """A replay's source run folded as its records come (see :func:`load_source`)."""

    def __init__(
        self, storage: CheckpointStorage, seq: int, observe: Callable[[StepRecord], None] | None
    ) -> None:
        self.storage, self.seq, self.observe = storage, seq, observe
        self.history = History()
        self.known = History()
        self.counted = 0  # the records of the whole history folded so far
        self.target: Checkpoint | None = None
        self.outline = _Outline()

    async def fold_origins(self, root: Checkpoint) -> None:
        """Fold what the origins of the run whose root is ``root`` recorded, before its root."""
        for prefix, upto in await read_origins(self.storage, (root,)):
            for origin in prefix[: upto + 1]:
                self._fold(origin)

    def add(self, checkpoint: Checkpoint) -> None:
        """Fold the chain's next record (after the origins, at the root: :meth:`fold_origins`);
        at the target, note what the history holds so far."""
        self._fold(checkpoint)
        if checkpoint.seq == self.seq:
            self.target = checkpoint
            if checkpoint.kind == Kind.STEP:
                self.outline.kept.append(checkpoint)
            history, known = self.history, self.known
            known.responses = dict(history.responses)
            known.attempts = {key: list(tried) for key, tried in history.attempts.items()}
            known.started = dict(history.started)
            known.last_kind = history.last_kind
            known.failures = list(history.failures)
        self.outline.add(checkpoint)

    def _fold(self, checkpoint: Checkpoint) -> None:
        """Fold one record of the whole history; hand its step records on and let them go."""
        history = self.history
        records: Sequence[StepRecord]
        if checkpoint.kind is not Kind.STEP:
            _fold((checkpoint,), 0, history)
            records, history.records = history.records, []
        else:  # the most of a run's records: folded here, without ``_fold``'s loop
            payload = StepPayload.of(checkpoint)
            history.last_kind = Kind.STEP
            if not (payload.failures or payload.attempts or payload.started):
                records = payload.steps  # a step's record alone: nothing else to fold
            else:
                failed = len(history.failures)
                _fold_step(payload, history)
                if len(history.failures) > failed:  # counted from the records let go before
                    history.failures[failed:] = [
                        (before + self.counted, failure)
                        for before, failure in history.failures[failed:]
                    ]
                records, history.records = history.records, []
        self.counted += len(records)
        if self.target is None:  # up to the target: what the replay may be served
            add = self.known.calls.add
            for record in records:
                add(record)
        if self.observe is not None:
            for record in records:
                self.observe(record)

    def result(self, checkpoint_id: str) -> tuple[list[Checkpoint], Checkpoint, History, History]:
        """The outline, the target, the whole history and the history up to the target.

        Raises:
            CheckpointNotFoundError: no record came, or none at the target's seq.
        """
        if self.target is None:
            raise CheckpointNotFoundError(checkpoint_id)
        return self.outline.result(self.target.run_id), self.target, self.history, self.known


class _Outline:
    """A run's records that are not steps, and its head, kept as its chain is read."""

    def __init__(self) -> None:
        self.kept: list[Checkpoint] = []
        self.last: Checkpoint | None = None

    def add(self, checkpoint: Checkpoint) -> None:
        """Keep the chain's next record if it is not a step."""
        if checkpoint.kind != Kind.STEP:
            self.kept.append(checkpoint)
        self.last = checkpoint

    def result(self, run_id: str) -> list[Checkpoint]:
        """The records kept, and the head.

        Raises:
            RunNotFoundError: no record came.
        """
        if self.last is None:
            raise RunNotFoundError(run_id)
        if self.kept[-1] is not self.last:
            self.kept.append(self.last)  # a step record is the head of an interrupted run
        return self.kept


class _Folding:
    """A run's chain folded as its records come: the history they recorded, and its
    outline (:class:`_Outline`), which is what :func:`load_folded` returns."""

    def __init__(self, storage: CheckpointStorage) -> None:
        self.storage = storage
        self.history = History()
        self.outline = _Outline()

    async def add(self, checkpoint: Checkpoint) -> None:
        """Fold the chain's next record."""
        if self.outline.last is None:  # the root: what its origins recorded comes first
            for prefix, upto in await read_origins(self.storage, (checkpoint,)):
                _fold(prefix, upto, self.history)
        _fold((checkpoint,), 0, self.history)
        self.history.hand_records_to_calls()  # packed at once: see ``RecordedCalls``
        self.outline.add(checkpoint)

    def result(self, run_id: str) -> tuple[list[Checkpoint], History]:
        """The outline and the history.

        Raises:
            RunNotFoundError: no record came.
        """
        return self.outline.result(run_id), self.history


def encode_answers(
    responses: dict[str, Any], reason: str, *, signature: str | None = None
) -> ResumePayload:
    """Return the payload of a ``resume`` checkpoint recording ``responses``.

    ``signature`` is the new code signature, for a run allowed to go on with changed code.

    Raises:
        UnencodableValueError: an answer cannot be stored (naming its request id).
    """
    encoded = {}
    for key, value in responses.items():
        try:
            encoded[key] = encode(value)
        except UnencodableValueError as exc:
            raise exc.for_key(key) from None
    return ResumePayload(encoded, reason, signature)


def check_answers(
    run_id: str,
    chain: Sequence[Checkpoint],
    target: Checkpoint,
    responses: dict[str, Any],
    *,
    require: bool,
) -> None:
    """Refuse answers to requests nobody asked.

    From a pause checkpoint only its pending requests can be answered; from any other
    checkpoint, any request the run ever paused on (a replay may reach it again).

    Raises:
        RunStateError: an answer names no such request, or ``require`` is set and a pause with
            pending requests got no answer.
    """

    def asked(checkpoint: Checkpoint) -> list[str]:
        return [request.request_id for request in recorded_requests(checkpoint)]

    if target.kind == Kind.PAUSE:
        known = asked(target)
    else:
        known = sorted({key for c in chain for key in asked(c)})
    unknown = sorted(set(responses) - set(known))
    if unknown:
        raise RunStateError(
            run_id,
            f"responses for {', '.join(map(repr, unknown))} do not answer a pending "
            f"request; pending: {', '.join(known) or 'none'}",
        )
    if require and not responses and known:
        raise RunStateError(run_id, f"paused waiting for answers to: {', '.join(known)}")


def convert_answers(
    chain: Sequence[Checkpoint], target: Checkpoint, responses: dict[str, Any]
) -> dict[str, Any]:
    """Return ``responses`` converted to the types their requests declared, before recording.

    Each request's type name is read from ``target`` when it is a pause, else from the newest
    pause checkpoint of the run that asked it (as :func:`check_answers` looks requests up); it
    resolves only through builtin names and registered classes, never an import.

    Raises:
        AnswerTypeError: an answer does not fit its request's type (naming key, type, value).
    """
    types: dict[str, str | None] = {}
    for checkpoint in [*chain, target]:
        for request in recorded_requests(checkpoint):
            types[request.request_id] = request.response_type
    converted = {
        key: convert_answer(value, types.get(key), key) for key, value in responses.items()
    }
    for key, value in converted.items():
        if value is None:  # only where the type admits it (Optional, untyped): as upstream warns
            AF_LOGGER.warning(
                "Response for request_id=%r is None. If this is intentional, consider using a "
                "sentinel value instead.",
                key,
            )
    return converted


def drop_resent_answers(
    run_id: str,
    chain: Sequence[Checkpoint],
    target: Checkpoint,
    responses: dict[str, Any],
    recorded: dict[str, Any],
) -> dict[str, Any]:
    """Return ``responses`` without the answers the run recorded already and got again.

    agent-framework's loops send every answer so far on each turn: an answer equal (once
    converted to its request's type) to the one ``recorded`` (encoded, by request id) is
    accepted and not recorded twice; a different one is refused, before anything is written.

    Raises:
        RunStateError: an answer contradicts the one recorded for its request.
        AnswerTypeError: a resent answer does not fit its request's type.
    """
    resent = {key: value for key, value in responses.items() if key in recorded}
    for key, value in convert_answers(chain, target, resent).items():
        try:
            given = canonical_json(encode(value))
        except (UnencodableValueError, ValueError):
            given = repr(value)
        was = canonical_json(recorded[key])
        if given != was:
            raise RunStateError(
                run_id,
                f"request {key!r} was answered already with {_shorten(was)}; a different "
                f"answer ({_shorten(given)}) cannot replace it (send the same one, or none)",
            )
    return {key: value for key, value in responses.items() if key not in recorded}


def _shorten(text: str) -> str:
    return text if len(text) <= 60 else text[:57] + "..."
