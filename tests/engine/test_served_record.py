"""A resume of many cached calls: the record after them counts them, and holding them is cheap."""

from __future__ import annotations

import tracemalloc
from pathlib import Path

import pytest

from tests.conftest import arun
from wfctl import FileCheckpointStorage, step, workflow
from wfctl._checkpoint import Checkpoint
from wfctl._payloads import served_count, served_keys
from wfctl._recorded import RecordedCalls, StepRecord

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
    with pytest.raises(RuntimeError) as raised:  # a failed run raises its own error
        arun(wf.run(n))
    failed = raised.value.wfctl_result  # type: ignore[attr-defined]
    assert failed.status == "failed"
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


def test_recorded_calls_cost_little_memory_per_distinct_call() -> None:
    # internal: RecordedCalls is what a resume holds for every recorded step until it is served
    records = [
        StepRecord(f"echo#{i}", "", "echo", f"{i:016x}", i, None, 0.0, None) for i in range(10_000)
    ]
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        recorded = RecordedCalls(records)
        per_call = (tracemalloc.get_traced_memory()[0] - before) / len(records)
    finally:
        tracemalloc.stop()
    assert per_call < 300, per_call  # a deque per call cost over 700 bytes
    assert recorded.take("", "echo", None, f"{5:016x}", "echo#5") is records[5]
    assert len(recorded) == len(records) - 1
