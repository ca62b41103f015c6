"""``wfctl._readable``: every tagged value the codec writes, shown as people read it."""

from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import UTC, date, datetime, time
from decimal import Decimal
from pathlib import Path
from uuid import UUID

from wfctl._readable import readable, readable_text
from wfctl._records._codec import encode, register_type


@dataclass
class Point:
    x: int
    y: int


register_type(Point, "tests.readable.Point")


def test_every_tag_reads_as_its_value() -> None:
    value = {
        "when": datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC),
        "day": date(2026, 1, 2),
        "at": time(3, 4),
        "id": UUID(int=1),
        "price": Decimal("1.10"),
        "path": Path("/tmp/x"),
        "raw": b"hi",
        "pair": (1, 2),
        "tags": {"b", "a"},
        "frozen": frozenset({1}),
        "by_number": {1: "one", (2, 3): "pair"},
        "point": Point(1, 2),
        "big": 1 << 20000,
        "inf": math.inf,
        "escaped": {"$t": "not a tag"},
    }
    shown = readable(encode(value))
    assert shown == {
        "when": "2026-01-02T03:04:05+00:00",
        "day": "2026-01-02",
        "at": "03:04:00",
        "id": "00000000-0000-0000-0000-000000000001",
        "price": "1.10",
        "path": "/tmp/x",
        "raw": "b'hi'",
        "pair": [1, 2],
        "tags": ["a", "b"],
        "frozen": [1],
        "by_number": {"1": "one", "[2, 3]": "pair"},
        "point": {"x": 1, "y": 2},
        "big": hex(1 << 20000),
        "inf": math.inf,
        "escaped": {"$t": "not a tag"},
    }


def test_malformed_or_unknown_tags_are_shown_as_stored() -> None:
    for stored in (
        {"$t": "nope", "v": 1},
        {"$t": "bytes", "v": "not base64!"},
        {"$t": "float", "v": "huge"},
        {"$t": "dict", "v": [[1]]},
        {"$t": "datetime", "v": 3},
    ):
        assert readable(stored) == stored


def test_a_reference_or_change_a_reader_could_not_resolve_says_what_it_names() -> None:
    # log --follow from the middle of a run: the records they name were not read.
    assert (
        readable({"$t": "ref", "v": [3, "e#2"]}) == "<the result of step 'e#2' in checkpoint seq 3>"
    )
    change = {"$t": "zd", "v": [[3, "e#2"], [4, "f#0"]], "z": "KLUv"}
    assert readable(change) == (
        "<a text stored as its change from the result of step 'e#2' in checkpoint seq 3 "
        "and step 'f#0' in checkpoint seq 4>"
    )
    assert readable({"$t": "zd", "v": [], "z": ""}) == {"$t": "zd", "v": [], "z": ""}


def test_text_is_compact_json_cut_to_the_limit() -> None:
    assert readable_text(encode(date(2026, 1, 2))) == '"2026-01-02"'
    assert readable_text(encode("x" * 10), limit=8) == '"xxxx...'
