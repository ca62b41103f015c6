"""Recorded step results, and the matching rule that serves them on restore.

A recorded result is served to a call only if it was recorded for the same step, in the same
scope, with the same explicit key (if any) and the same argument digest; among several such
records, in the order they were recorded. A call that finds no such record while records of
that step with other digests are still unconsumed in its scope may be a divergence: serving any
of them would hand a result to a different logical call, so none is ever served. Whether it is
one is the run's decision (see ``Run.call_step``).
"""

from __future__ import annotations

import json
import marshal
from collections import deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, Final

from wfctl._errors import CheckpointCorruptError
from wfctl._frozen import slot_setters

from ._codec import EncodedCall

__all__ = ["ARGS_OPTED_OUT", "ARGS_UNENCODABLE", "Divergence", "RecordedCalls", "StepRecord"]

#: ``args_omitted`` of a call whose step was declared ``@step(record_args=False)``.
ARGS_OPTED_OUT = "opt_out"
#: ``args_omitted`` of a call whose arguments have no encoding (it is matched by position).
ARGS_UNENCODABLE = "unencodable"


@dataclass(frozen=True, slots=True)
class StepRecord:
    """One committed step invocation: its identity and its encoded result.

    ``effects`` holds what the step did to the run besides returning (state it set, outputs it
    yielded), so serving the record from the cache replays them too. ``args`` and ``kwargs`` are
    the encoded arguments the call received (``kwargs`` None when there were none); when they
    were not stored, ``args`` is None and ``args_omitted`` says why (:data:`ARGS_OPTED_OUT`,
    :data:`ARGS_UNENCODABLE`, or None for a record written before arguments were stored).
    ``replaced``: the call ran live in a restored run while records of its step with other
    digests were still unclaimed in its scope, and the run has not settled that yet (it does
    when its body completes: a divergence). A run resumed past the call serves it this record
    and settles it then, so a pause or a crash between the call and the body's end cannot
    make the divergence go away.
    """

    key: str
    scope: str
    name: str
    digest: str | None
    result: Any
    explicit: str | None = None
    duration: float = 0.0
    effects: dict[str, Any] | None = None
    args: list[Any] | None = None
    kwargs: dict[str, Any] | None = None
    args_omitted: str | None = None
    replaced: bool = False

    def to_json(self) -> dict[str, Any]:
        """Return the record as stored inside a ``step`` checkpoint.

        ``scope`` and ``name`` are stored only when the key does not already say them (an
        explicit key may contain anything, so it always carries both).
        """
        key = self.key
        out: dict[str, Any] = {"key": key}
        scope, _, last = key.rpartition("/")  # (``_split_key``, inline: once per step)
        if self.explicit is not None or scope != self.scope or last.partition("#")[0] != self.name:
            out["scope"] = self.scope
            out["name"] = self.name
        out["digest"] = self.digest
        if self.args is not None:
            out["args"] = self.args
            if self.kwargs:
                out["kwargs"] = self.kwargs
        elif self.args_omitted is not None:
            out["args_omitted"] = self.args_omitted
        out["result"] = self.result
        out["dt"] = round(self.duration, 6)
        if self.explicit is not None:
            out["explicit"] = self.explicit
        if self.effects:
            out["effects"] = self.effects
        if self.replaced:
            out["replaced"] = True
        return out

    @classmethod
    def from_json(cls, raw: Any, where: str) -> StepRecord:
        """Parse a stored step record.

        Raises:
            CheckpointCorruptError: a field is missing or of the wrong type.
        """
        if not isinstance(raw, dict):
            raise CheckpointCorruptError(where, "step record is not an object")
        key, digest = raw.get("key"), raw.get("digest")
        explicit, effects = raw.get("explicit"), raw.get("effects")
        scope: Any = None
        name: Any = None
        if isinstance(key, str) and "scope" not in raw and "name" not in raw:
            scope, name = _split_key(key)
        else:
            scope, name = raw.get("scope"), raw.get("name")
        if not (isinstance(key, str) and isinstance(scope, str) and isinstance(name, str)):
            raise CheckpointCorruptError(where, "step record without key, scope or name")
        if digest is not None and not isinstance(digest, str):
            raise CheckpointCorruptError(where, f"step {key}: invalid digest")
        if explicit is not None and not isinstance(explicit, str):
            raise CheckpointCorruptError(where, f"step {key}: invalid explicit key")
        if effects is not None and not (
            isinstance(effects, dict)
            and isinstance(effects.get("state", {}), dict)
            and isinstance(effects.get("outputs", []), list)
        ):  # served, a record's effects set the run's state and yield its outputs again
            raise CheckpointCorruptError(where, f"step {key}: invalid effects")
        if "result" not in raw:
            raise CheckpointCorruptError(where, f"step {key}: no result")
        duration = raw.get("dt", 0.0)
        if not isinstance(duration, int | float):
            raise CheckpointCorruptError(where, f"step {key}: invalid timing")
        # Arguments are shown, never served: a malformed field reads as not recorded.
        args, kwargs, omitted = raw.get("args"), raw.get("kwargs"), raw.get("args_omitted")
        return step_record_of(
            key,
            scope,
            name,
            digest,
            raw["result"],
            explicit,
            duration,
            effects,
            args if isinstance(args, list) else None,
            kwargs if isinstance(kwargs, dict) and isinstance(args, list) else None,
            omitted if isinstance(omitted, str) else None,
            raw.get("replaced") is True,
        )

    def describe_args(self) -> str:
        """Return the call's arguments as one line of compact JSON, or why they are not stored."""
        if self.args is None:
            return _NOT_RECORDED.get(self.args_omitted or "", "not recorded")
        return args_text(self.args, self.kwargs)


(
    _SET_KEY,
    _SET_SCOPE,
    _SET_NAME,
    _SET_DIGEST,
    _SET_RESULT,
    _SET_EXPLICIT,
    _SET_DURATION,
    _SET_EFFECTS,
    _SET_ARGS,
    _SET_KWARGS,
    _SET_ARGS_OMITTED,
    _SET_REPLACED,
) = slot_setters(
    StepRecord,
    *("key", "scope", "name", "digest", "result", "explicit", "duration", "effects"),
    *("args", "kwargs", "args_omitted", "replaced"),
)
_new = object.__new__


def step_record_of(
    key: str,
    scope: str,
    name: str,
    digest: str | None,
    result: Any,
    explicit: str | None,
    duration: float,
    effects: dict[str, Any] | None,
    args: list[Any] | None,
    kwargs: dict[str, Any] | None,
    args_omitted: str | None,
    replaced: bool = False,
) -> StepRecord:
    """Return ``StepRecord(...)`` of these fields, filled in slot by slot (at half the cost:
    the engine makes one per executed step, a read one per recorded step)."""
    record: StepRecord = _new(StepRecord)
    _SET_KEY(record, key)
    _SET_SCOPE(record, scope)
    _SET_NAME(record, name)
    _SET_DIGEST(record, digest)
    _SET_RESULT(record, result)
    _SET_EXPLICIT(record, explicit)
    _SET_DURATION(record, duration)
    _SET_EFFECTS(record, effects)
    _SET_ARGS(record, args)
    _SET_KWARGS(record, kwargs)
    _SET_ARGS_OMITTED(record, args_omitted)
    _SET_REPLACED(record, replaced)
    return record


_NOT_RECORDED = {
    ARGS_OPTED_OUT: "not recorded (record_args=False)",
    ARGS_UNENCODABLE: "not recorded (no encoding)",
    "": "not recorded (written before arguments were stored)",
}


#: How much of a call's arguments a divergence's message shows, in characters.
_SHOWN: Final = 200


def args_text(args: list[Any], kwargs: dict[str, Any] | None, limit: int = _SHOWN) -> str:
    """Return encoded call arguments as compact JSON (``(a, b, k=v)`` style), cut to ``limit``."""
    parts = [json.dumps(a, ensure_ascii=False) for a in args]
    parts += [f"{k}={json.dumps(v, ensure_ascii=False)}" for k, v in (kwargs or {}).items()]
    text = "(" + ", ".join(parts) + ")"
    return text if len(text) <= limit else text[: limit - 4] + "...)"


def record_args_of(
    call: EncodedCall,
) -> tuple[list[Any] | None, dict[str, Any] | None, str | None]:
    """Return the record's view of arguments :func:`~wfctl._records._codec.encode_call` encoded.

    Arguments without an encoding are not an error (the call is matched by position alone):
    they are left out and marked :data:`ARGS_UNENCODABLE`.
    """
    if call is None:
        return None, None, ARGS_UNENCODABLE
    positional, keyword = call
    return positional, keyword or None, None


def _split_key(key: str) -> tuple[str, str]:
    """Return the (scope, step name) a counted key ``<scope>/<name>#<n>`` names."""
    scope, _, last = key.rpartition("/")
    return scope, last.partition("#")[0]


@dataclass(frozen=True, slots=True)
class Divergence:
    """No record matches a call, but its step has unconsumed records with other digests."""

    recorded_digests: list[str | None]
    recorded_keys: list[str]
    #: What each of those recorded calls received (:meth:`StepRecord.describe_args`).
    recorded_args: list[str]


#: A step in a scope, and whether its calls are keyed explicitly: (scope, name, explicit).
_Step = tuple[str, str, str | None]
#: A record held until served: its fields but the four its bucket says (see ``_pack``).
_Packed = bytes
_Held = _Packed | StepRecord


def _pack(record: StepRecord) -> _Held:
    """Return ``record`` as one bytes object, or the record itself if it cannot be packed.

    A record of a 100-character result is about 590 bytes of Python objects held as read (the
    record, its key, result, arguments, digest, timing, its bucket) and about 256 packed. ``marshal`` packs exactly what the
    codec encodes (JSON's types, integers of any size, any string), in C, and is only ever
    fed bytes this module made in this process: nothing read from a store is unmarshalled.
    """
    args, kwargs = record.args, record.kwargs
    try:
        return marshal.dumps(
            (
                record.key,
                record.result,
                record.duration,
                record.effects,
                None if args is None else [_as_shown(value) for value in args],
                kwargs and {name: _as_shown(value) for name, value in kwargs.items()},
                record.args_omitted,
                record.replaced,
            )
        )
    except ValueError:  # a value of a type marshal does not know: held as it is
        return record


def _as_shown(value: Any) -> Any:
    """An argument of a record held until served, as much of it as its only reader shows: a
    divergence's message (:meth:`StepRecord.describe_args`, :data:`_SHOWN` characters at
    most). A pipeline's record would otherwise hold the text it was handed beside the text it
    returned, which is served: twice a replay's memory."""
    return value[:_SHOWN] if type(value) is str and len(value) > _SHOWN else value


def _unpack(held: _Held, step: _Step, digest: str | None) -> StepRecord:
    """Return the record ``_pack`` made ``held`` of, in the bucket of ``step`` and ``digest``."""
    if isinstance(held, StepRecord):  # a record that could not be packed
        return held
    key, result, duration, effects, args, kwargs, omitted, replaced = marshal.loads(held)
    scope, name, explicit = step
    return step_record_of(
        key,
        scope,
        name,
        digest,
        result,
        explicit,
        duration,
        effects,
        args,
        kwargs,
        omitted,
        replaced,
    )


def _at_position(held: _Held | deque[_Held], key: str) -> _Held | deque[_Held] | None:
    """Return the records without a digest held for the call at ``key``, if one is there."""
    if not isinstance(held, deque):
        return held if _key_of(held) == key else None
    return held if any(_key_of(h) == key for h in held) else None


def _key_of(held: _Held) -> str:
    """Return the key of a held record (without unpacking the rest when it can)."""
    if isinstance(held, StepRecord):  # a record that could not be packed
        return held.key
    key: str = marshal.loads(held)[0]
    return key


class RecordedCalls:
    """The results a restored run may serve, consumed as calls claim them.

    Records are held packed (``_pack``) until a call claims one: a resume of 100,000 cached
    steps holds them all at once, at about a third of their unpacked size. They are kept by
    step (scope, name, explicit) and then by digest, so that no tuple is made per record. A
    digest's entry is its one record itself, and a deque only when identical calls recorded
    several (a deque costs ~600 bytes). An entry is dropped once consumed.
    """

    __slots__ = ("_buckets", "_feed", "_unconsumed")

    def __init__(self, records: Iterable[StepRecord] = ()) -> None:
        self._buckets: dict[_Step, dict[str | None, _Held | deque[_Held]]] = {}
        self._unconsumed: dict[tuple[str, str], int] = {}
        #: Adds the next records read, False once none is left (see :meth:`feed_from`).
        self._feed: Callable[[], bool] | None = None
        for record in records:
            self.add(record)

    def __len__(self) -> int:
        self._read_all()
        return sum(self._unconsumed.values())

    def feed_from(self, feed: Callable[[], bool]) -> None:
        """Have the records added as calls need them: each call of ``feed`` adds the next ones
        read, and returns False once every record was added.

        A call is decided as if every record had been added before the first call: it is
        served from its own record (the one of its key and digest) as soon as that record was
        added, and anything else is decided once all were (:meth:`take`). What ``feed``
        raises, every call that must read on raises.
        """
        self._feed = feed

    def add(self, record: StepRecord) -> None:
        """Make ``record`` available, after every record already added for the same call."""
        step = (record.scope, record.name, record.explicit)
        digests = self._buckets.get(step)
        if digests is None:
            digests = self._buckets[step] = {}
        packed = _pack(record)
        held = digests.get(record.digest)
        if held is None:
            digests[record.digest] = packed
        elif isinstance(held, deque):
            held.append(packed)
        else:
            digests[record.digest] = deque((held, packed))
        counted = (record.scope, record.name)
        self._unconsumed[counted] = self._unconsumed.get(counted, 0) + 1

    def take(
        self, scope: str, name: str, explicit: str | None, digest: str | None, key: str = ""
    ) -> StepRecord | Divergence | None:
        """Claim the record for a call.

        Among several records for the same call (same step, scope and digest), the one
        recorded under the call's own key is preferred, then the oldest. A record whose
        arguments had no encoding (no digest) is matched by position alone: it serves the call
        at its key that no record's digest matches, even one whose arguments have an encoding
        now (a class registered since, such as agent-framework's ``Message``).

        Returns:
            The oldest matching record (now consumed); a :class:`Divergence` if the step has
            unconsumed records in this scope but none for this call; None if the step has no
            unconsumed records here (the call is new and runs live).
        """
        if self._feed is not None:
            self._read_for((scope, name, explicit), digest, key)
        if not self._buckets:
            return None  # nothing left to serve (a fresh run): every call is new
        step = (scope, name, explicit)
        digests = self._buckets.get(step)
        held = digests.get(digest) if digests is not None else None
        if held is None and digest is not None and digests is not None and None in digests:
            held = _at_position(digests[None], key)
            digest = None if held is not None else digest
        if digests is not None and held is not None:
            if not isinstance(held, deque):
                packed = held
                del digests[digest]
            else:
                if len(held) == 1 or _key_of(held[0]) == key:
                    packed = held.popleft()
                else:
                    packed = next((h for h in held if _key_of(h) == key), held[0])
                    held.remove(packed)
                if not held:
                    del digests[digest]
            if not digests:
                del self._buckets[step]
            self._unconsumed[(scope, name)] -= 1
            return _unpack(packed, step, digest)
        if not self._unconsumed.get((scope, name)):
            return None
        others = self.unconsumed(scope, name, explicit)
        if not others:
            # Only calls of another kind (counted vs. explicit key) remain: this call is new.
            return None
        return Divergence(
            [r.digest for r in others], [r.key for r in others], [r.describe_args() for r in others]
        )

    def unconsumed(self, scope: str, name: str, explicit: str | None) -> list[StepRecord]:
        """Return the records of a step in a scope (of the same key kind) not yet claimed."""
        self._read_all()
        if not self._unconsumed.get((scope, name)):
            return []
        step = (scope, name, explicit)
        return [
            _unpack(packed, step, digest)
            for digest, held in self._buckets.get(step, {}).items()
            for packed in (held if isinstance(held, deque) else (held,))
        ]

    def _read_for(self, step: _Step, digest: str | None, key: str) -> None:
        """Have records added until the call's own record is (its key's, with its digest), or
        every record is: whichever record :meth:`take` then picks, it picks with all added.

        Among the records of a call, :meth:`take` prefers the call's own; any other pick (an
        older identical call's record, one matched by position, a divergence, a new call)
        depends on records not added yet, so it waits for all of them.
        """
        feed = self._feed
        while feed is not None and not self._holds_own(step, digest, key):
            if not feed():
                self._feed = feed = None

    def _holds_own(self, step: _Step, digest: str | None, key: str) -> bool:
        held = self._buckets.get(step, {}).get(digest)
        if held is None:
            return False
        if isinstance(held, deque):
            return any(_key_of(h) == key for h in held)
        return _key_of(held) == key

    def _read_all(self) -> None:
        feed = self._feed
        while feed is not None:
            if not feed():
                self._feed = feed = None
