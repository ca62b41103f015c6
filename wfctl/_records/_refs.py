"""A step's argument stored once: as a reference to an earlier step's result that equals it.

A pipeline hands each step's result to the next step, so the same value would be stored twice:
as a result, and again as the next call's argument. From format version 3, an argument (a
positional one, or a keyword's value) equal to the result of a step committed in one of the
:data:`WINDOW` records before is stored as ``{"$t": "ref", "v": [seq, key]}``: the result of
the step recorded under ``key`` in record ``seq``. Only the writer makes them (the codec
escapes any ``"$t"`` key a value has of its own), only arguments hold them, and only records
already durable are referred to, so a reference never names what a crash could have lost.

From format version 4 a step's ``str`` result of :data:`DELTA_FROM` characters or more, whose
call took earlier results as arguments (references), may be stored as its change from them:
``{"$t": "zd", "v": [[seq, key], ...], "z": "<base64 zstd frame>"}``, the frame made with those
results' text as its dictionary (``_packing.pack_against``). A pipeline step that returns its
argument with a sentence changed then stores about a hundred bytes, not its whole text. The
writer only does so while every record that result needs to be read lies within the
:data:`WINDOW` records before it (each record's *base*), so a record and the :data:`WINDOW`
lines before it always suffice, and every :data:`WINDOW` records or so one is stored whole.

Arguments are what people read (``log -v``, ``show``, ``export``): the engine matches a call by
its digest and serves the recorded result, never the recorded arguments. So references are
kept as stored, and resolved where arguments are shown: :class:`Resolver` over a run's records
in order, holding the step results of the last :data:`WINDOW` records only. Results are served,
so every read the engine takes them from resolves them the same way. A reference to a record or
key that is not there is corruption (:class:`~wfctl._errors.CheckpointCorruptError`).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any, Final, cast

import orjson

from wfctl._errors import CheckpointCorruptError

from ._checkpoint import LEAN_VERSION, Checkpoint, Kind, checkpoint_of
from ._packing import PACK_FROM, pack_against, unpack

__all__ = [
    "DELTA_FROM",
    "HELD_MAX",
    "READ_BACK",
    "REF_FROM",
    "WINDOW",
    "Referrer",
    "Resolver",
    "UnreadableSourceError",
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

#: How many records before a record a reader keeps to read that record alone (``show``, a page
#: of ``log``). :data:`WINDOW` suffice for what the writer stores now, and are read first:
#: everything a record needs, through the results it refers to, lies within the window before
#: it. A version 4 run written before the writer checked that for references could refer to a
#: result stored as its change from results up to ``2 * WINDOW - 2`` records before the record
#: that refers to it: such a record is read again from all of them.
READ_BACK: Final = 2 * WINDOW

#: A str result shorter than this is stored as it is: what a change would save is eaten by its
#: framing, and each would cost ~35 us to make.
DELTA_FROM: Final = PACK_FROM

_TAG: Final = "$t"
_STEP: Final = Kind.STEP
#: How many results the writer holds before it lets go of those out of the window.
_SWEEP_AT: Final = 2 * WINDOW
_REF: Final = "ref"
_DELTA: Final = "zd"
#: The tags the writer puts in a step's arguments or result (the codec escapes a value's own).
_OURS: Final = (_REF, _DELTA)


def ref_target(value: object) -> tuple[int, str] | None:
    """Return ``(seq, key)`` if ``value`` is a stored reference, else None."""
    if type(value) is dict and value.get(_TAG) == _REF and len(value) == 2:
        return _seq_key(value.get("v"))
    return None


def _seq_key(target: object) -> tuple[int, str] | None:
    """``(seq, key)`` if ``target`` is the ``[seq, key]`` a reference or a change names."""
    if type(target) is list and len(target) == 2:
        seq, key = target
        if type(seq) is int and type(key) is str:
            return seq, key
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

    def __init__(self, *, deltas: bool = False) -> None:
        #: Whether a str result may be stored as its change from the arguments it refers to
        #: (format version 4 on).
        self._deltas = deltas
        #: A result's fingerprint -> (the seq of its record, its step's key, its size).
        self._by_value: dict[object, tuple[int, str, int]] = {}
        self._held = 0  # the sizes of the results held, summed
        #: The base of each record held that stores a result as a change: the oldest record
        #: that must be read to read it (any other record's base is itself).
        self._bases: dict[int, int] = {}
        #: The record being written: its seq, its base, and the results it stores as changes.
        self._pending: tuple[int, int, dict[str, str]] | None = None

    @property
    def holding(self) -> bool:
        """Whether any result is held (else no argument can be referred)."""
        return bool(self._by_value)

    def refer(self, data: dict[str, Any], seq: int) -> None:
        """Replace, in the ``data`` of step record ``seq``, each argument equal to a result
        held by a reference to it (each changed argument list is a new list)."""
        self._pending = None
        if not self._by_value:
            return
        oldest = seq - WINDOW
        for entry in data.get("steps", ()):
            texts: list[tuple[int, str, str]] = []  # the str arguments referred to
            args = entry.get("args")
            if args:
                changed = self._replaced(args, oldest, texts)
                if changed is not None:
                    entry["args"] = changed
            kwargs = entry.get("kwargs")
            if kwargs:
                replaced = self._replaced(list(kwargs.values()), oldest, texts)
                if replaced is not None:
                    entry["kwargs"] = dict(zip(kwargs, replaced, strict=True))
            if texts and self._deltas:
                self._as_change(entry, texts, seq)

    def _replaced(
        self, values: list[Any], oldest: int, texts: list[tuple[int, str, str]]
    ) -> list[Any] | None:
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
            # Referred to only within the window, and only if what its record needs to be
            # read (its base) lies in the WINDOW lines before this record, which a reader of
            # this record alone reads.
            if (
                found is not None
                and found[0] > oldest
                and self._bases.get(found[0], found[0]) >= oldest
            ):
                if out is None:
                    out = list(values)
                out[index] = {_TAG: _REF, "v": [found[0], found[1]]}
                if type(value) is str:
                    texts.append((found[0], found[1], value))
        return out

    def _as_change(
        self, entry: dict[str, Any], texts: list[tuple[int, str, str]], seq: int
    ) -> None:
        """Store ``entry``'s result as its change from ``texts`` (the str arguments it refers
        to) when it is a long str, every record needed to read it is within the window, and
        the change is smaller."""
        result = entry.get("result")
        if type(result) is not str or len(result) < DELTA_FROM:
            return
        bases = self._bases
        base = min(bases.get(at, at) for at, _, _ in texts)
        if base <= seq - WINDOW:  # a reader of this record and the window could not read it
            return
        try:
            dictionary = "".join(text for _, _, text in texts).encode()
            packed = pack_against(result.encode(), dictionary)
        except UnicodeEncodeError:  # a lone surrogate: stored as it is, exactly
            return
        if packed is None:
            return
        entry["result"] = {
            _TAG: _DELTA,
            "v": [[at, key] for at, key, _ in texts],
            "z": packed.decode(),
        }
        pending = self._pending
        if pending is None or pending[0] != seq:
            pending = self._pending = (seq, base, {})
        elif base < pending[1]:
            pending = self._pending = (seq, base, pending[2])
        pending[2][entry["key"]] = result

    def note(self, checkpoint: Checkpoint) -> None:
        """Hold the step results of ``checkpoint``, now durable; let go of those more than
        :data:`WINDOW` records older (now and then: a lookup checks the distance anyway), and
        of the oldest beyond :data:`HELD_MAX`."""
        if checkpoint.kind is not _STEP or checkpoint.version < LEAN_VERSION:
            return
        seq = checkpoint.seq
        pending, self._pending = self._pending, None
        changed: dict[str, str] = {}
        if pending is not None and pending[0] == seq:
            self._bases[seq] = pending[1]
            changed = pending[2]
        self._hold_results(seq, checkpoint.data.get("steps", ()), changed)

    def hold_read(self, held: Iterable[tuple[int, int, list[Any]]]) -> None:
        """Hold the step results of records read back from the store, which a run resumed
        after them may refer to as it would to those it wrote: each one's seq, base and step
        entries (resolved), oldest first (``Resolver.held_records``).

        They are durable as any record the writer notes: read from the store, before this
        writer appends after them.
        """
        for seq, base, entries in held:
            if base != seq:
                self._bases[seq] = base
            steps = [e for e in entries if type(e) is dict and type(e.get("key")) is str]
            self._hold_results(seq, steps, {})

    def _hold_results(self, seq: int, entries: Iterable[Any], changed: dict[str, str]) -> None:
        by_value = self._by_value
        for entry in entries:
            result = entry.get("result")
            if changed and entry["key"] in changed:
                result = changed[entry["key"]]  # stored as its change: held as it is
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
        for at in [at for at in self._bases if at <= oldest]:
            del self._bases[at]

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
        #: The step entries of the last :data:`WINDOW` records, by seq (looked up by key only
        #: when a reference names one: a record holds a step or a few).
        self._results: dict[int, list[Any]] = {}
        #: The seqs of the records read that hold no step results (a root, a pause), newest
        #: last: with those of ``_results``, the records read within the window.
        self._others: list[int] = []
        #: The base of each record resolved that stores a result as a change (as the writer's
        #: ``Referrer._bases``): the oldest record that must be read to read its results. Only
        #: ``held_records`` reads it, after a read in order from the root (a resume's).
        self._bases: dict[int, int] = {}
        #: The highest seq held, and whether every record was held after those before it.
        self._newest = -1
        self._in_order = True

    def resolve(self, checkpoint: Checkpoint, where: str | None = None) -> Checkpoint:
        """Return ``checkpoint`` with every reference in its step arguments resolved (itself
        if it holds none), and hold its step results for the records after it. ``where``
        names the record in an error (by default, the reader's source and the checkpoint).

        Raises:
            CheckpointCorruptError: a reference names a record or step result that is not
                among the :data:`WINDOW` records before it.
        """
        seq = checkpoint.seq
        if self._first is None:
            self._first = seq
        if checkpoint.kind is not _STEP:
            self._read_other(seq)
            return checkpoint
        steps = checkpoint.data.get("steps")
        if type(steps) is not list:
            self._read_other(seq)
            return checkpoint
        for entry in steps:  # read for every record: a loop, not a generator
            if _holds_ref(entry):
                break
        else:
            self._hold(seq, steps)
            return checkpoint
        if where is None:
            where = f"{self._where}: checkpoint {checkpoint.checkpoint_id}"
        stored, steps = steps, [self._resolved_entry(entry, seq, where) for entry in steps]
        self._hold(seq, steps)
        self._note_base(seq, stored)
        return _with_data(checkpoint, {**checkpoint.data, "steps": steps})

    def held_records(self) -> list[tuple[int, int, list[Any]]]:
        """The records held, oldest first: each one's seq, base (its seq if it stores no
        change) and step entries, resolved. What a run resumed after them may refer to
        (``Referrer.hold_read``)."""
        bases = self._bases
        return [(seq, bases.get(seq, seq), self._results[seq]) for seq in sorted(self._results)]

    def _note_base(self, seq: int, stored: list[Any]) -> None:
        """Note the base of record ``seq``, whose step entries (as stored) were held."""
        base = seq
        bases = self._bases
        for entry in stored:
            sources = _change_of(entry.get("result")) if type(entry) is dict else None
            for at, _ in sources or ():
                base = min(base, bases.get(at, at))
        if base != seq:
            bases[seq] = base

    def hold(self, checkpoint: Checkpoint, where: str | None = None) -> None:
        """Hold the step results of ``checkpoint``, a record read only for what the records
        after it may refer to (one of those before a page or a record shown alone). ``where``
        names it in an error (by default, the reader's source and the checkpoint).

        Its own arguments are not resolved: they may refer to a record before those read,
        which nothing shown needs. Nor is a result stored as its change from one of those:
        the records held are the :data:`WINDOW` (or :data:`READ_BACK`) before the first
        shown, which hold all it needs (see there), so nothing shown needs it either (and a record that did would find
        it missing, and say so). Held in order, oldest first.
        """
        if self._first is None or checkpoint.seq < self._first:
            self._first = checkpoint.seq
        steps = checkpoint.data.get("steps") if checkpoint.kind == Kind.STEP else None
        if not isinstance(steps, list):
            self._read_other(checkpoint.seq)
            return
        held = []
        for entry in steps:
            if isinstance(entry, dict) and _change_of(entry.get("result")) is not None:
                if where is None:
                    where = f"{self._where}: checkpoint {checkpoint.checkpoint_id}"
                try:
                    entry = {
                        **entry,
                        "result": self._unchanged(entry["result"], checkpoint.seq, where),
                    }
                except (_Missing, UnreadableSourceError):
                    continue
            held.append(entry)
        self._hold(checkpoint.seq, held)

    def _hold(self, seq: int, steps: list[Any]) -> None:
        results = self._results
        if seq <= self._newest:
            self._in_order = False
        else:
            self._newest = seq
        results[seq] = steps
        if len(results) > WINDOW:
            # Let go of those out of the reach of record ``seq`` and every record after it. Not
            # simply the oldest: the records before a page come late (see decode_chain), after
            # the page's first records, and each needs the WINDOW before it, not those after.
            # Held in order (a run read from its root), the first held is the oldest.
            oldest = seq - WINDOW
            pick = _first_key if self._in_order else min
            while (first := pick(results)) <= oldest:
                del results[first]
                self._bases.pop(first, None)

    def _read_other(self, seq: int) -> None:
        others = self._others
        others.append(seq)
        if len(others) > WINDOW:
            del others[0]

    def _unread(self, at: int, seq: int) -> bool:
        """Whether record ``at``, within the window before record ``seq`` and after the first
        record read, was not read (it failed, or is missing)."""
        first = self._first
        return (
            first is not None
            and first <= at
            and seq - WINDOW < at < seq
            and at not in self._results
            and at not in self._others
        )

    def _held(self, at: int, key: str, seq: int) -> tuple[bool, Any]:
        """``(True, the result of step key in record at)`` if held and within the window before
        record ``seq``, else ``(False, None)``."""
        if seq - WINDOW < at < seq:
            for entry in self._results.get(at, ()):
                if type(entry) is dict and entry.get("key") == key:
                    return True, entry.get("result")
        return False, None

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
        result = entry.get("result")
        if _change_of(result) is not None:
            try:
                entry["result"] = self._unchanged(result, seq, where)
            except _Missing as missing:
                skipped = self._first is not None and missing.at < self._first
                if not (self._partial and (skipped or missing.unreadable)):
                    raise CheckpointCorruptError(where, str(missing)) from None
        return entry

    def _unchanged(self, value: dict[str, Any], seq: int, where: str) -> str:
        """The str result ``value`` stores as its change from earlier results.

        Raises:
            _Missing: a result it was made from is not held.
            CheckpointCorruptError: the change is damaged, or names what is not a text.
        """
        sources = _change_of(value)
        if not sources:
            raise CheckpointCorruptError(where, "a result stored as a change names no result")
        texts = []
        for at, key in sources:
            found, text = self._held(at, key, seq)
            if not found:
                if self._unread(at, seq) and not self._partial:
                    raise UnreadableSourceError(where, at, key)
                raise _Missing(at, key)
            if _change_of(text) is not None:  # left as stored (``partial``): unreadable too
                raise _Missing(at, key, unreadable=True)
            if type(text) is not str:
                raise CheckpointCorruptError(
                    where, f"a result is stored as a change from step {key!r}'s, not a text"
                )
            texts.append(text)
        try:
            dictionary = "".join(texts).encode()
            return unpack(value["z"], where, dictionary).decode()
        except (UnicodeEncodeError, UnicodeDecodeError):
            raise CheckpointCorruptError(where, "a result stored as a change is not text") from None

    def _value(self, value: Any, seq: int, where: str) -> Any:
        target = ref_target(value)
        if target is None:
            if type(value) is dict and value.get(_TAG) in _OURS:  # only the writer tags so
                what = "a malformed reference" if value[_TAG] == _REF else "a change"
                raise CheckpointCorruptError(where, f"an argument holds {what}")
            return value
        at, key = target
        found, result = self._held(at, key, seq)
        if not found:
            if self._partial and self._first is not None and at < self._first:
                return value
            if self._unread(at, seq):
                raise UnreadableSourceError(where, at, key)
            raise CheckpointCorruptError(
                where,
                f"an argument refers to the result of step {key!r} in checkpoint seq {at}, "
                "which is not among the records before it",
            )
        return result


class UnreadableSourceError(CheckpointCorruptError):
    """A record refers to (or is stored as a change from) a result of a record within the window
    that was not read: that record failed (or is missing), and is a problem of its own.

    A reader that names every bad record (``verify-lineage``) keeps the record that refers to
    it as stored, not blaming it too; any other reader fails, as at the record before.
    """

    def __init__(self, where: str, at: int, key: str) -> None:
        super().__init__(
            where,
            f"it refers to the result of step {key!r} in checkpoint seq {at}, which could not "
            "be read",
        )


class _Missing(Exception):
    """A result stored as a change was made from a result that is not held."""

    def __init__(self, at: int, key: str, *, unreadable: bool = False) -> None:
        super().__init__(
            f"a result is stored as its change from the result of step {key!r} in "
            f"checkpoint seq {at}, which is not among the records before it"
        )
        self.at = at
        #: The result is held, itself a change from one that is not (``partial`` only).
        self.unreadable = unreadable


def _change_of(value: object) -> list[tuple[int, str]] | None:
    """The ``(seq, key)`` of the results ``value`` is stored as a change from, if it is one
    (``[]`` for one that names them wrongly), else None."""
    if type(value) is not dict or value.get(_TAG) != _DELTA:
        return None
    sources, packed = value.get("v"), value.get("z")
    if len(value) != 3 or type(sources) is not list or type(packed) is not str:
        return []
    out = []
    for source in sources:
        named = _seq_key(source)
        if named is None:
            return []
        out.append(named)
    return out


def _first_key(held: dict[int, list[Any]]) -> int:
    first: int = next(iter(held))
    return first


def holds_refs(checkpoint: Checkpoint) -> bool:
    """Whether ``checkpoint``'s steps hold a reference or a result stored as a change
    (unresolved, as stored)."""
    steps = checkpoint.data.get("steps") if checkpoint.kind == Kind.STEP else None
    return isinstance(steps, list) and any(_holds_ref(entry) for entry in steps)


def _holds_ref(entry: Any) -> bool:
    # Read for every record a run's readers see: plain loops, a call only for a dict.
    if type(entry) is not dict:
        return False
    result = entry.get("result")
    if type(result) is dict and result.get(_TAG) == _DELTA:
        return True
    args = entry.get("args")
    if type(args) is list:
        for value in args:
            if type(value) is dict and value.get(_TAG) in _OURS:
                return True
    kwargs = entry.get("kwargs")
    if type(kwargs) is dict:
        for value in kwargs.values():
            if type(value) is dict and value.get(_TAG) in _OURS:
                return True
    return False


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
