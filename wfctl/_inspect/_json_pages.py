"""Long JSON documents written a page at a time, as ``json.dumps(indent=2)`` writes them whole (``log --json``, ``export``)."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Iterator
from math import isfinite
from typing import Any, TypeVar

import orjson

from ._documents import utc_time
from ._entries import LogEntry

T = TypeVar("T")


def _json_text(
    placed: dict[str, Any], items: Iterable[T], item_text: Callable[[T], str]
) -> Iterator[str]:
    """Yield ``placed`` as ``json.dumps(indent=2, ensure_ascii=False)`` writes it, its last
    value (a list of one ``None``) holding ``items`` instead, a page of them at a time.

    ``item_text`` writes one item as ``json.dumps`` writes it in that list (indented by 4);
    each item is written as it is read, so only text is held: a page is :data:`_JSON_PAGE`
    items, or fewer once its text reaches :data:`PAGE_CHARS` characters. If reading an item
    fails, the items read before it are given before the error goes on (the document is then
    left unfinished).
    """
    head = json.dumps(placed, indent=2, ensure_ascii=False)
    opening, _, closing = head.rpartition("null")  # the list's one item: the last value
    before = opening  # then the separator of the list's items
    for page in _pages(map(item_text, items)):
        yield before + _ITEM_SEPARATOR.join(page)
        before = _ITEM_SEPARATOR
    if before == opening:  # no item at all: ``[]``, as json.dumps writes an empty list
        yield opening.rstrip() + closing.lstrip() + "\n"
    else:
        yield closing + "\n"


def _pages(texts: Iterator[str]) -> Iterator[list[str]]:
    """The texts in pages (see :func:`_json_text`); those read before a failure first."""
    page: list[str] = []
    size = 0
    try:
        for text in texts:
            page.append(text)
            size += len(text)
            if size >= PAGE_CHARS or len(page) == _JSON_PAGE:
                yield page
                page, size = [], 0
    except Exception:
        if page:
            yield page
        raise
    if page:
        yield page


#: Entries of ``log --json`` (checkpoints of ``export``) given per string by :func:`_json_text`.
_JSON_PAGE = 200
#: About how many characters one such string holds: a page of 200 big values (24 of 20 MB)
#: read before it was written was held whole, about five times over.
PAGE_CHARS = 1 << 20
#: What ``json.dumps`` writes between two items of ``checkpoints`` (indented by 4).
_ITEM_SEPARATOR = ",\n    "


def _entry_json(entry: LogEntry, utc: Callable[[str], str | None]) -> str:
    """The entry as an item of the document's ``checkpoints``, as ``json.dumps`` writes it
    there (indented by 4; see :func:`_indented_json`)."""
    return _indented_json(entry, utc).replace("\n", "\n    ")


def _orjson_document(entry: LogEntry, utc: Callable[[str], str | None]) -> dict[str, Any]:
    """The entry's document with its durations as the standard library writes them."""
    document = entry._document(utc)
    for step in document["steps"]:
        duration = step["duration_s"]
        if duration is not None:
            step["duration_s"] = orjson.Fragment(
                _float_repr(duration) if isfinite(duration) else _JSON_FLOAT.encode(duration)
            )
    return document


def _indented_json(entry: LogEntry, utc: Callable[[str], str | None] = utc_time) -> str:
    """Return ``json.dumps(entry.to_json(), indent=2, ensure_ascii=False)``, with orjson if it can.

    The standard library's encoder runs in Python when it indents (~40 µs an entry). orjson
    writes the same text (indent, separators, escapes, UTF-8: the journal relies on the
    escapes being the same) except for floats (``1e-5`` for the standard library's ``1e-05``),
    so durations, the only floats of an entry without answers, are given as the standard
    library writes them. An entry with answers (any value) or with what orjson refuses (an
    integer beyond 64 bits, a lone surrogate) is written by the standard library. ``utc``
    converts stored times as :func:`utc_time` does.
    """
    if not entry.answers:
        try:
            return orjson.dumps(_orjson_document(entry, utc), option=orjson.OPT_INDENT_2).decode()
        except orjson.JSONEncodeError:
            pass
    return json.dumps(entry._document(utc), indent=2, ensure_ascii=False)


#: Writes a float as ``json.dumps`` does (``NaN`` and ``Infinity`` included); a finite float
#: it writes as ``float.__repr__`` does (``json.encoder``'s ``floatstr``), which is cheaper.
_JSON_FLOAT = json.JSONEncoder()
_float_repr = float.__repr__


class _UtcTimes:
    """:func:`utc_time`, converting each second once for the stored times of one run.

    A run's checkpoints are written thousands a second: a time as wfctl stores it
    (``2026-12-01T07:33:18.374520+00:00``, UTC already) keeps its microseconds as written,
    and its second is checked and converted once (``...07:33:18Z``). Any other text (another
    offset, no fraction, a fraction of zero, which :func:`utc_time` leaves out) is converted by
    :func:`utc_time` itself.
    """

    def __init__(self) -> None:
        self._second = ""
        self._shown: str | None = None

    def __call__(self, text: str) -> str | None:
        fraction = text[20:26]
        if (
            len(text) != 32
            or text[19] != "."
            or text[26:] != "+00:00"
            or not text.isascii()
            or not fraction.isdigit()
            or fraction == "000000"
        ):
            return utc_time(text)
        second = text[:19]
        if second != self._second:
            self._shown = utc_time(second + "+00:00")  # None: not a time
            self._second = second
        shown = self._shown
        return None if shown is None else f"{shown[:-1]}.{fraction}Z"
