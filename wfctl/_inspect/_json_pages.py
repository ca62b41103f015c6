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
    placed: dict[str, Any],
    items: Iterable[T],
    page_text: Callable[[list[T]], str],
    *,
    page_chars: int | None = None,
) -> Iterator[str]:
    """Yield ``placed`` as ``json.dumps(indent=2, ensure_ascii=False)`` writes it, its last
    value (a list of one ``None``) holding ``items`` instead, a page of them at a time.

    ``page_text`` writes a page of items as ``json.dumps`` writes them in that list (each
    indented by 4, joined by :data:`_ITEM_SEPARATOR`). A page is :data:`_JSON_PAGE` items; with
    ``page_chars``, each item is written alone as it is read, and a page also ends once its
    text reaches ``page_chars`` characters: items of any size are then held one at a time, not
    a page of them. If reading an item fails, the items read before it are given before the
    error goes on (the document is then left unfinished).
    """
    head = json.dumps(placed, indent=2, ensure_ascii=False)
    opening, _, closing = head.rpartition("null")  # the list's one item: the last value
    before = opening  # then the separator of the list's items
    pages = _pages(items, page_text) if page_chars is None else _sized(items, page_text, page_chars)
    for text in pages:
        yield before + text
        before = _ITEM_SEPARATOR
    if before == opening:  # no item at all: ``[]``, as json.dumps writes an empty list
        yield opening.rstrip() + closing.lstrip() + "\n"
    else:
        yield closing + "\n"


def _pages(items: Iterable[T], page_text: Callable[[list[T]], str]) -> Iterator[str]:
    """The text of each page of :data:`_JSON_PAGE` items (see :func:`_json_text`)."""
    page: list[T] = []
    try:
        for item in items:
            page.append(item)
            if len(page) == _JSON_PAGE:
                yield page_text(page)
                page.clear()
    except Exception:
        if page:
            yield page_text(page)
        raise
    if page:
        yield page_text(page)


def _sized(items: Iterable[T], page_text: Callable[[list[T]], str], chars: int) -> Iterator[str]:
    """The text of each page of at most :data:`_JSON_PAGE` items and about ``chars`` characters,
    each item written as it is read (see :func:`_json_text`)."""
    texts: list[str] = []
    size = 0
    try:
        for item in items:
            text = page_text([item])
            texts.append(text)
            size += len(text)
            if size >= chars or len(texts) == _JSON_PAGE:
                yield _ITEM_SEPARATOR.join(texts)
                texts.clear()
                size = 0
    except Exception:
        if texts:
            yield _ITEM_SEPARATOR.join(texts)
        raise
    if texts:
        yield _ITEM_SEPARATOR.join(texts)


#: Entries of ``log --json`` (checkpoints of ``export``) given per string by :func:`_json_text`.
_JSON_PAGE = 200
#: About how many characters of ``export``'s checkpoints one string holds: a page of big
#: values (24 of 20 MB) was held whole, five times over, as it was written.
EXPORT_PAGE_CHARS = 1 << 20
#: What ``json.dumps`` writes between two items of ``checkpoints`` (indented by 4).
_ITEM_SEPARATOR = ",\n    "


def _page_json(entries: list[LogEntry], utc: Callable[[str], str | None]) -> str:
    """Return the entries as items of the document's ``checkpoints``, as ``json.dumps`` writes
    them there (each indented by 4, joined by :data:`_ITEM_SEPARATOR`).

    With orjson, the whole page as one list, when no entry needs the standard library (see
    :func:`_indented_json`); a list's items are indented by 2, so each line gets 2 more.
    """
    documents = [None if entry.answers else _orjson_document(entry, utc) for entry in entries]
    if None not in documents:
        try:
            text = orjson.dumps(documents, option=orjson.OPT_INDENT_2).decode()
        except orjson.JSONEncodeError:
            pass
        else:
            return text[4:-2].replace("\n", "\n  ")  # within "[\n  " and "\n]"
    return _ITEM_SEPARATOR.join([_indented_json(e, utc).replace("\n", "\n    ") for e in entries])


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
