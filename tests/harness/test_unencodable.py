"""Values that cannot be stored fail where they are produced, naming the key and the type,
and nothing partial reaches the journal (checked byte for byte on the file storage).

Complements ``tests/engine/test_pause_resume.py`` (which checks the error on the memory
storage) at the storage level: inputs, step results (alone and beside siblings that share a
group commit), state and outputs set inside a step, request data, and answers to a pause. A
hypothesis test round-trips arbitrary encodable results through the journal and a restore.
"""

from __future__ import annotations

import asyncio
import dataclasses
import datetime as dt
import json
from decimal import Decimal
from pathlib import Path
from typing import Any
from uuid import UUID

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.conftest import failure_of
from tests.harness import harness_workload as W
from wfctl import (
    FileCheckpointStorage,
    RunContext,
    UnencodableValueError,
    step,
    workflow,
)


class Opaque:
    """A class nobody registered."""


@dataclasses.dataclass
class Unregistered:
    when: dt.datetime


def journal(store: Path, run_id: str) -> Path:
    return store / "runs" / run_id / "journal.jsonl"


def step_keys(store: Path, run_id: str) -> list[str]:
    chain = asyncio.run(FileCheckpointStorage(store).load_chain(run_id))
    return [r["key"] for c in chain if c.kind == "step" for r in c.data["steps"]]


def test_an_unencodable_input_writes_nothing(tmp_path: Path) -> None:
    store = tmp_path / "store"
    wf = W.pipeline.build(checkpoint_storage=FileCheckpointStorage(store))
    for value, type_name in ((Opaque(), "Opaque"), ({"a": [1, {2, Opaque()}]}, "Opaque")):
        with pytest.raises(UnencodableValueError) as info:
            asyncio.run(wf.run(value, run_id="r1"))
        assert info.value.key == "<input>" and type_name in info.value.type_name
    assert not store.exists()  # not even the store root was created


@pytest.mark.parametrize(
    ("bad", "type_name", "path"),
    [
        (Opaque(), "Opaque", "$"),
        (
            {"items": [1, 2, {"when": Unregistered(dt.datetime(2026, 1, 1))}]},
            "Unregistered",
            "$.items[2].when",
        ),
        ([1, (2, {3: lambda: 4})], "function", None),
        (type("Str", (str,), {})("a str subclass"), "Str", "$"),
    ],
    ids=["object", "nested-dataclass", "lambda-in-dict", "str-subclass"],
)
def test_an_unencodable_result_fails_its_step_and_leaves_no_record(
    tmp_path: Path, bad: Any, type_name: str, path: str | None
) -> None:
    store = tmp_path / "store"

    @step
    async def fine(i: int) -> int:
        return i

    @step
    async def broken(i: int) -> Any:
        return bad

    @workflow(name="unencodable")
    async def flow() -> Any:
        await fine(0)
        parts = await asyncio.gather(fine(1), broken(2), fine(3))  # one group commit
        return parts

    with pytest.raises(UnencodableValueError) as caught:
        asyncio.run(flow.build(checkpoint_storage=FileCheckpointStorage(store)).run(run_id="r"))
    error = failure_of(caught).error
    assert error.key == "broken#0" and type_name in error.type_name
    if path is not None:
        assert error.path == path
    assert "broken#0" in str(error) and type_name in str(error)
    keys = step_keys(store, "r")
    assert "broken#0" not in keys
    assert set(keys) == {"fine#0", "fine#1", "fine#2"}  # the siblings' results are kept
    mentions = [line for line in journal(store, "r").read_bytes().splitlines() if b"broken" in line]
    assert b'"kind":"failed"' in mentions[-1]
    for line in mentions[:-1]:  # a sibling's commit may say the call failed: never a result
        data = json.loads(line)["data"]
        assert [f["key"] for f in data["failures"]] == ["broken#0"]
        assert "broken#0" not in [record["key"] for record in data["steps"]]


def test_unencodable_state_output_and_request_data_are_named(tmp_path: Path) -> None:
    store = tmp_path / "store"
    cases = {
        "state": ("<state k>", "Opaque"),
        "output": ("<output>", "Opaque"),
        "request": ("request#0", "Opaque"),
    }

    @step
    async def effect(kind: str, ctx: RunContext) -> int:
        if kind == "state":
            ctx.set_state("k", Opaque())
        elif kind == "output":
            await ctx.yield_output(Opaque())
        return 1

    @workflow(name="effects")
    async def flow(kind: str, ctx: RunContext) -> Any:
        await effect("warm-up")
        if kind == "request":
            return await ctx.request_info(Opaque())
        return await effect(kind)

    wf = flow.build(checkpoint_storage=FileCheckpointStorage(store))
    for kind, (key, type_name) in cases.items():
        with pytest.raises(UnencodableValueError) as caught:
            asyncio.run(wf.run(kind, run_id=f"r-{kind}"))
        error = failure_of(caught).error
        assert key in str(error) and type_name in str(error), str(error)
        keys = step_keys(store, f"r-{kind}")
        assert keys == ["effect#0"], keys  # the failing call's record was never written


def test_an_unencodable_answer_leaves_the_paused_run_untouched(tmp_path: Path) -> None:
    store = tmp_path / "store"
    storage = FileCheckpointStorage(store)
    wf = W.pipeline.build(checkpoint_storage=storage)
    paused = asyncio.run(wf.run(W.spec_for(4), run_id="r"))
    before = journal(store, "r").read_bytes()
    with pytest.raises(UnencodableValueError) as info:
        asyncio.run(wf.run(checkpoint_id=paused.checkpoint_id, responses={"approve": Opaque()}))
    assert info.value.key == "approve" and "Opaque" in str(info.value)
    assert journal(store, "r").read_bytes() == before
    assert not storage._is_locked("r")  # internal probe: the lock was given back
    done = asyncio.run(wf.run(checkpoint_id=paused.checkpoint_id, responses={"approve": "yes"}))
    assert done.status == "completed" and done.get_outputs() == [W.reference(W.spec_for(4))[1]]


def test_an_int_longer_than_json_decimal_limits_is_stored_and_restored(tmp_path: Path) -> None:
    """Python refuses to print ints over 4300 digits as decimal (so JSON cannot hold them);
    the codec stores them as tagged hex, so they neither fail the group commit nor come back
    wrong."""
    store = tmp_path / "store"
    huge = 10**5000 + 7

    @step
    async def number(i: int) -> int:
        await asyncio.sleep(0)  # all four finish in one loop iteration: one group commit
        return huge if i == 2 else i

    @workflow(name="huge-int")
    async def flow() -> Any:
        return await asyncio.gather(*(number(i) for i in range(4)))

    wf = flow.build(checkpoint_storage=FileCheckpointStorage(store))
    result = asyncio.run(wf.run(run_id="r"))
    assert result.status == "completed" and result.get_outputs() == [[0, 1, huge, 3]]
    assert set(step_keys(store, "r")) == {"number#0", "number#1", "number#2", "number#3"}
    again = asyncio.run(wf.run(checkpoint_id=result.checkpoint_id))
    assert again.get_outputs() == [[0, 1, huge, 3]] and not again.executed


# --- encodable values survive the journal and a restore ---------------------------------------

_scalars = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(10**40), max_value=10**40)
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.text(max_size=20)
    | st.binary(max_size=20)
    | st.decimals(allow_nan=False, allow_infinity=False, places=3)
    | st.uuids()
    | st.dates()
    | st.datetimes(timezones=st.just(dt.UTC) | st.none())
)
_values = st.recursive(
    _scalars,
    lambda inner: (
        st.lists(inner, max_size=4)
        | st.tuples(inner, inner)
        | st.dictionaries(st.text(max_size=5), inner, max_size=4)
        | st.dictionaries(st.integers(), inner, max_size=3)
        | st.frozensets(st.integers() | st.text(max_size=5), max_size=4)
    ),
    max_leaves=12,
)

EXAMPLES = 60


def _same(a: Any, b: Any) -> bool:
    """Equality that treats nan as equal to itself (and checks types exactly)."""
    if type(a) is not type(b):
        return False
    if isinstance(a, float):
        return a == b or (a != a and b != b)
    if isinstance(a, (list, tuple)):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    return bool(a == b)


@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(value=_values)
def test_any_encodable_result_round_trips_through_the_journal(
    tmp_path_factory: pytest.TempPathFactory, value: Any
) -> None:
    store = tmp_path_factory.mktemp("roundtrip") / "store"

    @step
    async def produce() -> Any:
        return value

    @workflow(name="roundtrip")
    async def flow() -> Any:
        return await produce()

    storage = FileCheckpointStorage(store)
    first = asyncio.run(flow.build(checkpoint_storage=storage).run(run_id="r"))
    assert first.status == "completed", first.error
    restored = asyncio.run(
        flow.build(checkpoint_storage=FileCheckpointStorage(store)).run(
            checkpoint_id="r.1", new_run=True
        )
    )
    assert restored.status == "completed" and list(restored.cached) == ["produce#0"]
    outputs = restored.get_outputs()  # the return value, unless it is None
    assert outputs == [] if value is None else _same(outputs[-1], value), (outputs, value)
    storage.close()


def test_decimal_and_uuid_and_datetimes_keep_their_types(tmp_path: Path) -> None:
    value = {
        "d": Decimal("1.10"),
        "u": UUID(int=7),
        "t": dt.datetime(2026, 1, 1, tzinfo=dt.timezone(dt.timedelta(hours=2))),
    }

    @step
    async def produce() -> Any:
        return value

    @workflow(name="types")
    async def flow() -> Any:
        return await produce()

    store = tmp_path / "store"
    asyncio.run(flow.build(checkpoint_storage=FileCheckpointStorage(store)).run(run_id="r"))
    again = asyncio.run(
        flow.build(checkpoint_storage=FileCheckpointStorage(store)).run(
            checkpoint_id="r.1", new_run=True
        )
    )
    assert again.get_outputs() == [value]
    assert str(again.get_outputs()[0]["d"]) == "1.10"
