"""Stored values as people read them: the codec's tagged objects turned into readable JSON data.

The store (and ``--json``) keeps each value in the codec's lossless encoding, where a datetime
is ``{"$t": "datetime", "v": "2026-01-02T03:04:05+00:00"}``. What people are shown is the value
itself: :func:`readable` replaces each tagged object by plain data that reads as the value does
(ISO text for datetimes, dates and times; text for UUIDs, decimals and paths; lists for tuples
and sets; the fields of a dataclass or model, the ``to_dict()`` of a class that stores itself
such as agent-framework's ``Message``; ``b'...'`` for bytes). It works on the encoding
alone, so a value of a class this process never registered is shown too, and nothing is run.

The standard library only: the log's details and the renderers both use it.
"""

from __future__ import annotations

import base64
import binascii
import json
import math
from collections.abc import Callable
from typing import Any, Final

__all__ = ["readable", "readable_text"]


def readable(encoded: Any) -> Any:
    """Return encoded codec data as plain JSON data for people (see the module docstring).

    Never raises on malformed data: a tagged object this module does not know stays as it is.
    """
    if isinstance(encoded, list):
        return [readable(item) for item in encoded]
    if not isinstance(encoded, dict):
        return encoded
    tag = encoded.get("$t")
    shown = _TAGGED.get(tag) if isinstance(tag, str) else None
    if shown is None:
        if tag is not None:  # a tag this wfctl does not know: shown as stored
            return encoded
        return {key: readable(value) for key, value in encoded.items()}
    try:
        return shown(encoded.get("v"))
    except (TypeError, ValueError, KeyError, binascii.Error):
        return encoded


def readable_text(encoded: Any, limit: int | None = None) -> str:
    """Return encoded data as compact readable JSON text, on one line.

    With ``limit``, text longer than that is cut and ends with ``...``.
    """
    text = json.dumps(readable(encoded), ensure_ascii=False)
    if limit is not None and len(text) > limit:
        text = text[: limit - 3] + "..."
    return text


def _pairs(v: Any) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in v:
        shown = readable(key)
        label = shown if isinstance(shown, str) else json.dumps(shown, ensure_ascii=False)
        out[label] = readable(value)
    return out


def _bytes(v: Any) -> str:
    return repr(base64.b64decode(v, validate=True))


def _float(v: Any) -> float:
    return {"nan": math.nan, "inf": math.inf, "-inf": -math.inf}[v]


def _ref(v: Any) -> str:
    # A step argument stored as a reference to an earlier step's result (format version 3),
    # shown where the records it names were not read (``log --follow`` from the middle).
    seq, key = v
    if not isinstance(seq, int) or not isinstance(key, str):
        raise TypeError(v)
    return f"<the result of step {key!r} in checkpoint seq {seq}>"


def _change(v: Any) -> str:
    # A step's text result stored as its change from earlier results (format version 4), shown
    # where the records it names were not read.
    if not isinstance(v, list) or not v:
        raise TypeError(v)
    named = " and ".join(f"step {key!r} in checkpoint seq {seq}" for seq, key in v)
    return f"<a text stored as its change from the result of {named}>"


def _same(v: Any) -> Any:
    if not isinstance(v, str):
        raise TypeError(v)
    return v


_TAGGED: Final[dict[str, Callable[[Any], Any]]] = {
    "datetime": _same,
    "date": _same,
    "time": _same,
    "uuid": _same,
    "decimal": _same,
    "path": _same,
    "int": _same,  # an int past 4300 digits: its hex text, as stored
    "float": _float,
    "bytes": _bytes,
    "tuple": readable,
    "set": readable,
    "frozenset": readable,
    "dict": _pairs,
    "dataclass": readable,
    "model": readable,
    "object": readable,  # a class that stores itself: its to_dict(), as it gave it
    "ref": _ref,
    "zd": _change,
}
