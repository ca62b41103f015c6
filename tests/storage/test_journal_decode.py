"""Reading journal records: orjson where it reads a record as the standard library would.

orjson parses a record ~2.5x faster than ``json.loads``, but reads an integer beyond 64 bits as
a float, silently, and refuses some text the standard library accepts. ``decode_record`` must
read every record exactly as the standard library does: these tests count which parser read
what, and compare the results on the records where the two differ.
"""

from __future__ import annotations

import json
import math
import zlib
from typing import Any

import pytest

from tests.storage.helpers import ckpt
from wfctl._checkpoint import Checkpoint
from wfctl._errors import CheckpointCorruptError
from wfctl._storage import _journal
from wfctl._storage._journal import decode_record, encode_record


def _signed(body: bytes) -> bytes:
    """Return a journal line (without newline) for a hand-written JSON ``body``."""
    return body[:-1] + b',"crc":"%08x"}' % zlib.crc32(body)


@pytest.fixture
def stdlib_reads(monkeypatch: pytest.MonkeyPatch) -> list[bytes]:
    """Record every body the standard library's parser is asked to read."""
    seen: list[bytes] = []
    loads = json.loads

    def counted(body: Any, **kwargs: Any) -> Any:
        seen.append(body)
        return loads(body, **kwargs)

    monkeypatch.setattr(_journal.json, "loads", counted)
    return seen


def test_ordinary_records_are_not_read_by_the_standard_library(stdlib_reads: list[bytes]) -> None:
    data = {
        "steps": [{"key": "s#0", "result": {"n": 10**18 - 1, "m": -(10**17), "x": 0.1, "t": "é"}}]
    }
    for seq in range(50):
        checkpoint = ckpt("r1", seq, data=data)
        assert decode_record(encode_record(checkpoint)[:-1], "t") == checkpoint
    assert stdlib_reads == []


@pytest.mark.parametrize(
    "value",
    [
        -(2**63) - 1,  # the first integer below orjson's range (read as a float by it)
        2**64,  # the first above it
        -(2**70),
        12345678901234567890123,
    ],
)
def test_integers_beyond_64_bits_read_back_as_written(
    value: int, stdlib_reads: list[bytes]
) -> None:
    checkpoint = ckpt("r1", 1, data={"value": value, "list": [value, 1]})
    read = decode_record(encode_record(checkpoint)[:-1], "t")
    assert read == checkpoint
    assert type(read.data["value"]) is int
    assert len(stdlib_reads) == 1  # this record only


def test_a_long_digit_run_in_a_string_costs_only_the_slower_parser() -> None:
    checkpoint = ckpt("r1", 1, data={"text": "1" * 40})
    assert decode_record(encode_record(checkpoint)[:-1], "t") == checkpoint


@pytest.mark.parametrize(
    "data",
    [
        b'{"value":NaN,"other":-Infinity}',  # the standard library reads these
        b'{"text":"lone \\ud800"}',
        b'{"value":1e400}',  # infinity to the standard library, an error to orjson
    ],
)
def test_what_orjson_refuses_is_read_as_the_standard_library_reads_it(data: bytes) -> None:
    body = b'{"v":1,"id":"r1.1","seq":1,"prev":"r1.0","kind":"step","wf":"w","ts":"t","data":%s}'
    line = _signed(body % data)
    expected = Checkpoint.from_dict(json.loads(body % data), "t")
    read = decode_record(line, "t")
    assert read == expected or (
        math.isnan(read.data["value"]) and repr(read.data) == repr(expected.data)
    )


def test_invalid_json_is_named_as_the_standard_library_names_it() -> None:
    body = b'{"v":1,"id":"r1.1","seq":1,"kind":"step","data":{"a":[1,}}'
    with pytest.raises(json.JSONDecodeError) as stdlib:
        json.loads(body)
    with pytest.raises(CheckpointCorruptError) as raised:
        decode_record(_signed(body), "t")
    assert raised.value.reason == f"invalid JSON: {stdlib.value}"
