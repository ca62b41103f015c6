"""The tagged JSON codec for checkpoint values (workflow inputs, step arguments and results).

:func:`encode` turns a Python value into plain JSON data (dicts with str keys, lists, str, int,
float, bool, None); :func:`decode` turns it back. Types JSON cannot say are wrapped in a tagged
object ``{"$t": tag, "v": ...}``: ``float`` (nan/inf), ``tuple``, ``set``, ``frozenset``,
``dict`` (non-str keys, or a ``"$t"`` key of its own), ``bytes``, ``datetime``, ``date``,
``time``, ``uuid``, ``decimal``, ``path``, and ``dataclass``/``model``/``object`` (with the
registered name in ``"n"``; an ``object`` is a class that stores itself as its own ``to_dict()``
and is rebuilt by its ``from_dict``, such as agent-framework's ``Message``).

Decoding never imports anything or runs code named by the data: a class is rebuilt only if it was
registered with :func:`register_type` under the name the data gives, or is one of
agent-framework's chat types and agent-framework is already loaded (``_known_types``).

Deliberate limits: types are matched exactly (``type(v) is str``), so subclasses such as
``StrEnum``/``IntEnum`` members are unencodable; ``bytearray`` decodes as ``bytes``; any
``PurePath`` decodes as a concrete :class:`~pathlib.Path`; a ``tzinfo`` decodes as its fixed
offset (sub-second offsets are refused); dataclass fields with ``init=False`` are not stored
(``__post_init__`` recomputes them); a value's encoding nests at most :data:`MAX_DEPTH` arrays
and objects deep, counted, so that what is stored and what is refused do not depend on the
interpreter's stack (Python 3.11 recursed about 490 levels deep here, 3.12 and later about 990).
"""

from __future__ import annotations

import base64
import dataclasses
import hashlib
import json
import math
from collections.abc import Callable, Sequence
from datetime import date, datetime, time
from decimal import Decimal
from pathlib import Path, PurePath
from typing import Any, Final, TypeVar
from uuid import UUID

import orjson

from wfctl._errors import CheckpointCorruptError, UnencodableValueError, UnregisteredTypeError

from ._checkpoint import FORMAT_VERSION
from ._known_types import loaded_class, loaded_name

__all__ = [
    "MAX_DEPTH",
    "EncodedCall",
    "canonical_json",
    "decode",
    "digest",
    "digest_and_size",
    "encode",
    "encode_call",
    "encoded_digest",
    "encoded_size",
    "register_type",
    "registered_class",
    "registered_name",
    "value_size",
]

#: How deep a value's encoding may nest, counting its arrays and objects (``[1]`` is 1): deeper
#: than any JSON reader must go (orjson's writer stops at 255), and with room on every
#: supported Python's stack for the readers that walk a record by recursion.
MAX_DEPTH: Final = 300

_T = TypeVar("_T", bound=type)
_V = TypeVar("_V")

#: Types stored as themselves; checked first so the common case costs one set lookup. ``int``
#: is not among them: one too long for JSON's decimal text (``sys.get_int_max_str_digits``)
#: is stored as hex, so only ``_enc_int`` may pass ints through.
_PLAIN: Final = frozenset({str, bool, type(None)})
#: Ints whose decimal text stays far below Python's default 4300-digit conversion limit.
_INT_LIMIT: Final = 1 << 13000
#: The ints orjson writes (64 bits, signed or not): as the standard library's JSON writes them.
_ORJSON_INTS: Final = range(-(1 << 63), 1 << 64)
#: JSON scalars, which decode as themselves.
_JSON_PLAIN: Final = frozenset({str, int, bool, float, type(None)})

_NON_FINITE: Final = {"nan": math.nan, "inf": math.inf, "-inf": -math.inf}

#: Registered classes: name -> (class, init field names, or None for a pydantic model).
_BY_NAME: dict[str, tuple[type, tuple[str, ...] | None]] = {}
#: The reverse map, looked up by exact type when encoding.
_BY_CLASS: dict[type, tuple[str, tuple[str, ...] | None]] = {}
#: Registered classes that store themselves (``to_dict``/``from_dict``): name -> class.
_OWN_BY_NAME: dict[str, type] = {}
#: The reverse map, looked up by exact type when encoding.
_OWN_BY_CLASS: dict[type, str] = {}


class _Unencodable(Exception):
    """Internal: a value has no encoding; carries the type name until the path is known."""


class _Corrupt(Exception):
    """Internal: data cannot be decoded; becomes CheckpointCorruptError with ``where``."""


class _Unregistered(_Corrupt):
    """Internal: data names a class that is not registered here; becomes
    UnregisteredTypeError with ``where``."""

    def __init__(self, kind: str, name: str) -> None:
        super().__init__(f"no {kind} class is registered as {name[:80]!r}")
        self.kind = kind
        self.name = name


class _TooDeep(_Unencodable):
    """Internal: a value's encoding would nest deeper than :data:`MAX_DEPTH` (or it is cyclic)."""


_TOO_DEEP: Final = f"nested more than {MAX_DEPTH} arrays and objects deep, or cyclic"


def register_type(cls: _T, name: str | None = None) -> _T:
    """Allow instances of a dataclass, a pydantic v2 model or a class that stores itself to be
    stored in checkpoints.

    Usable as a decorator. Registering again under the same name replaces the earlier class (a
    reloaded module redefines its classes), and the newest one is what decoding builds.

    Args:
        cls: A dataclass; a class with ``model_dump`` and ``model_validate`` (pydantic v2,
            detected without importing pydantic); or a class with ``to_dict()`` (returning a
            dict of storable values) and a class method ``from_dict(data)`` that rebuilds it.
        name: The name stored in the data; defaults to ``module.qualname``.

    Returns:
        ``cls`` itself.

    Raises:
        TypeError: ``cls`` is none of these.
    """
    fields: tuple[str, ...] | None
    is_model = all(callable(getattr(cls, a, None)) for a in ("model_dump", "model_validate"))
    stores_itself = all(callable(getattr(cls, a, None)) for a in ("to_dict", "from_dict"))
    if not isinstance(cls, type) or not (
        is_model or stores_itself or dataclasses.is_dataclass(cls)
    ):
        raise TypeError(
            "register_type needs a dataclass, a pydantic model or a class with to_dict and "
            f"from_dict, not {cls!r}"
        )
    name = name or f"{cls.__module__}.{cls.__qualname__}"
    if not is_model and not dataclasses.is_dataclass(cls):
        _BY_NAME.pop(name, None)
        _OWN_BY_NAME[name] = cls
        _OWN_BY_CLASS[cls] = name
        return cls
    if dataclasses.is_dataclass(cls):
        fields = tuple(f.name for f in dataclasses.fields(cls) if f.init)
    else:
        fields = None  # a pydantic model: stored through model_dump, rebuilt by model_validate
    _OWN_BY_NAME.pop(name, None)
    _BY_NAME[name] = (cls, fields)
    _BY_CLASS[cls] = (name, fields)
    return cls


def registered_name(cls: type) -> str | None:
    """Return the name ``cls`` is registered under, or None if it is not registered."""
    entry = _BY_CLASS.get(cls)
    return entry[0] if entry is not None else None


def registered_class(name: str) -> tuple[type, tuple[str, ...] | None] | None:
    """Return the class registered as ``name`` and its init fields (None for a pydantic model).

    Only the registry is consulted: nothing is imported.
    """
    return _BY_NAME.get(name)


def encode(value: object) -> Any:
    """Encode ``value`` as JSON-able data that :func:`decode` turns back into an equal value.

    Args:
        value: Any combination of the supported types (see the module docstring).

    Returns:
        Fresh JSON-able data sharing no mutable object with ``value``.

    Raises:
        UnencodableValueError: Some part of ``value`` has no encoding, is nested too deeply or
            is cyclic; ``path`` locates it (``$.a[1]``).
    """
    if type(value) in _PLAIN:
        return value
    if type(value) is int and -_INT_LIMIT < value < _INT_LIMIT:
        return value
    try:
        return _enc(value, 1)
    except _Unencodable as exc:
        # The fast pass keeps no path; walk again only now that something failed.
        if isinstance(exc, _TooDeep):
            raise UnencodableValueError(_type_name(type(value)), f"$ ({_TOO_DEEP})") from None
        raise UnencodableValueError(str(exc), _locate(value, "$", 1)) from None


def decode(data: Any, where: str = "checkpoint") -> Any:
    """Decode data produced by :func:`encode` (typically after a JSON round trip).

    Args:
        data: JSON-able data.
        where: Names the file and record in the error message.

    Returns:
        The decoded value.

    Raises:
        CheckpointCorruptError: ``data`` is not a valid encoding (unknown tag, wrong shape,
            unregistered class, bad base64 or date, nested too deeply, ...).
    """
    try:
        return _dec(data, 1)
    except _Unregistered as exc:
        raise UnregisteredTypeError(where, exc.kind, exc.name) from None
    except _Corrupt as exc:
        raise CheckpointCorruptError(where, str(exc)) from None


def canonical_json(value: Any) -> str:
    """Return the canonical JSON text of already-encoded data (sorted keys, no spaces, UTF-8).

    Raises:
        ValueError: ``value`` holds a non-finite float (encoded data never does).
    """
    return json.dumps(
        value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False
    )


#: A call's arguments as encoded data: (positional, keyword), or None when they cannot be.
EncodedCall = tuple[list[Any], dict[str, Any]] | None


def encode_call(args: tuple[Any, ...], kwargs: dict[str, Any]) -> EncodedCall:
    """Encode a call's arguments once, for its digest and for its record.

    Returns ``(positional, keyword)`` as :func:`encode` gives them, or None if some argument
    has no encoding (the call is then matched by position alone).
    """
    if not kwargs and _scalars(args):
        return list(args), {}  # the common call: such scalars are their own encoding
    try:
        return encode(list(args)), encode(kwargs)
    except UnencodableValueError:
        return None


def digest(
    args: tuple[Any, ...], kwargs: dict[str, Any], version: int = FORMAT_VERSION
) -> str | None:
    """Return a digest of a call's arguments that is stable across processes.

    str-keyed dicts are order-insensitive and sets are canonically ordered; other dicts keep
    their insertion order (which the calling code fixes, so it is stable too).

    Returns:
        16 hex characters (8 bytes of the hash that records of format ``version`` hold), or
        None if the arguments cannot be encoded.
    """
    return encoded_digest(encode_call(args, kwargs), version)


def encoded_digest(call: EncodedCall, version: int = FORMAT_VERSION) -> str | None:
    """Return the digest of arguments :func:`encode_call` encoded (None stays None)."""
    return digest_and_size(call, version)[0]


def digest_and_size(call: EncodedCall, version: int = FORMAT_VERSION) -> tuple[str | None, int]:
    """Return :func:`encoded_digest` of a call and the bytes of the JSON it hashed.

    The hash is the one the step records of format ``version`` hold: BLAKE3 from version 2,
    blake2b in version 1 (8 bytes of either, as 16 hex characters). A run keeps its root's
    format version, so the digests of its calls and of its records always agree. The size
    comes free with the digest: it weighs the call's ``step_started`` event (see
    ``RunOptions.event_history_bytes``). Unencodable arguments give ``(None, 0)``.
    """
    if call is None:
        return None, 0
    positional, keyword = call
    data: bytes | None = None
    if not keyword and _scalars(positional):
        # The common call (strings, 64-bit ints, bools and None only): orjson writes such a
        # list byte for byte as canonical_json does (same escapes, UTF-8, decimal ints), 40x
        # faster on a big argument. It refuses a lone surrogate, which the general path below
        # encodes.
        try:
            data = orjson.dumps([positional, {}])
        except TypeError:
            data = None
    if data is None:
        try:
            text = canonical_json([positional, keyword])
        except ValueError:
            return None, 0
        # surrogatepass: a str with a lone surrogate is a legal value and must still hash.
        data = text.encode("utf-8", "surrogatepass")
    if version >= 2:
        return (_blake3 or _load_blake3())(data).hexdigest(8), len(data)
    return hashlib.blake2b(data, digest_size=8).hexdigest(), len(data)


def _scalars(args: Sequence[Any]) -> bool:
    """Whether every argument is a str, an int of 64 bits, a bool or None.

    Those are their own encoding (:func:`encode` returns them as they are), and orjson writes
    them as :func:`canonical_json` does.
    """
    for a in args:
        t = type(a)
        if t is str or t is bool or a is None or (t is int and a in _ORJSON_INTS):
            continue
        return False
    return True


#: ``blake3.blake3``, imported by the first digest (not at import: start-up time).
_blake3: Callable[[bytes], Any] | None = None


def _load_blake3() -> Callable[[bytes], Any]:
    global _blake3
    from blake3 import blake3

    _blake3 = blake3
    return blake3


def encoded_size(data: Any) -> int:
    """Return about how many bytes encoded data (:func:`encode`'s output) takes as JSON.

    A string counts its length and a scalar nothing (an event's history is bounded by the big
    values it holds, see ``RunOptions.event_history_bytes``); a list or dict the length of its
    compact JSON, or 0 if orjson refuses it (an int beyond 64 bits, a lone surrogate).
    """
    if type(data) is str:
        return len(data)
    if type(data) is list or type(data) is dict:
        try:
            return len(orjson.dumps(data))
        except TypeError:
            return 0
    return 0


def value_size(value: object) -> int:
    """Return :func:`encoded_size` of a value not yet encoded (0 if it has no encoding)."""
    try:
        return encoded_size(encode(value))
    except UnencodableValueError:
        return 0


# --- encoding ------------------------------------------------------------------------------


def _type_name(t: type) -> str:
    return t.__qualname__ if t.__module__ == "builtins" else f"{t.__module__}.{t.__qualname__}"


def _enc(v: Any, depth: int) -> Any:
    """Encode ``v``, whose encoding (if a container) sits ``depth`` arrays and objects deep."""
    t = type(v)
    if t in _PLAIN:
        return v
    # Loops, not comprehensions: on Python 3.11 a comprehension that reads ``depth`` is a
    # closure made at each call, and these loops cost fewer instructions than the closure-free
    # comprehensions did
    # (docs/decisions/0127-depth-limits-are-counted-never-left-to-the.md).
    if t is list:
        if depth > MAX_DEPTH:
            raise _TooDeep(_TOO_DEEP)
        depth += 1
        items = []
        for x in v:
            items.append(x if type(x) in _PLAIN else _enc(x, depth))
        return items
    if t is dict:
        if depth > MAX_DEPTH:
            raise _TooDeep(_TOO_DEEP)
        if all(type(k) is str for k in v) and "$t" not in v:
            depth += 1
            encoded = {}
            for k, x in v.items():
                encoded[k] = x if type(x) in _PLAIN else _enc(x, depth)
            return encoded
        _within(depth + 2)  # {"$t": "dict", "v": [[key, value], ...]}
        inner = depth + 3
        return {"$t": "dict", "v": [[_enc(k, inner), _enc(x, inner)] for k, x in v.items()]}
    encoder = _ENCODERS.get(t)
    if encoder is not None:
        return encoder(v, depth)
    entry = _BY_CLASS.get(t)
    if entry is not None:
        name, fields = entry
        _within(depth + 1)
        if fields is None:
            return {"$t": "model", "n": name, "v": _enc(_dump(v), depth + 1)}
        inner = depth + 2
        return {"$t": "dataclass", "n": name, "v": {f: _enc(getattr(v, f), inner) for f in fields}}
    own = _OWN_BY_CLASS.get(t) or _register_loaded(t)
    if own is not None:
        _within(depth + 1)
        return {"$t": "object", "n": own, "v": _enc(_own_dict(v), depth + 1)}
    if isinstance(v, PurePath):
        return _tagged("path", str(v), depth)
    raise _Unencodable(_type_name(t))


def _register_loaded(t: type) -> str | None:
    """Register ``t`` if it is one of agent-framework's chat types (met for the first time)."""
    name = loaded_name(t)
    if name is not None:
        register_type(t, name)
    return name


def _own_dict(v: Any) -> dict[Any, Any]:
    """What a class that stores itself gives as its data: its ``to_dict()``, a dict."""
    try:
        data = v.to_dict()
    except Exception as exc:
        # A value's own method may raise anything: the value then has no encoding.
        raise _Unencodable(f"{_type_name(type(v))} (to_dict raised {type(exc).__name__})") from None
    if type(data) is not dict:
        raise _Unencodable(f"{_type_name(type(v))} (to_dict gave {_type_name(type(data))})")
    return data


def _within(depth: int) -> None:
    """Refuse an encoding that would nest a container ``depth`` deep, beyond :data:`MAX_DEPTH`."""
    if depth > MAX_DEPTH:
        raise _TooDeep(_TOO_DEEP)


def _tagged(tag: str, text: str, depth: int) -> dict[str, str]:
    """``{"$t": tag, "v": text}``, an object ``depth`` deep."""
    _within(depth)
    return {"$t": tag, "v": text}


def _enc_items(v: Any, tag: str, depth: int) -> Any:
    """``{"$t": tag, "v": [item, ...]}`` at ``depth``: its list one deeper, the items two."""
    _within(depth + 1)
    return {"$t": tag, "v": [_enc(x, depth + 2) for x in v]}


def _dump(model: Any) -> Any:
    # by_alias: model_validate expects aliases by default; round_trip: for Json[T] fields.
    return model.model_dump(mode="python", by_alias=True, round_trip=True)


def _enc_int(v: int, depth: int) -> Any:
    if -_INT_LIMIT < v < _INT_LIMIT:
        return v
    return _tagged("int", hex(v), depth)  # hex has no digit limit, unlike str(v) and JSON


def _enc_float(v: float, depth: int) -> Any:
    if math.isfinite(v):
        return v
    return _tagged("float", "nan" if v != v else ("inf" if v > 0 else "-inf"), depth)


def _enc_set(v: set[Any] | frozenset[Any], depth: int) -> Any:
    encoded = _enc_items(v, "set" if type(v) is set else "frozenset", depth)
    # Iteration order of a set of str depends on hash randomization; sort for stable digests.
    encoded["v"].sort(key=canonical_json)
    return encoded


def _enc_moment(v: datetime | time, depth: int) -> Any:
    offset = v.utcoffset()
    # CPython 3.11 reads "+00:00:00.000001" back as UTC: refuse rather than store it wrong.
    if offset is not None and offset.microseconds:
        raise _Unencodable(f"{_type_name(type(v))} with a sub-second UTC offset")
    return _tagged(type(v).__name__, v.isoformat(), depth)  # exact types: "datetime" or "time"


def _enc_bytes(v: bytes | bytearray, depth: int) -> Any:
    return _tagged("bytes", base64.b64encode(v).decode("ascii"), depth)


#: Encoders by exact type, each given the value and the depth its encoding sits at.
_ENCODERS: Final[dict[type, Callable[[Any, int], Any]]] = {
    int: _enc_int,
    float: _enc_float,
    tuple: lambda v, depth: _enc_items(v, "tuple", depth),
    set: _enc_set,
    frozenset: _enc_set,
    bytes: _enc_bytes,
    bytearray: _enc_bytes,
    datetime: _enc_moment,
    time: _enc_moment,
    date: lambda v, depth: _tagged("date", v.isoformat(), depth),
    UUID: lambda v, depth: _tagged("uuid", str(v), depth),
    Decimal: lambda v, depth: _tagged("decimal", str(v), depth),
}


def _children(v: Any) -> list[tuple[str, Any]]:
    """List ``(path segment, child)`` for a container :func:`_enc` recurses into."""
    t = type(v)
    if t is list or t is tuple:
        return [(f"[{i}]", x) for i, x in enumerate(v)]
    if t is set or t is frozenset:
        return [(".<member>", x) for x in v]
    if t is dict:
        if all(type(k) is str for k in v) and "$t" not in v:
            return [
                (f".{k}" if k.isidentifier() else f"[{json.dumps(k, ensure_ascii=False)}]", x)
                for k, x in v.items()
            ]
        return [pair for k, x in v.items() for pair in ((".<key>", k), (f"[{k!r}]", x))]
    entry = _BY_CLASS.get(t)
    if entry is None:
        if _OWN_BY_CLASS.get(t) is None:
            return []
        try:
            return _children(_own_dict(v))
        except _Unencodable:
            return []  # its to_dict fails: the value itself is what has no encoding
    if entry[1] is None:
        return _children(_dump(v))
    return [(f".{f}", getattr(v, f)) for f in entry[1]]


def _locate(v: Any, path: str, depth: int) -> str:
    """Return the path of the first part of ``v`` (at ``depth``) that fails to encode.

    Called only once :func:`_enc` refused ``v`` for a type it has no encoding for, so the walk
    stays within :data:`MAX_DEPTH` (a child's depth is counted as a list's: the exact depth
    does not matter here, only which child fails).
    """
    for segment, child in _children(v):
        try:
            _enc(child, depth + 1)
        except _TooDeep:
            continue
        except _Unencodable:
            return _locate(child, path + segment, depth + 1)
    return path


# --- decoding ------------------------------------------------------------------------------


def _dec(d: Any, depth: int) -> Any:
    """Decode ``d``, which (if a container) sits ``depth`` arrays and objects deep."""
    t = type(d)
    if t in _JSON_PLAIN:
        return d
    if t is list:  # loops, not comprehensions, and the depth checked inline: as in _enc
        if depth > MAX_DEPTH:
            _nested_within(depth)
        depth += 1
        items = []
        for x in d:
            items.append(x if type(x) in _JSON_PLAIN else _dec(x, depth))
        return items
    if t is dict:
        if depth > MAX_DEPTH:
            _nested_within(depth)
        if "$t" in d:
            return _dec_tagged(d, depth)
        depth += 1
        decoded = {}
        for k, x in d.items():
            decoded[k] = x if type(x) in _JSON_PLAIN else _dec(x, depth)
        return decoded
    raise _Corrupt(f"not JSON data: {_type_name(t)}")


def _nested_within(depth: int) -> None:
    """Refuse data nested deeper than wfctl writes (:data:`MAX_DEPTH`), on every Python alike."""
    if depth > MAX_DEPTH:
        raise _Corrupt(f"value nested more than {MAX_DEPTH} arrays and objects deep")


def _dec_tagged(d: dict[str, Any], depth: int) -> Any:
    tag = d["$t"]
    registered = tag in ("dataclass", "model", "object")
    if type(tag) is not str or (tag not in _DECODERS and not registered):
        raise _Corrupt(f"unknown type tag {repr(tag)[:80]}")
    if d.keys() != ({"$t", "n", "v"} if registered else {"$t", "v"}):
        raise _Corrupt(f"bad shape for tag {tag!r}: keys {sorted(map(str, d))!r:.80}")
    try:
        if registered:
            return _dec_registered(tag, d["n"], d["v"], depth + 1)
        return _DECODERS[tag](d["v"], depth + 1)
    except _Corrupt:
        raise
    except Exception as exc:
        # Decoders call constructors, user __init__/__hash__ and pydantic validators, which
        # may raise anything; all of it means the data cannot be trusted.
        raise _Corrupt(f"bad {tag} value: {type(exc).__name__}: {exc}") from None


def _dec_registered(tag: str, name: Any, v: Any, depth: int) -> Any:
    if tag == "object":
        return _dec_own(name, v, depth)
    entry = _BY_NAME.get(name) if type(name) is str else None
    if entry is None and type(name) is str:
        raise _Unregistered("pydantic model" if tag == "model" else tag, name)
    if entry is None or (entry[1] is None) != (tag == "model"):
        raise _Corrupt(f"no {tag} class is registered as {repr(name)[:80]}")
    cls, fields = entry
    if fields is None:
        return cls.model_validate(_dec(v, depth))  # type: ignore[attr-defined]  # duck-typed model
    _nested_within(depth)
    return cls(**{k: _dec(x, depth + 1) for k, x in _expect(v, dict).items()})


def _dec_own(name: Any, v: Any, depth: int) -> Any:
    """Rebuild a class that stores itself, by its ``from_dict``, from the data ``v`` gives."""
    if type(name) is not str:
        raise _Corrupt(f"no object class is registered as {repr(name)[:80]}")
    cls = _OWN_BY_NAME.get(name)
    if cls is None:
        cls = loaded_class(name)  # agent-framework's, if the program loaded it: never imported
        if cls is None:
            raise _Unregistered("class", name)
        register_type(cls, name)
    return cls.from_dict(_dec(_expect(v, dict), depth))  # type: ignore[attr-defined]  # duck-typed


def _expect(v: Any, kind: type[_V]) -> _V:
    if type(v) is not kind:
        raise _Corrupt(f"expected {kind.__name__}, got {_type_name(type(v))}")
    return v


def _items(v: Any, depth: int) -> list[Any]:
    """The items of a tagged value's list ``v``, which sits ``depth`` deep."""
    _nested_within(depth)
    return [_dec(x, depth + 1) for x in _expect(v, list)]


def _dec_pairs(v: Any, depth: int) -> dict[Any, Any]:
    pairs = _items(v, depth)
    if not all(type(p) is list and len(p) == 2 for p in pairs):
        raise _Corrupt("dict entries must be [key, value] pairs")
    return dict(pairs)


#: Decoders by tag, each given the tagged object's ``"v"`` and the depth that sits at.
_DECODERS: Final[dict[str, Callable[[Any, int], Any]]] = {
    "float": lambda v, depth: _NON_FINITE[v],  # KeyError (or TypeError) for anything else
    "int": lambda v, depth: int(_expect(v, str), 16),
    "tuple": lambda v, depth: tuple(_items(v, depth)),
    "set": lambda v, depth: set(_items(v, depth)),
    "frozenset": lambda v, depth: frozenset(_items(v, depth)),
    "dict": _dec_pairs,
    "bytes": lambda v, depth: base64.b64decode(_expect(v, str), validate=True),
    "datetime": lambda v, depth: datetime.fromisoformat(_expect(v, str)),
    "date": lambda v, depth: date.fromisoformat(_expect(v, str)),
    "time": lambda v, depth: time.fromisoformat(_expect(v, str)),
    "uuid": lambda v, depth: UUID(_expect(v, str)),
    "decimal": lambda v, depth: Decimal(_expect(v, str)),
    "path": lambda v, depth: Path(_expect(v, str)),
}
