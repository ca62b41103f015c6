"""Tests for the tagged JSON checkpoint codec (``wfctl._records._codec``).

These import the internal module directly: the codec's contract (tags, digests, errors) is what
the engine and the on-disk format rely on, so it is tested below the public re-exports.
"""

from __future__ import annotations

import contextlib
import enum
import hashlib
import json
import math
import subprocess
import sys
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, time, timedelta, timezone
from decimal import Decimal
from pathlib import Path, PurePath, PurePosixPath
from typing import Any, cast
from uuid import UUID

import blake3
import pydantic
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from wfctl._errors import CheckpointCorruptError, UnencodableValueError, UnregisteredTypeError
from wfctl._records._codec import MAX_DEPTH, canonical_json, decode, digest, encode, register_type

ROOT = Path(__file__).resolve().parents[2]


@register_type
@dataclass(frozen=True)
class Point:
    x: int
    y: int


@register_type
@dataclass
class Shape:
    name: str
    points: list[Point]
    tags: frozenset[str] = frozenset()
    area: float = field(init=False, default=0.0)

    def __post_init__(self) -> None:
        self.area = float(len(self.points))


@register_type
class User(pydantic.BaseModel):
    user_id: int = pydantic.Field(alias="userId")
    name: str
    joined: datetime
    home: Point | None = None


@register_type
@dataclass
class Box:
    inner: Any


@dataclass
class Unregistered:
    x: int


class UnregisteredModel(pydantic.BaseModel):
    x: int


def _qualified(cls: type) -> str:
    return f"{cls.__module__}.{cls.__qualname__}"


def same(a: Any, b: Any) -> bool:
    """Compare like ``==`` but also by exact type, nan-aware, sign of zero and tz offset."""
    if type(a) is bytearray:
        a = bytes(a)
    if isinstance(a, PurePath):
        return isinstance(b, Path) and str(a) == str(b)
    if type(a) is not type(b):
        return False
    if type(a) is float:
        if math.isnan(a):
            return math.isnan(b)
        return a == b and math.copysign(1, a) == math.copysign(1, b)
    if type(a) is Decimal:
        return str(a) == str(b)  # keeps exponent and NaN kinds; sNaN cannot be compared
    if type(a) in (list, tuple):
        return len(a) == len(b) and all(map(same, a, b))
    if type(a) is dict:
        return len(a) == len(b) and all(
            same(ka, kb) and same(va, vb)
            for (ka, va), (kb, vb) in zip(a.items(), b.items(), strict=True)
        )
    if type(a) in (set, frozenset):
        return a == b and all(any(same(x, y) for y in b) for x in a)
    if type(a) in (datetime, time):
        return bool(a == b) and a.utcoffset() == b.utcoffset()
    return bool(a == b)


def is_json(data: Any) -> bool:
    if type(data) in (str, int, bool, type(None)):
        return True
    if type(data) is float:
        return math.isfinite(data)
    if type(data) is list:
        return all(map(is_json, data))
    if type(data) is dict:
        return all(type(k) is str and is_json(v) for k, v in data.items())
    return False


def round_trip(value: Any) -> Any:
    encoded = encode(value)
    assert is_json(encoded)
    return decode(json.loads(json.dumps(encoded)))


# --- examples --------------------------------------------------------------------------------

UTC_PLUS_5 = timezone(timedelta(hours=5, minutes=30))

EXAMPLES = [
    "plain",
    "",
    0,
    -(10**40),
    True,
    False,
    None,
    1.5,
    -0.0,
    float("nan"),
    float("inf"),
    float("-inf"),
    [1, "a", [True, None]],
    (1, (2, [3])),
    (),
    {1, "a", (2, 3)},
    frozenset({b"x", 1.5}),
    set(),
    {"a": 1, "b": {"c": [1.0]}},
    {"$t": "tuple", "v": [1]},
    {"$t": {"$t": 1}},
    {1: "a", (1, 2): [3], None: {}, frozenset({1}): 2.5},
    {"a": 1, 2: "b"},
    b"\x00\xff bytes",
    bytearray(b"mutable"),
    datetime(2024, 2, 29, 12, 30, 1, 5),
    datetime(1, 1, 1, tzinfo=UTC_PLUS_5),
    datetime(2024, 1, 1, tzinfo=UTC),
    date(1999, 12, 31),
    time(23, 59, 59, 999999),
    time(1, 2, tzinfo=UTC_PLUS_5),
    UUID("12345678-1234-5678-1234-567812345678"),
    Decimal("1.10"),
    Decimal("-0E+3"),
    Decimal("sNaN"),
    Decimal("-Infinity"),
    PurePosixPath("/etc/passwd"),
    Path("relative/dir"),
    Point(1, 2),
    Shape("tri", [Point(0, 0), Point(1, 0), Point(0, 1)], frozenset({"a", "b"})),
    User(userId=7, name="ann", joined=datetime(2020, 5, 6, tzinfo=UTC), home=Point(3, 4)),
    [{"k": (Point(1, 1), {b"b"})}, {UUID(int=1): date(2000, 1, 1)}],
    "\ud800 lone surrogate",
]


@pytest.mark.parametrize("value", EXAMPLES, ids=lambda v: type(v).__name__)
def test_round_trip_examples(value: Any) -> None:
    assert same(value, round_trip(value))


def test_bool_stays_bool_and_bytearray_becomes_bytes() -> None:
    decoded = round_trip([True, 1, False, 0, bytearray(b"q")])
    assert [type(x) for x in decoded] == [bool, int, bool, int, bytes]


def test_tagged_forms() -> None:
    assert encode({"$t": 1}) == {"$t": "dict", "v": [["$t", 1]]}
    assert encode((1,)) == {"$t": "tuple", "v": [1]}
    assert encode(float("-inf")) == {"$t": "float", "v": "-inf"}
    assert encode({"b", "a"}) == {"$t": "set", "v": ["a", "b"]}
    assert encode(b"hi") == {"$t": "bytes", "v": "aGk="}
    assert encode(Point(1, 2)) == {"$t": "dataclass", "n": _qualified(Point), "v": {"x": 1, "y": 2}}


def test_encode_returns_fresh_containers() -> None:
    value = {"a": [1, 2]}
    encoded = encode(value)
    assert encoded == value
    assert encoded is not value
    assert encoded["a"] is not value["a"]


def test_init_false_field_is_recomputed() -> None:
    shape = Shape("line", [Point(0, 0), Point(1, 1)])
    assert "area" not in encode(shape)["v"]
    assert round_trip(shape).area == 2.0


def test_pydantic_model_uses_aliases_and_nests_dataclasses() -> None:
    user = User(userId=1, name="bo", joined=datetime(2021, 1, 1), home=Point(5, 6))
    encoded = encode(user)
    assert encoded["$t"] == "model"
    assert encoded["v"]["userId"] == 1
    assert round_trip(user) == user


def test_register_type_with_custom_name() -> None:
    @dataclass
    class Named:
        v: int

    assert register_type(Named, "custom.Named") is Named
    assert encode(Named(1))["n"] == "custom.Named"
    assert round_trip(Named(1)) == Named(1)


@pytest.mark.parametrize("bad", [int, object, dict, Point(1, 2), User.model_fields])
def test_register_type_rejects_non_dataclass_or_model(bad: Any) -> None:
    with pytest.raises(TypeError, match="a dataclass, a pydantic model or a class with to_dict"):
        register_type(bad)


def test_importing_codec_does_not_import_pydantic() -> None:
    code = "import sys, wfctl._records._codec; print('pydantic' in sys.modules)"
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True
    )
    assert out.stdout.strip() == "False"


# --- unencodable values ----------------------------------------------------------------------


class Color(enum.IntEnum):
    RED = 1


class Mode(enum.StrEnum):
    FAST = "fast"


@pytest.mark.parametrize(
    ("value", "type_name", "path"),
    [
        ({"a": [1, object()]}, "object", "$.a[1]"),
        (object(), "object", "$"),
        ([(1, {2: [{"x y": print}]})], "builtin_function_or_method", '$[0][1][2][0]["x y"]'),
        ({1: 2, object(): 3}, "object", "$.<key>"),
        ({"s": {1, object()}}, "object", "$.s.<member>"),
        ([Unregistered(1)], _qualified(Unregistered), "$[0]"),
        (UnregisteredModel(x=1), _qualified(UnregisteredModel), "$"),
        (
            Shape("s", [Point(1, 2), cast(Point, Unregistered(3))]),
            _qualified(Unregistered),
            "$.points[1]",
        ),
        ([Color.RED], _qualified(Color), "$[0]"),
        ({"m": Mode.FAST}, _qualified(Mode), "$.m"),
        (complex(1, 2), "complex", "$"),
        (timedelta(1), "datetime.timedelta", "$"),
        (
            [time(tzinfo=timezone(timedelta(microseconds=1)))],
            "datetime.time with a sub-second UTC offset",
            "$[0]",
        ),
        (
            {"d": datetime(2000, 1, 1, tzinfo=timezone(timedelta(hours=1, microseconds=5)))},
            "datetime.datetime with a sub-second UTC offset",
            "$.d",
        ),
    ],
)
def test_unencodable_names_type_and_path(value: Any, type_name: str, path: str) -> None:
    with pytest.raises(UnencodableValueError) as info:
        encode(value)
    assert (info.value.type_name, info.value.path) == (type_name, path)
    assert "register" in str(info.value)


def test_subclass_of_registered_class_is_unencodable() -> None:
    @dataclass(frozen=True)
    class Point3(Point):
        z: int = 0

    with pytest.raises(UnencodableValueError):
        encode(Point3(1, 2, 3))


def _nested(depth: int) -> list[Any]:
    """``depth`` lists, one inside the other: ``[[]]`` is 2."""
    value: list[Any] = []
    for _ in range(depth - 1):
        value = [value]
    return value


def test_deep_nesting_and_cycles() -> None:
    deep = _nested(100_000)
    with pytest.raises(UnencodableValueError, match="nested more than 300 arrays and objects"):
        encode(deep)
    with pytest.raises(CheckpointCorruptError, match="nested more than 300 arrays and objects"):
        decode(deep)
    deep_dict: dict[str, Any] = {}
    for _ in range(100_000):
        deep_dict = {"a": deep_dict}
    with pytest.raises(CheckpointCorruptError):
        decode(deep_dict)
    cycle: list[Any] = []
    cycle.append(cycle)
    with pytest.raises(UnencodableValueError, match="or cyclic"):
        encode(cycle)
    assert digest((cycle,), {}) is None


# Each kind of container at the limit, alone and wrapped in lists up to it: the depth is the
# encoding's, counted by the codec, so Python 3.11 (about 490 levels of recursion here) and
# 3.12+ (about 990) store and refuse the same values.
_AT_DEPTH = {
    "list": lambda inner: [inner],
    "dict": lambda inner: {"k": inner},
    "tuple": lambda inner: (inner,),  # {"$t": "tuple", "v": [...]}: two levels
    "int-keyed dict": lambda inner: {1: inner},  # {"$t": "dict", "v": [[1, ...]]}: three
    "dataclass": lambda inner: Box(inner),  # {"$t": "dataclass", "n": ..., "v": {...}}: two
}


def _json_depth(data: Any) -> int:
    """How deep JSON data nests (``[1]`` is 1), walked without recursion."""
    deepest, stack = 0, [(data, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict | list):
            deepest = max(deepest, depth)
            children = item.values() if isinstance(item, dict) else item
            stack.extend((child, depth + 1) for child in children)
    return deepest


@pytest.mark.parametrize("kind", sorted(_AT_DEPTH))
@pytest.mark.parametrize("leaf", [1, None, 2**70, float("nan"), b"x", date(2026, 1, 2)])
def test_the_deepest_encoding_decodes_and_one_level_more_is_refused_by_both(
    kind: str, leaf: Any
) -> None:
    wrap = _AT_DEPTH[kind]
    value: Any = leaf
    while True:
        deeper = wrap(value)
        try:
            encode(deeper)
        except UnencodableValueError:
            break
        value = deeper
    with pytest.raises(UnencodableValueError, match="nested more than 300 arrays and objects"):
        encode(wrap(value))
    encoded = encode(value)
    assert _json_depth(encoded) in (MAX_DEPTH - 2, MAX_DEPTH - 1, MAX_DEPTH)
    assert decode(json.loads(json.dumps(encoded))) == value or leaf != leaf  # nan != nan
    # The refused value's encoding, built by hand one level deeper, is refused when read too.
    with pytest.raises(CheckpointCorruptError, match="nested more than 300"):
        decode([encoded] if _json_depth(encoded) == MAX_DEPTH else [[[encoded]]])


# --- corrupt data ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "data",
    [
        {"$t": "nope", "v": 1},
        {"$t": 3, "v": 1},
        {"$t": "tuple"},
        {"$t": "tuple", "v": [1], "extra": 2},
        {"$t": "tuple", "v": "ab"},
        {"$t": "float", "v": "NaN"},
        {"$t": "set", "v": [[1]]},
        {"$t": "dict", "v": [[1, 2, 3]]},
        {"$t": "dict", "v": [[[1], 2]]},
        {"$t": "bytes", "v": "not base64!"},
        {"$t": "bytes", "v": "é"},
        {"$t": "datetime", "v": "2020-13-45"},
        {"$t": "date", "v": 20200101},
        {"$t": "time", "v": "25:00"},
        {"$t": "uuid", "v": "xyz"},
        {"$t": "uuid", "v": 5},
        {"$t": "decimal", "v": "1.2.3"},
        {"$t": "path", "v": None},
        {"$t": "dataclass", "n": _qualified(Point), "v": {"x": 1}},
        {"$t": "dataclass", "n": _qualified(Point), "v": {"x": 1, "y": 2, "$t": 3}},
        {"$t": "dataclass", "n": _qualified(Point), "v": [1, 2]},
        {"$t": "dataclass", "n": _qualified(User), "v": {}},
        {"$t": "model", "n": _qualified(Point), "v": {}},
        {"$t": "model", "n": _qualified(User), "v": {"userId": "x"}},
        {"$t": "dataclass", "n": _qualified(Unregistered), "v": {"x": 1}},
        {"$t": "dataclass", "n": ["list"], "v": {}},
        [1, {"a": {"$t": "bogus", "v": 0}}],
        object(),
        (1, 2),
    ],
)
def test_corrupt_data_raises_only_checkpoint_corrupt(data: Any) -> None:
    with pytest.raises(CheckpointCorruptError) as info:
        decode(data, where="run-1.3")
    assert info.value.where == "run-1.3"


# --- digests ---------------------------------------------------------------------------------


def test_digest_golden_value() -> None:
    # A change here means the canonical form changed and every stored digest is now stale.
    args = (1, "a", {3, 2}, (None, 1.5), b"x")
    kwargs = {"when": date(2020, 1, 2), "k": {"z": [True]}}
    assert canonical_json(encode([list(args), kwargs])) == (
        '[[1,"a",{"$t":"set","v":[2,3]},{"$t":"tuple","v":[null,1.5]},{"$t":"bytes","v":"eA=="}],'
        '{"k":{"z":[true]},"when":{"$t":"date","v":"2020-01-02"}}]'
    )
    assert digest(args, kwargs) == "eee7fb687fba16b5"  # format version 2: BLAKE3
    assert digest(args, kwargs, version=1) == "9b19f5293cd46c4d"  # version 1: blake2b


def test_digests_of_string_arguments_are_what_earlier_versions_recorded() -> None:
    # Golden values written by the stdlib-only codec: the fast path for str arguments must
    # produce the same canonical bytes (escapes, UTF-8, a lone surrogate), or stored digests
    # stop matching and every resume diverges.
    cases = [("a",), ("x" * 1_000_000,), ('é\n"\\\x00\x7f\u2028',), ("\ud800",), (), ("a", "b")]
    assert [digest(args, {}, version=1) for args in cases] == [
        "3ee390f5df9cfe6b", "77abc79261e5a458", "67a883bb8e719d21",
        "3de33ec0d1222c37", "c3228f8cf811caaf", "763ba4f58254b95f",
    ]  # fmt: skip
    # Format version 2's (BLAKE3), first written by the codec with the fast path.
    assert [digest(args, {}) for args in cases] == [
        "eacd93674beafd89", "70c6bd65d7eb6840", "6114be4e8cd0820b",
        "d410093f714546c8", "2707ccdef088c2fb", "596a313582dd1879",
    ]  # fmt: skip


def test_digests_of_scalar_arguments_are_what_earlier_versions_recorded() -> None:
    # Golden values written before ints, bools and None took the fast path (orjson): each
    # boundary of orjson's 64-bit ints and the first ints beyond them must hash as before.
    cases = [
        (0,), (-1, 1), (2**63 - 1, -(2**63)), (2**64 - 1,), (2**64, -(2**63) - 1),
        (True, False, None), ("a", 7, None, True),
    ]  # fmt: skip
    assert [digest(args, {}, version=1) for args in cases] == [
        "598959210bcb1296", "bcc66c756a7d3561", "ade6b1ce35b43468", "56fc4e6ea7320639",
        "c14ab14509b19156", "104fceaf68f65a49", "31715f08bb5ff3dd",
    ]  # fmt: skip
    assert [digest(args, {}) for args in cases] == [
        "e75d8f8f35327134", "a4b80be8bb04e320", "755ad4d9dd2fc40c", "8f441a03ce72a85e",
        "31ac572e61c58c6c", "1651cb35930f901b", "b6edbfd578dcee20",
    ]  # fmt: skip


def test_digest_equality_and_difference() -> None:
    base = digest((1, [2, 3]), {"a": "x"})
    assert base is not None
    assert len(base) == 16
    assert int(base, 16) >= 0
    assert digest((1, [2, 3]), {"a": "x"}) == base
    assert digest((), {"a": 1, "b": 2}) == digest((), {"b": 2, "a": 1})
    others = [
        digest((1, [2, 4]), {"a": "x"}),
        digest((1, (2, 3)), {"a": "x"}),
        digest((1, [2, 3]), {"a": b"x"}),
        digest((1, [2, 3], "x"), {}),
        digest((True, [2, 3]), {"a": "x"}),
        digest((1.0, [2, 3]), {"a": "x"}),
    ]
    assert base not in others
    assert len(set(others)) == len(others)


def test_digest_of_sets_ignores_insertion_order() -> None:
    words = [f"w{i}" for i in range(50)]
    forward, backward = set(), set()
    for w in words:
        forward.add(w)
    for w in reversed(words):
        backward.add(w)
    assert digest((forward,), {}) == digest((backward,), {})
    assert digest((frozenset({1, "a", (2,)}),), {}) == digest((frozenset({(2,), "a", 1}),), {})


def test_digest_is_stable_across_hash_seeds() -> None:
    code = (
        "from wfctl._records._codec import digest;"
        "print(digest(({'a', 'b', 'c', 'dd', 'e'}, frozenset({'x', 'y'})), {'s': {'p', 'q'}}))"
    )
    seen = {
        subprocess.run(
            [sys.executable, "-c", code],
            cwd=ROOT,
            env={"PYTHONHASHSEED": seed, "PATH": ""},
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
        for seed in ("1", "2", "3")
    }
    assert len(seen) == 1


@pytest.mark.parametrize(
    ("args", "kwargs"),
    [((object(),), {}), ((), {"a": [1, object()]}), ((Unregistered(1),), {})],
)
def test_digest_none_for_unencodable(args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
    assert digest(args, kwargs) is None


def test_canonical_json_form() -> None:
    assert canonical_json({"b": [1, "é"], "a": None}) == '{"a":null,"b":[1,"é"]}'
    with pytest.raises(ValueError, match="JSON compliant"):
        canonical_json(float("nan"))


# --- properties ------------------------------------------------------------------------------

# Real zones have at most whole-second offsets; sub-second ones are refused (tested above).
OFFSETS = st.integers(-86399, 86399).map(lambda s: timezone(timedelta(seconds=s)))
HASHABLE_LEAVES = (
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False)
    | st.text()
    | st.binary()
    | st.dates()
    | st.datetimes(timezones=st.none() | OFFSETS)
    | st.uuids()
    | st.decimals(allow_nan=False)
)
HASHABLE = st.recursive(
    HASHABLE_LEAVES,
    lambda inner: st.tuples(inner, inner) | st.frozensets(inner, max_size=4),
    max_leaves=6,
)
LEAVES = (
    HASHABLE_LEAVES
    | st.floats()
    | st.decimals()
    | st.times(timezones=st.none() | OFFSETS)
    | st.builds(PurePosixPath, st.text())
    | st.builds(bytearray, st.binary())
    | st.builds(Point, st.integers(), st.integers())
)
KEYS = st.text() | st.sampled_from(["$t", "v", "n"])


def _containers(inner: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    return (
        st.lists(inner, max_size=4)
        | st.lists(inner, max_size=4).map(tuple)
        | st.dictionaries(KEYS, inner, max_size=4)
        | st.dictionaries(HASHABLE, inner, max_size=4)
        | st.sets(HASHABLE, max_size=4)
        | st.frozensets(HASHABLE, max_size=4)
        | st.builds(Shape, st.text(), st.lists(st.builds(Point, st.integers(), st.integers())))
    )


VALUES = st.recursive(LEAVES, _containers, max_leaves=20)


@settings(max_examples=300, deadline=None)
@given(VALUES)
def test_every_supported_value_round_trips(value: Any) -> None:
    encoded = encode(value)
    decoded = round_trip(value)
    assert same(value, decoded)
    # Re-encoding the decoded value is a fixed point, so digests survive a restore.
    assert canonical_json(encode(decoded)) == canonical_json(encoded)


TAGS = st.sampled_from(
    [
        "float",
        "tuple",
        "set",
        "frozenset",
        "dict",
        "bytes",
        "datetime",
        "date",
        "time",
        "uuid",
        "decimal",
        "path",
        "dataclass",
        "model",
    ]
)
NAMES = st.sampled_from([_qualified(Point), _qualified(Shape), _qualified(User), "os.system"])
JSON_SCALARS = (
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=8)
    | st.sampled_from(["nan", "inf", "2020-01-02", "12:00", "aGk=", "1.5", "x", "y", "userId"])
)


def _json_containers(inner: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    well_shaped = st.fixed_dictionaries({"$t": TAGS, "v": inner}) | st.fixed_dictionaries(
        {"$t": st.sampled_from(["dataclass", "model"]), "n": NAMES, "v": inner}
    )
    misshapen = st.fixed_dictionaries(
        {"$t": TAGS | st.text(max_size=3) | inner}, optional={"v": inner, "n": NAMES | inner}
    )
    return (
        st.lists(inner, max_size=4)
        | st.dictionaries(st.text(max_size=4) | st.just("$t"), inner, max_size=4)
        | well_shaped
        | misshapen
    )


# Real encodings among the leaves, so garbage also wraps (and is wrapped by) valid tagged data.
JSON_DATA = st.recursive(JSON_SCALARS | VALUES.map(encode), _json_containers, max_leaves=25)


@settings(max_examples=300, deadline=None)
@given(JSON_DATA)
def test_decode_arbitrary_json_raises_only_corrupt(data: Any) -> None:
    # Returning normally is fine too; any other exception type fails the test.
    with contextlib.suppress(CheckpointCorruptError):
        decode(data)


@settings(max_examples=300, deadline=None)
@given(
    tag=st.sampled_from(["dataclass", "model"]),
    name=st.sampled_from(["os.system", "subprocess.Popen", "antigravity.Fly", "this.s"])
    | st.text(),
    v=JSON_DATA,
)
def test_decode_never_imports(tag: str, name: str, v: Any) -> None:
    before = set(sys.modules)
    with pytest.raises(CheckpointCorruptError):
        decode({"$t": tag, "n": name, "v": v})
    assert set(sys.modules) == before
    assert "antigravity" not in sys.modules


@settings(max_examples=300, deadline=None)
@given(st.lists(st.text(), max_size=5))
def test_digest_of_string_arguments_matches_the_canonical_form(args: list[str]) -> None:
    # digest() writes all-str calls out directly; it must hash exactly the canonical text.
    data = canonical_json(encode([args, {}])).encode("utf-8", "surrogatepass")
    assert digest(tuple(args), {}) == blake3.blake3(data).hexdigest(8)
    assert digest(tuple(args), {}, version=1) == hashlib.blake2b(data, digest_size=8).hexdigest()


@pytest.mark.parametrize(
    ("tag", "name", "hint"),
    [
        ("dataclass", "app.models.Order", "register it with wfctl.register_type"),
        ("model", "app.build.<locals>.Draft", "it is defined inside a function"),
    ],
)
def test_a_class_not_registered_here_is_named_not_called_corrupt(
    tag: str, name: str, hint: str
) -> None:
    with pytest.raises(UnregisteredTypeError) as info:
        decode({"$t": tag, "n": name, "v": {}}, "record 3")
    assert isinstance(info.value, CheckpointCorruptError)  # handled as before
    message = str(info.value)
    assert message.startswith("record 3: the "), message
    assert repr(name) in message and hint in message and "corrupt" not in message
    assert (info.value.where, info.value.name) == ("record 3", name)
