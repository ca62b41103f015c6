"""Reading journal records: orjson where it reads a record as the standard library would.

orjson parses a record ~2.5x faster than ``json.loads``, but reads an integer beyond 64 bits as
a float, silently, and refuses some text the standard library accepts. ``decode_record`` must
read every record exactly as the standard library does: these tests count which parser read
what, and compare the results on the records where the two differ.
"""

from __future__ import annotations

import builtins
import dataclasses
import json
import zlib
from typing import Any

import pytest

from tests.storage.helpers import ckpt
from wfctl._errors import CheckpointCorruptError
from wfctl._frozen import slot_setters
from wfctl._inspect._entries import LogEntry, StepEntry, log_entry
from wfctl._records._checkpoint import Checkpoint, Kind
from wfctl._records._payloads import StepPayload, payload_of
from wfctl._records._recorded import StepRecord
from wfctl._storage import _journal
from wfctl._storage._journal import decode_record, encode_record
from wfctl._storage._marker import decode_end, encode_end


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


_BODY = b'{"v":1,"id":"r1.1","seq":1,"prev":"r1.0","kind":"step","wf":"w","ts":"t","data":%s}'


def test_what_orjson_refuses_is_read_as_the_standard_library_reads_it() -> None:
    data = b'{"text":"lone \\ud800"}'
    expected = Checkpoint.from_dict(json.loads(_BODY % data), "t")
    assert decode_record(_signed(_BODY % data), "t") == expected


@pytest.mark.parametrize(
    ("data", "named"),
    [
        (b'{"value":NaN}', "NaN is not a JSON number"),
        (b'{"value":1,"other":-Infinity}', "-Infinity is not a JSON number"),
        (b'{"value":1e400}', "1e400 is beyond the largest float"),  # infinity to the stdlib
    ],
)
def test_numbers_wfctl_never_writes_are_refused(data: bytes, named: str) -> None:
    # The standard library reads them (as nan and inf): they went on into --json output that
    # is not JSON, and a copy to PostgreSQL changed them. The codec tags such floats.
    with pytest.raises(CheckpointCorruptError, match=named):
        decode_record(_signed(_BODY % data), "t")


def test_invalid_json_is_named_as_the_standard_library_names_it() -> None:
    body = b'{"v":1,"id":"r1.1","seq":1,"kind":"step","data":{"a":[1,}}'
    with pytest.raises(json.JSONDecodeError) as stdlib:
        json.loads(body)
    with pytest.raises(CheckpointCorruptError) as raised:
        decode_record(_signed(body), "t")
    assert raised.value.reason == f"invalid JSON: {stdlib.value}"


def _step_line() -> tuple[Checkpoint, bytes]:
    """A step record of a restored run with every field of a step record set, and its line."""
    step = {
        "key": "k",
        "scope": "s",
        "name": "n",
        "digest": "d",
        "args": [1],
        "kwargs": {"a": 2},
        "result": {"r": 1},
        "dt": 0.5,
        "explicit": "k",
        "effects": {"state": {}},
        "replaced": True,
    }
    checkpoint = ckpt("r1", 3, Kind.STEP, data={"steps": [step, {"key": "w#0", "result": None}]})
    checkpoint = dataclasses.replace(checkpoint, origin_run_id="r0", origin_checkpoint_id="r0.2")
    return checkpoint, encode_record(checkpoint)[:-1]


def test_records_read_are_what_their_classes_make_and_stay_frozen() -> None:
    checkpoint, line = _step_line()
    read = decode_record(line, "t")
    assert read == checkpoint and repr(read) == repr(checkpoint)
    payload = payload_of(read)
    assert isinstance(payload, StepPayload)
    first = payload.steps[0]
    made = StepRecord(
        "k", "s", "n", "d", {"r": 1}, "k", 0.5, {"state": {}}, [1], {"a": 2}, None, True
    )
    assert first == made and repr(first) == repr(made)
    assert payload.steps[1] == StepRecord("w#0", "", "w", None, None)
    entry = log_entry(read)
    assert entry == LogEntry(
        "r1.3",
        3,
        Kind.STEP,
        checkpoint.timestamp,
        steps=(StepEntry("k", 0.5, first), StepEntry("w#0", 0.0, payload.steps[1])),
    )
    for frozen, name in ((read, "seq"), (first, "key"), (entry, "seq"), (entry.steps[0], "key")):
        with pytest.raises(dataclasses.FrozenInstanceError):
            setattr(frozen, name, None)


def test_reading_records_imports_nothing_per_record(monkeypatch: pytest.MonkeyPatch) -> None:
    # an import inside a function runs the import machinery on every call (a dict look-up and
    # a lock at least): reading a record, its payload and its log entry must make none
    _, line = _step_line()
    marker = encode_end(ckpt("r1", 3, "completed"), line + b"\n")
    imports: list[str] = []
    original = builtins.__import__

    def counted(name: str, *args: Any, **kwargs: Any) -> Any:
        imports.append(name)
        return original(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", counted)
    for _ in range(3):
        log_entry(decode_record(line, "t"))
        decode_end(marker, "t", "r1")
    assert imports == []


def test_end_markers_are_not_read_by_the_standard_library(stdlib_reads: list[bytes]) -> None:
    _, line = _step_line()
    marker = decode_end(encode_end(ckpt("r1", 3, "completed"), line + b"\n"), "t", "r1")
    assert (marker.run_id, marker.seq, marker.kind) == ("r1", 3, "completed")
    assert stdlib_reads == []
    body = b'{"v":1,"run":"r1","seq":%d,"kind":"completed","last":"0000abcd"}' % 2**64
    assert decode_end(_signed(body), "t", "r1").seq == 2**64  # as written, not a float
    assert len(stdlib_reads) == 1


def test_slot_setters_must_set_every_field() -> None:
    with pytest.raises(TypeError, match="StepEntry has fields"):
        slot_setters(StepEntry, "key", "duration")
