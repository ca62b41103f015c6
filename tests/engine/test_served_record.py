"""A resume of many cached calls: the record after them counts them, and holding them is cheap."""

from __future__ import annotations

import tracemalloc
from pathlib import Path

import pytest

from tests.conftest import arun, failure_of
from wfctl import FileCheckpointStorage, step, workflow
from wfctl._records._checkpoint import Checkpoint
from wfctl._records._payloads import served_count, served_keys
from wfctl._records._recorded import RecordedCalls, StepRecord

_fail = {"on": True}


@step
async def echo(i: int) -> int:
    return i


@workflow(name="counted")
async def counted(n: int) -> int:
    for i in range(n):
        await echo(i)
    if _fail["on"]:
        raise RuntimeError("fail after the steps")
    return n


def _ending_line(store: Path, n: int) -> bytes:
    """Fail a run of ``n`` steps, retry it (every step cached); return its ending line."""
    storage = FileCheckpointStorage(store, durability="none")
    wf = counted.build(checkpoint_storage=storage)
    _fail["on"] = True
    with pytest.raises(RuntimeError) as caught:
        arun(wf.run(n))
    failed = failure_of(caught)
    _fail["on"] = False
    done = arun(wf.resume(failed.run_id))
    assert done.status == "completed" and len(done.cached) == n
    journal = arun(storage.read_run(done.run_id))
    head = journal.checkpoints[-1]
    assert head.kind == "completed" and served_count(head) == n and served_keys(head) == ()
    lines = (store / "runs" / done.run_id / "journal.jsonl").read_bytes().splitlines()
    return lines[-1]


def test_the_record_after_many_cached_calls_is_as_small_as_after_few(tmp_path: Path) -> None:
    few = _ending_line(tmp_path / "few", 10)
    many = _ending_line(tmp_path / "many", 1000)
    # Same shape: only numbers grow (seq, parent, result, the count), by a few digits each;
    # 990 more keys listed would add over 10 KB.
    assert len(many) - len(few) < 32, (few, many)


def test_records_that_listed_served_keys_still_read() -> None:
    old = Checkpoint(
        run_id="r",
        seq=3,
        kind="completed",
        workflow_name="wf",
        timestamp="2026-01-01T00:00:00+00:00",
        previous_checkpoint_id="r.2",
        data={"result": 1, "outputs": [], "served": ["a#0", "b#0"]},
    )
    assert served_keys(old) == ("a#0", "b#0") and served_count(old) == 2


def _recorded_step(i: int) -> StepRecord:
    """A record as a resume holds one: a counted key, 100 characters of result, one argument."""
    return StepRecord(
        f"echo#{i}", "", "echo", f"{i:016x}", f"{i:09d}-" + "x" * 90, None, 1.3e-05, None, [i]
    )


def test_recorded_calls_hold_a_record_in_a_third_of_its_size() -> None:
    # internal: RecordedCalls is what a resume holds for every recorded step until it is
    # served. Measured per record: 588 B when each was held as read (a StepRecord with its
    # key, result, argument, digest and timing, and a bucket tuple), 256 B packed.
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        recorded = RecordedCalls(_recorded_step(i) for i in range(10_000))
        per_call = (tracemalloc.get_traced_memory()[0] - before) / 10_000
    finally:
        tracemalloc.stop()
    assert per_call < 350, per_call
    assert recorded.take("", "echo", None, f"{5:016x}", "echo#5") == _recorded_step(5)
    assert len(recorded) == 9_999


class _Text(str):
    """A string of a type ``marshal`` refuses: such a record is held as it is."""


@pytest.mark.parametrize(
    "record",
    [
        StepRecord("a/b#0", "a", "b", None, {"n": 2**80, "s": "\udc80", "f": -0.0}, None),
        StepRecord("k", "", "b", "d1", [1.5, True, None], "k", 0.25, {"outputs": [1]}),
        StepRecord("b#0", "", "b", "d2", 1, None, 0.0, None, [1, "x"], {"k": [2]}),
        StepRecord("b#1", "", "b", "d3", "r", None, 0.0, None, None, None, "opt_out"),
        StepRecord("b#2", "", "b", "d4", _Text("r"), None),
        StepRecord("b#3", "", "b", "d5", 2, None, 0.0, None, [3], None, None, True),
    ],
)
def test_a_record_is_served_as_it_was_recorded(record: StepRecord) -> None:
    recorded = RecordedCalls([record])
    assert recorded.unconsumed(record.scope, record.name, record.explicit) == [record]
    served = recorded.take(record.scope, record.name, record.explicit, record.digest, record.key)
    assert served == record and type(served.result) is type(record.result)  # type: ignore[union-attr]
    assert len(recorded) == 0


@pytest.mark.parametrize(
    ("args", "kwargs"),
    [
        (["a text handed on, " * 4000, 3], None),
        ([1], {"text": "\n".join(["a line of text"] * 4000), "n": 2}),
        (['"quoted", ' * 100 + "x" * 300], {}),
    ],
)
def test_a_held_record_keeps_of_its_arguments_what_a_divergence_shows(
    args: list[object], kwargs: dict[str, object] | None
) -> None:
    # A pipeline's record held until served would hold the text it was handed beside the
    # text it returned: only the result is served, and the arguments' first 200 characters
    # are all a divergence's message shows of them.
    record = StepRecord("e#0", "", "e", "d", "the result", None, 0.0, None, args, kwargs)
    recorded = RecordedCalls([record])
    held = recorded.unconsumed("", "e", None)[0]
    assert held.describe_args() == record.describe_args()
    assert held.result == record.result
    assert len(repr(held.args) + repr(held.kwargs)) < 1000


def test_identical_calls_are_served_in_order_preferring_their_own_key() -> None:
    first, second, third = (StepRecord(f"b#{i}", "", "b", "same", i, None) for i in range(3))
    recorded = RecordedCalls([first, second, third])
    assert recorded.take("", "b", None, "same", "b#1") == second
    assert recorded.take("", "b", None, "same", "other") == first
    assert recorded.unconsumed("", "b", None) == [third]
    assert recorded.take("", "b", None, "same", "b#2") == third
    assert recorded.take("", "b", None, "same", "b#3") is None
