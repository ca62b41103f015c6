"""wfctl's decoder of LangGraph's stored values (``_sources._msgpack``) on values LangGraph's
own serializer wrote: every extension becomes a description of what it names, never the
object; what it cannot decode is a marker with a problem, never an exception."""

from __future__ import annotations

import datetime
import enum
import uuid
from typing import Any

import msgpack
import pytest
from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer
from langgraph.types import Interrupt, Send
from pydantic import BaseModel

from wfctl._sources._msgpack import channel_bytes, decode_msgpack, decode_typed, problems_in


class Model(BaseModel):
    a: int
    b: str


class Plain:
    """A class msgpack cannot encode (LangGraph pickles it when its fallback is on)."""


class Colour(enum.Enum):
    RED = "red"


def _stored(value: Any) -> tuple[str, bytes]:
    return JsonPlusSerializer(pickle_fallback=True).dumps_typed(value)


@pytest.mark.parametrize(
    ("value", "described"),
    [
        (
            datetime.datetime(2026, 1, 2, 3, 4, 5, tzinfo=datetime.UTC),
            {
                "$type": "datetime.datetime",
                "$args": "2026-01-02T03:04:05+00:00",
                "$method": "fromisoformat",
            },
        ),
        (uuid.UUID(int=5), {"$type": "uuid.UUID", "$args": "0" * 31 + "5"}),
        (
            Model(a=1, b="q"),
            {
                "$type": f"{__name__}.Model",
                "$pydantic": {"a": 1, "b": "q"},
                "$method": "model_validate_json",
            },
        ),
        (Colour.RED, {"$type": f"{__name__}.Colour", "$args": "red"}),
        ({1: "a", (1, 2): "b"}, {"1": "a", "[1, 2]": "b"}),
        ([0.1, 1e300, -(2**63), 2**64 - 1, "é"], [0.1, 1e300, -(2**63), 2**64 - 1, "é"]),
        (
            Interrupt(value=3, id="i"),
            {
                "$type": "langgraph.types.Interrupt",
                "$args": {"value": 3, "id": "i", "response_schema": None},
            },
        ),
        (b"abc", {"$opaque": "bytes", "bytes": 3}),
        (None, None),
    ],
)
def test_langgraph_s_values_are_described(value: Any, described: Any) -> None:
    assert decode_typed(*_stored(value)) == described


def test_a_send_and_a_set_name_their_type_and_keep_their_arguments() -> None:
    send = decode_typed(*_stored(Send("node", {"x": 1})))
    assert send["$type"] == "langgraph.types.Send" and {"x": 1} in send["$args"]
    assert decode_typed(*_stored({1, 2})) == {"$type": "builtins.set", "$args": [1, 2]}


def test_a_pickle_row_is_opaque_and_never_loaded() -> None:
    kind, data = _stored(Plain())  # not msgpack-able: LangGraph's fallback pickles it
    assert kind == "pickle"
    assert decode_typed(kind, data) == {"$opaque": "pickle", "bytes": len(data)}
    assert decode_typed("msgpack+aes", b"xyz") == {"$opaque": "msgpack+aes", "bytes": 3}
    assert decode_typed("json", b'{"a": [1]}') == {"a": [1]}


def test_numpy_delta_snapshots_and_unknown_codes_are_described() -> None:
    array = msgpack.packb(["<f8", [2, 3], "C", b"\0" * 48], use_bin_type=True)
    assert decode_msgpack(msgpack.packb(msgpack.ExtType(6, array))) == {
        "$opaque": "numpy",
        "bytes": 48,
        "dtype": "<f8",
        "shape": [2, 3],
    }
    snapshot = msgpack.packb(msgpack.ExtType(7, msgpack.packb(["a", "b"])))
    assert decode_msgpack(snapshot) == {"$delta_snapshot": ["a", "b"]}
    assert decode_msgpack(msgpack.packb(msgpack.ExtType(42, b"xyz"))) == {
        "$opaque": "ext",
        "code": 42,
        "bytes": 3,
    }


@pytest.mark.parametrize(
    ("data", "problem"),
    [
        (msgpack.packb({"a": [1, 2, 3]})[:-2], "truncated msgpack"),
        (msgpack.packb(1) + b"\x01", "bytes left over after the value"),
        (b"\xc1", "not msgpack"),
        (msgpack.packb(msgpack.ExtType(0, b"\x01")), "not msgpack"),
        (b"\x91" * 100_000 + b"\x01", "nested too deeply"),
    ],
)
def test_bytes_that_do_not_decode_are_a_marker_with_a_problem(data: bytes, problem: str) -> None:
    decoded = decode_msgpack(data)
    assert decoded["$undecodable"] == "msgpack" and decoded["bytes"] == len(data)
    assert problem in decoded["problem"]
    assert problems_in({"x": [decoded]}) == [f"$.x[0]: {decoded['problem']}"]


def test_channel_bytes_are_measured_without_decoding_values() -> None:
    value = msgpack.packb(msgpack.ExtType(0, msgpack.packb(["os", "system", "x"])))
    checkpoint = msgpack.packb(
        {"v": 4, "channel_values": {"a": "x" * 100, "b": 1}}, use_bin_type=True
    )
    sizes = channel_bytes(checkpoint)
    assert sizes == {"a": len(msgpack.packb("x" * 100)), "b": 1}
    with_ext = msgpack.packb({"channel_values": {"e": 0}})[:-1] + value  # the ext: never built
    assert channel_bytes(with_ext) == {"e": len(value)}
