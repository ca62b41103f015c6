"""A step's argument stored once: as a reference to an earlier step's result that equals it.

A pipeline hands each step's result to the next step, so the same value would be stored twice:
as a result, and again as the next call's argument. From format version 3, an argument (a
positional one, or a keyword's value) equal to the result of a step committed in one of the
:data:`WINDOW` records before is stored as ``{"$t": "ref", "v": [seq, key]}``: the result of
the step recorded under ``key`` in record ``seq``. Only the writer makes them (the codec
escapes any ``"$t"`` key a value has of its own), only arguments hold them, and only records
already durable are referred to, so a reference never names what a crash could have lost.

Arguments are what people read (``log -v``, ``show``, ``export``): the engine matches a call by
its digest and serves the recorded result, never the recorded arguments. So references are
kept as stored, and resolved where arguments are shown: :class:`Resolver` over a run's records
in order, holding the step results of the last :data:`WINDOW` records only. A reference to a
record or key that is not there is corruption (:class:`~wfctl._errors.CheckpointCorruptError`).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any, Final, cast

import orjson

from wfctl._errors import CheckpointCorruptError

from ._checkpoint import LEAN_VERSION, Checkpoint, Kind, checkpoint_of

__all__ = [
    "HELD_MAX",
    "REF_FROM",
    "WINDOW",
    "Referrer",
    "Resolver",
    "holds_refs",
    "ref_target",
    "resolved",
]

#: A value shorter than this (characters of a str, bytes of any other value's JSON) is stored
#: as it is: a reference is about 30 bytes, and holding and looking up each step's value costs
#: the writer about 2 us a step (6% of a small sequential step's instructions at 64).
REF_FROM: Final = 256
#: How many records back a reference may reach: what a reader holds to resolve them (the step
#: results of that many records, so a record of 1 MB results costs a reader 8 MB at most). A
#: pipeline refers one record back; steps gathered together, to one record.
WINDOW: Final = 8

#: The most the writer holds of the results it may refer to (characters of a str, bytes of any
#: other value's JSON), the newest record's results aside: a pipeline of 20 MB texts held 16 of
#: them (a run's peak RSS 405 MB, 207 MB before references); now it holds the last one.
HELD_MAX: Final = 32 * 1024 * 1024

_TAG: Final = "$t"
_STEP: Final = Kind.STEP
#: How many results the writer holds before it lets go of those out of the window.
_SWEEP_AT: Final = 2 * WINDOW
_REF: Final = "ref"


def ref_target(value: object) -> tuple[int, str] | None:
    """Return ``(seq, key)`` if ``value`` is a stored reference, else None."""
    if type(value) is dict and value.get(_TAG) == _REF and len(value) == 2:
        target = value.get("v")
        if (
            type(target) is list
            and len(target) == 2
            and type(target[0]) is int
            and type(target[1]) is str
        ):
            return target[0], target[1]
    return None


def _fingerprint(value: object) -> str | bytes | None:
    """What two equal values share and a dict can hold, or None for a value too small to refer
    to. A str is its own; any other value its JSON (equal JSON, equal value)."""
    kind = type(value)
    if kind is str:
        text = cast(str, value)
        return text if len(text) >= REF_FROM else None
    if kind is dict or kind is list:
        try:
            encoded = orjson.dumps(value)
        except TypeError:
            return None
        return encoded if len(encoded) >= REF_FROM else None
    return None


class Referrer:
    """The writer's side: which results of the last :data:`WINDOW` durable records may be
    referred to, and the arguments of a new step record replaced by references to them.

    Bounded: it holds the results of the last :data:`WINDOW` records (and of at most
    :data:`WINDOW` more between two sweeps), each looked up in O(1), and of those, beyond
    the newest record's holding one, no more than :data:`HELD_MAX` in size: the oldest go
    first. Letting one go only means an argument equal to it is stored whole.
    """

    def __init__(self) -> None:
        #: A result's fingerprint -> (the seq of its record, its step's key, its size).
        self._by_value: dict[object, tuple[int, str, int]] = {}
        self._held = 0  # the sizes of the results held, summed

    @property
    def holding(self) -> bool:
        """Whether any result is held (else no argument can be referred)."""
        return bool(self._by_value)

    def refer(self, data: dict[str, Any], seq: int) -> None:
        """Replace, in the ``data`` of step record ``seq``, each argument equal to a result
        held by a reference to it (each changed argument list is a new list)."""
        if not self._by_value:
            return
        oldest = seq - WINDOW
        for entry in data.get("steps", ()):
            args = entry.get("args")
            if args:
                changed = self._replaced(args, oldest)
                if changed is not None:
                    entry["args"] = changed
            kwargs = entry.get("kwargs")
            if kwargs:
                replaced = self._replaced(list(kwargs.values()), oldest)
                if replaced is not None:
                    entry["kwargs"] = dict(zip(kwargs, replaced, strict=True))

    def _replaced(self, values: list[Any], oldest: int) -> list[Any] | None:
        out: list[Any] | None = None
        by_value = self._by_value
        for index, value in enumerate(values):
            if type(value) is str:  # the common value, without a call
                if len(value) < REF_FROM:
                    continue
                found = by_value.get(value)
            else:
                fingerprint = _fingerprint(value)
                found = None if fingerprint is None else by_value.get(fingerprint)
            if found is not None and found[0] > oldest:
                if out is None:
                    out = list(values)
                out[index] = {_TAG: _REF, "v": [found[0], found[1]]}
        return out

    def note(self, checkpoint: Checkpoint) -> None:
        """Hold the step results of ``checkpoint``, now durable; let go of those more than
        :data:`WINDOW` records older (now and then: a lookup checks the distance anyway), and
        of the oldest beyond :data:`HELD_MAX`."""
        if checkpoint.kind is not _STEP or checkpoint.version < LEAN_VERSION:
            return
        seq = checkpoint.seq
        by_value = self._by_value
        for entry in checkpoint.data.get("steps", ()):
            result = entry.get("result")
            if type(result) is str:  # the common value, without a call
                if len(result) < REF_FROM:
                    continue
                self._hold(result, len(result), seq, entry["key"])
            elif (fingerprint := _fingerprint(result)) is not None:
                self._hold(fingerprint, len(fingerprint), seq, entry["key"])
        if len(by_value) > _SWEEP_AT:
            self._let_go(seq - WINDOW)
        if self._held > HELD_MAX:
            self._shed()

    def _hold(self, fingerprint: object, size: int, seq: int, key: str) -> None:
        before = self._by_value.get(fingerprint)
        self._held += size - (0 if before is None else before[2])
        self._by_value[fingerprint] = (seq, key, size)

    def _let_go(self, oldest: int) -> None:
        """Let go of the results of record ``oldest`` and of those before it."""
        by_value = self._by_value
        for fingerprint in [key for key, (at, _, _) in by_value.items() if at <= oldest]:
            self._held -= by_value.pop(fingerprint)[2]

    def _shed(self) -> None:
        """Let go of the oldest results held until those held are within :data:`HELD_MAX`,
        the newest record's aside (of the records holding one)."""
        seqs = sorted({at for at, _, _ in self._by_value.values()})
        for oldest in seqs[:-1]:
            self._let_go(oldest)
            if self._held <= HELD_MAX:
                return


class Resolver:
    """The reader's side: a run's records read in order, the references in their step
    arguments replaced by the values they name.

    Holds the step results of the last :data:`WINDOW` records it was shown.
    """

    def __init__(self, where: str, *, partial: bool = False) -> None:
        self._where = where
        #: Whether the records before the first one shown may be missing (``log --follow``
        #: from the middle of a run): a reference to one then stays as stored, and is shown
        #: as what it names (``wfctl._readable``), not refused.
        self._partial = partial
        self._first: int | None = None
        self._results: dict[int, dict[str, Any]] = {}

    def resolve(self, checkpoint: Checkpoint, where: str | None = None) -> Checkpoint:
        """Return ``checkpoint`` with every reference in its step arguments resolved (itself
        if it holds none), and hold its step results for the records after it. ``where``
        names the record in an error (by default, the reader's source and the checkpoint).

        Raises:
            CheckpointCorruptError: a reference names a record or step result that is not
                among the :data:`WINDOW` records before it.
        """
        if self._first is None:
            self._first = checkpoint.seq
        if checkpoint.kind != Kind.STEP:
            return checkpoint
        steps = checkpoint.data.get("steps")
        if not isinstance(steps, list):
            return checkpoint
        out = checkpoint
        if any(_holds_ref(entry) for entry in steps):
            if where is None:
                where = f"{self._where}: checkpoint {checkpoint.checkpoint_id}"
            steps = [self._resolved_entry(entry, checkpoint.seq, where) for entry in steps]
            out = _with_data(checkpoint, {**checkpoint.data, "steps": steps})
        self._hold(checkpoint.seq, steps)
        return out

    def hold(self, checkpoint: Checkpoint) -> None:
        """Hold the step results of ``checkpoint``, a record read only for what the records
        after it may refer to (one of those before a page or a record shown alone).

        Its own arguments are not resolved: they may refer to a record before those read,
        which nothing shown needs, and a step result is never a reference.
        """
        if self._first is None or checkpoint.seq < self._first:
            self._first = checkpoint.seq
        steps = checkpoint.data.get("steps") if checkpoint.kind == Kind.STEP else None
        if isinstance(steps, list):
            self._hold(checkpoint.seq, steps)

    def _hold(self, seq: int, steps: list[Any]) -> None:
        self._results[seq] = {
            entry["key"]: entry.get("result")
            for entry in steps
            if isinstance(entry, dict) and isinstance(entry.get("key"), str)
        }
        while len(self._results) > WINDOW:  # the oldest first (records may come late: see
            del self._results[min(self._results)]  # decode_chain's records before a page)

    def _resolved_entry(self, entry: Any, seq: int, where: str) -> Any:
        if not _holds_ref(entry):
            return entry
        entry = dict(entry)
        args = entry.get("args")
        if isinstance(args, list):
            entry["args"] = [self._value(value, seq, where) for value in args]
        kwargs = entry.get("kwargs")
        if isinstance(kwargs, dict):
            entry["kwargs"] = {name: self._value(v, seq, where) for name, v in kwargs.items()}
        return entry

    def _value(self, value: Any, seq: int, where: str) -> Any:
        target = ref_target(value)
        if target is None:
            return value
        at, key = target
        results = self._results.get(at) if seq - WINDOW < at < seq else None
        if results is None or key not in results:
            if self._partial and self._first is not None and at < self._first:
                return value
            raise CheckpointCorruptError(
                where,
                f"an argument refers to the result of step {key!r} in checkpoint seq {at}, "
                "which is not among the records before it",
            )
        return results[key]


def holds_refs(checkpoint: Checkpoint) -> bool:
    """Whether ``checkpoint``'s step arguments hold a reference (unresolved, as stored)."""
    steps = checkpoint.data.get("steps") if checkpoint.kind == Kind.STEP else None
    return isinstance(steps, list) and any(_holds_ref(entry) for entry in steps)


def _holds_ref(entry: Any) -> bool:
    if not isinstance(entry, dict):
        return False
    args, kwargs = entry.get("args"), entry.get("kwargs")
    return (isinstance(args, list) and any(ref_target(value) for value in args)) or (
        isinstance(kwargs, dict) and any(ref_target(value) for value in kwargs.values())
    )


def _with_data(checkpoint: Checkpoint, data: dict[str, Any]) -> Checkpoint:
    return checkpoint_of(
        checkpoint.run_id,
        checkpoint.seq,
        checkpoint.kind,
        checkpoint.workflow_name,
        checkpoint.timestamp,
        checkpoint.previous_checkpoint_id,
        checkpoint.origin_run_id,
        checkpoint.origin_checkpoint_id,
        data,
        checkpoint.version,
    )


def resolved(checkpoints: Iterable[Checkpoint], where: str) -> Iterator[Checkpoint]:
    """Yield a run's records, read in order from its root (or from :data:`WINDOW` records before
    the first one wanted), with the references in their step arguments resolved (see
    :class:`Resolver`).

    Raises:
        CheckpointCorruptError: as :meth:`Resolver.resolve`.
    """
    resolver = Resolver(where)
    for checkpoint in checkpoints:
        yield resolver.resolve(checkpoint)
