"""LangGraph's stored values decoded into plain JSON descriptions, never into objects.

LangGraph's serializer stores a value as ``(type, bytes)``: ``msgpack`` (with extension types
naming a module, a class and its arguments), ``json``, ``null``, ``bytes``/``bytearray``, and
``pickle`` when its pickle fallback is on. Its own decoder imports the module an extension names
and calls the constructor, and unpickles a pickle row: running code the store chooses. Here an
extension becomes a description of what it names, ``{"$type": "module.Name", "$args": ...}``
(with ``"$method"`` for a method call, ``"$pydantic"`` for a model's fields), a numpy array
``{"$opaque": "numpy", ...}`` with its dtype, shape and size, a DeltaChannel snapshot
``{"$delta_snapshot": ...}``, an unknown code ``{"$opaque": "ext", "code": N, "bytes": N}``; a
pickle (or any type this module does not know) ``{"$opaque": TYPE, "bytes": N}``: nothing is
imported, constructed or unpickled. Bytes that are not msgpack give
``{"$undecodable": "msgpack", "bytes": N, "problem": ...}``: a problem, not an exception.
"""

from __future__ import annotations

import json
from typing import Any

import msgpack  # type: ignore[import-untyped]  # the package ships no type information

__all__ = [
    "UNDECODABLE",
    "channel_bytes",
    "decode_msgpack",
    "decode_typed",
    "outline",
    "problems_in",
]

#: The key of the marker a value that cannot be decoded is given as.
UNDECODABLE = "$undecodable"
_CONSTRUCTOR_SINGLE, _CONSTRUCTOR_POS, _CONSTRUCTOR_KW, _METHOD = 0, 1, 2, 3
_PYDANTIC_V1, _PYDANTIC_V2, _NUMPY, _DELTA = 4, 5, 6, 7


class _Problem(ValueError):
    """A stored value that is not what its type says."""


def decode_typed(kind: str | None, data: bytes | None) -> Any:
    """Decode one ``(type, bytes)`` value as LangGraph stored it, safely (module docstring)."""
    raw = b"" if data is None else bytes(data)
    if kind == "null" or (kind is None and not raw):
        return None
    if kind == "msgpack":
        return decode_msgpack(raw)
    if kind == "json":
        try:
            return json.loads(raw)
        except (ValueError, RecursionError) as exc:
            return _undecodable("json", raw, f"not JSON: {exc}")
    if kind in ("bytes", "bytearray"):
        return {"$opaque": kind, "bytes": len(raw)}
    return {"$opaque": kind or "untyped", "bytes": len(raw)}


def decode_msgpack(data: bytes) -> Any:
    """Decode msgpack bytes into JSON values and descriptions; a marker if they are not msgpack."""
    try:
        return _unpack(data)
    except (ValueError, TypeError, RecursionError, msgpack.UnpackException) as exc:
        return _undecodable("msgpack", data, _reason(exc))


def problems_in(value: Any, path: str = "$") -> list[str]:
    """The problems of every undecodable marker in a decoded value, each with its path."""
    found: list[str] = []
    if isinstance(value, dict):
        if UNDECODABLE in value and "problem" in value:
            return [f"{path}: {value['problem']}"]
        for key, item in value.items():
            found.extend(problems_in(item, f"{path}.{key}"))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            found.extend(problems_in(item, f"{path}[{index}]"))
    return found


def _undecodable(kind: str, data: bytes, problem: str) -> dict[str, Any]:
    return {UNDECODABLE: kind, "bytes": len(data), "problem": problem}


def _reason(exc: BaseException) -> str:
    if isinstance(exc, RecursionError | msgpack.StackError):
        return "nested too deeply to decode"
    if isinstance(exc, msgpack.ExtraData):
        return "bytes left over after the value"
    name = type(exc).__name__
    text = str(exc).splitlines()[0] if str(exc) else ""
    if name in ("OutOfData",) or "incomplete" in text.lower() or "unpack(b) received" in text:
        return "truncated msgpack"
    return f"not msgpack ({name}{': ' + text if text else ''})"


def _unpack(data: bytes) -> Any:
    """Decode msgpack bytes; each array and map is made plain as it is built (bottom up)."""
    return _plain(
        msgpack.unpackb(
            data,
            ext_hook=_ext,
            object_pairs_hook=_pairs,
            list_hook=_items,
            raw=False,
            strict_map_key=False,
            use_list=True,
        )
    )


def _items(items: list[Any]) -> list[Any]:
    return [_plain(item) for item in items]


def _pairs(pairs: list[tuple[Any, Any]]) -> dict[str, Any]:
    """A map with every key as text: a key that is not a string is written as JSON text."""
    return {key if isinstance(key, str) else _key_text(key): _plain(value) for key, value in pairs}


def _key_text(key: Any) -> str:
    try:
        return json.dumps(_plain(key), ensure_ascii=False, sort_keys=True)
    except (TypeError, ValueError):
        return repr(key)


def _plain(value: Any) -> Any:
    """A msgpack binary value as an opaque marker (JSON has no bytes); anything else as it is."""
    if isinstance(value, bytes | bytearray):
        return {"$opaque": "bytes", "bytes": len(value)}
    return value


def _ext(code: int, data: bytes) -> Any:
    """Describe one extension value: what it names and its decoded arguments, never the object."""
    if code == _DELTA:
        return {"$delta_snapshot": _unpack(data)}
    if code == _NUMPY:
        return _numpy(data)
    if code not in (
        _CONSTRUCTOR_SINGLE,
        _CONSTRUCTOR_POS,
        _CONSTRUCTOR_KW,
        _METHOD,
        _PYDANTIC_V1,
        _PYDANTIC_V2,
    ):
        return {"$opaque": "ext", "code": code, "bytes": len(data)}
    parts = _unpack(data)
    if (
        not isinstance(parts, list)
        or len(parts) < 3
        or not all(isinstance(p, str) for p in parts[:2])
    ):
        raise _Problem(f"extension {code} does not name a module and a type")
    described: dict[str, Any] = {"$type": f"{parts[0]}.{parts[1]}"}
    if code in (_PYDANTIC_V1, _PYDANTIC_V2):
        described["$pydantic"] = parts[2]
    else:
        described["$args"] = parts[2]
    if len(parts) > 3 and parts[3] is not None:
        described["$method"] = parts[3]
    return described


def _numpy(data: bytes) -> dict[str, Any]:
    """A numpy array as its dtype, shape and size: its buffer is never turned into an array."""
    parts = _unpack(data)
    marker: dict[str, Any] = {"$opaque": "numpy", "bytes": len(data)}
    if isinstance(parts, list) and len(parts) >= 3:
        dtype, shape, buffer = parts[0], parts[1], parts[-1]
        marker["dtype"] = dtype if isinstance(dtype, str) else None
        marker["shape"] = shape if isinstance(shape, list) else None
        if isinstance(buffer, dict) and "bytes" in buffer:
            marker["bytes"] = buffer["bytes"]
    return marker


def channel_bytes(data: bytes) -> dict[str, int]:
    """The bytes of each value of a checkpoint's ``channel_values`` map, measured in the
    msgpack text without decoding the values (empty if it holds no such map)."""
    sizes: dict[str, int] = {}
    unpacker = msgpack.Unpacker(raw=False, strict_map_key=False, ext_hook=_skipped)
    unpacker.feed(data)
    try:
        for _ in range(unpacker.read_map_header()):
            key = unpacker.unpack()
            if key != "channel_values":
                unpacker.skip()
                continue
            for _ in range(unpacker.read_map_header()):
                channel = unpacker.unpack()
                start = unpacker.tell()
                unpacker.skip()
                sizes[channel if isinstance(channel, str) else _key_text(channel)] = (
                    unpacker.tell() - start
                )
            break
    except (ValueError, TypeError, RecursionError, msgpack.UnpackException):
        return sizes
    return sizes


def _skipped(code: int, data: bytes) -> None:
    """An extension in a key is never decoded while sizes are measured."""
    return None


def outline(data: bytes) -> Any:
    """A checkpoint's ``v``, ``ts`` and channel names (each value None), its values skipped,
    never decoded: what a listing needs, read fast. A marker if the bytes do not read."""
    unpacker = msgpack.Unpacker(raw=False, strict_map_key=False, ext_hook=_skipped)
    unpacker.feed(data)
    found: dict[str, Any] = {}
    try:
        for _ in range(unpacker.read_map_header()):
            key = unpacker.unpack()
            if key in ("v", "ts", "id"):
                found[key] = _plain(unpacker.unpack())
            elif key == "channel_values":
                channels: dict[str, None] = {}
                for _ in range(unpacker.read_map_header()):
                    channel = unpacker.unpack()
                    channels[channel if isinstance(channel, str) else _key_text(channel)] = None
                    unpacker.skip()
                found[key] = channels
            else:
                unpacker.skip()
        if unpacker.tell() != len(data):
            raise msgpack.ExtraData(None, None)
    except (ValueError, TypeError, RecursionError, msgpack.UnpackException) as exc:
        return _undecodable("msgpack", data, _reason(exc))
    return found
