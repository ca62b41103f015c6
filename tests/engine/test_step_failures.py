"""A step call that fails for good while the run goes on is recorded, and a replay compares it.

The workflow caught the step's exception: the call left no result. Its failure (key, argument
digest, error) rides with the run's next commit, or gets a step record of its own before the
run's next run-level checkpoint; a run that fails with the error itself has its ``failed``
record say it. A replay of the run compares a call that fails again with that failure: the
same error and argument is ``same`` (an unchanged workflow replays as identical), anything
else ``changed``. Before, such a call had no counterpart and every replay said DIFFERS.
"""

from __future__ import annotations

import asyncio
import contextlib
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import arun
from wfctl import FileCheckpointStorage, step, workflow
from wfctl._drive._worker import _describe
from wfctl._inspect._diff import ReplayCalls
from wfctl._inspect._pairing import diff_steps
from wfctl._inspect._replay import replay
from wfctl._records._attempts import AttemptRecord, StepFailure
from wfctl._records._recorded import StepRecord
from wfctl._storage._journal import decode_record

#: What the flaky step does, by call: "raise <message>" or "return".
BEHAVIOUR: dict[str, str] = {}


@step
async def ok(x: int) -> int:
    return x + 1


@step
async def flaky(x: int) -> int:
    action = BEHAVIOUR.get("flaky", "raise bad")
    if action.startswith("raise "):
        raise ValueError(f"{action[6:]} {x}")
    return x


@workflow(name="caught")
async def caught(start: tuple[int, bool]) -> int:
    x, then = start
    a = await ok(x)
    try:
        a = await flaky(a)
    except ValueError:
        a += 10
    return await ok(a) if then else a


@workflow(name="wrapped")
async def wrapped(x: int) -> int:
    try:
        await flaky(x)
    except ValueError as exc:
        raise RuntimeError("gave up") from exc
    return x


@workflow(name="let_out")
async def let_out(x: int) -> int:
    await ok(x)
    return await flaky(x)


def records(store: Path, run_id: str) -> list[dict[str, Any]]:
    journal = store / "runs" / run_id / "journal.jsonl"
    return [decode_record(line, "t").to_dict() for line in journal.read_bytes().splitlines()]


def failures(store: Path, run_id: str) -> list[tuple[int, dict[str, Any]]]:
    return [
        (record["seq"], failure)
        for record in records(store, run_id)
        for failure in record["data"].get("failures", [])
    ]


def run(flow: Any, store: Path, run_id: str, *args: Any) -> Any:
    """Run ``flow``; its result, also when the run failed (a failure raises, the result on it)."""
    storage = FileCheckpointStorage(store)
    try:
        return arun(flow.build(checkpoint_storage=storage).run(*args, run_id=run_id))
    except Exception as exc:
        return exc.wfctl_result  # type: ignore[attr-defined]
    finally:
        storage.close()


def test_a_caught_failure_rides_with_the_next_commit(tmp_path: Path) -> None:
    BEHAVIOUR.clear()
    result = run(caught, tmp_path, "r", (1, True))
    assert result.status == "completed" and result.get_outputs() == [13]
    [(seq, failure)] = failures(tmp_path, "r")
    kinds = [record["kind"] for record in records(tmp_path, "r")]
    assert kinds == ["root", "step", "step", "completed"]  # no record of its own
    assert seq == 2  # with ok#1's result
    assert failure["key"] == "flaky#0"
    assert failure["error"] == {"type": "ValueError", "message": "bad 2"}
    assert isinstance(failure["digest"], str) and isinstance(failure["at"], float)


def test_a_caught_failure_with_no_step_after_it_gets_a_record_before_the_end(
    tmp_path: Path,
) -> None:
    BEHAVIOUR.clear()
    assert run(caught, tmp_path, "r", (1, False)).status == "completed"
    kinds = [record["kind"] for record in records(tmp_path, "r")]
    assert kinds == ["root", "step", "step", "completed"]
    [(seq, failure)] = failures(tmp_path, "r")
    assert seq == 2 and failure["key"] == "flaky#0"
    assert records(tmp_path, "r")[2]["data"]["steps"] == []


def test_a_failure_the_run_fails_with_is_said_by_the_failed_record_only(tmp_path: Path) -> None:
    BEHAVIOUR.clear()
    assert run(let_out, tmp_path, "r", 1).status == "failed"
    assert failures(tmp_path, "r") == []
    assert [record["kind"] for record in records(tmp_path, "r")] == ["root", "step", "failed"]
    assert records(tmp_path, "r")[-1]["data"]["step"] == "flaky#0"


def test_a_failure_the_run_fails_past_is_kept_beside_the_failed_record(tmp_path: Path) -> None:
    BEHAVIOUR.clear()
    assert run(wrapped, tmp_path, "r", 1).status == "failed"
    [(_, failure)] = failures(tmp_path, "r")
    assert failure["key"] == "flaky#0" and failure["error"]["message"] == "bad 1"
    failed = records(tmp_path, "r")[-1]
    assert failed["kind"] == "failed" and failed["data"]["error"]["type"] == "RuntimeError"


def test_a_resume_executes_a_failed_call_again(tmp_path: Path) -> None:
    # The failure informs; it is not served. A run interrupted after it (here: failed
    # after it, then retried) calls the step again, as it calls any call without a result.
    BEHAVIOUR.clear()
    assert run(wrapped, tmp_path, "r", 1).status == "failed"
    BEHAVIOUR["flaky"] = "return"
    storage = FileCheckpointStorage(tmp_path)
    try:
        resumed = arun(wrapped.build(checkpoint_storage=storage).resume("r"))
    finally:
        storage.close()
    assert resumed.status == "completed" and resumed.executed == ("flaky#0",)


def _replayed(store: Path, checkpoint_id: str) -> Any:
    storage = FileCheckpointStorage(store)
    try:
        return asyncio.run(replay(caught.build(checkpoint_storage=storage), checkpoint_id))
    finally:
        storage.close()


def test_an_unchanged_replay_of_a_caught_failure_is_identical(tmp_path: Path) -> None:
    BEHAVIOUR.clear()
    run(caught, tmp_path, "r", (1, True))
    for checkpoint in ("r.0", "r.1"):
        report = _replayed(tmp_path, checkpoint)
        assert report.identical, report.steps  # was DIFFERS: a failed row with no counterpart
        [row] = [row for row in report.steps if row.key == "flaky#0"]
        assert row.status == "same"
        assert row.source_error == row.error == "ValueError: bad 2"
        assert row.source_digest == row.replay_digest is not None
        assert [row.key for row in report.steps] == ["ok#0", "flaky#0", "ok#1"]


def test_a_replay_whose_call_fails_otherwise_or_returns_differs(tmp_path: Path) -> None:
    BEHAVIOUR.clear()
    run(caught, tmp_path, "r", (1, True))
    BEHAVIOUR["flaky"] = "raise worse"
    report = _replayed(tmp_path, "r.1")
    [row] = [row for row in report.steps if row.key == "flaky#0"]
    assert (row.status, row.source_error, row.error) == (
        "changed",
        "ValueError: bad 2",
        "ValueError: worse 2",
    )
    assert not report.identical
    BEHAVIOUR["flaky"] = "return"
    report = _replayed(tmp_path, "r.1")
    rows = {row.key: row for row in report.steps}
    assert rows["flaky#0"].status == "changed"
    assert rows["flaky#0"].replay_result == 2 and rows["flaky#0"].error is None
    assert rows["ok#1"].status == "changed"  # called with 2, not 12
    assert not report.identical
    assert report.steps[1].to_json()["source_error"] == "ValueError: bad 2"


class Unprintable(Exception):
    """An exception whose ``str()`` raises (a broken ``__str__``)."""

    def __str__(self) -> str:
        raise RuntimeError("no text for this one")


@step
async def unprintable(x: int) -> int:
    raise Unprintable()


@workflow(name="catches_unprintable")
async def catches_unprintable(x: int) -> int:
    try:
        await unprintable(x)
    except Unprintable:
        return -x
    return x


@workflow(name="lets_unprintable_out")
async def lets_unprintable_out(x: int) -> int:
    return await unprintable(x)


def test_an_exception_that_cannot_be_printed_reaches_the_workflow_as_itself(
    tmp_path: Path,
) -> None:
    # Describing the error (its event, its failure entry) called str() on it: the engine's
    # RuntimeError replaced the step's exception, and the body's except clause never ran.
    result = run(catches_unprintable, tmp_path, "r", 3)
    assert result.status == "completed" and result.get_outputs() == [-3]
    [(_, failure)] = failures(tmp_path, "r")
    assert failure["error"] == {"type": "Unprintable", "message": "<exception str() failed>"}


def test_a_run_failed_by_an_exception_that_cannot_be_printed_records_it(tmp_path: Path) -> None:
    result = run(lets_unprintable_out, tmp_path, "r", 3)
    assert result.status == "failed" and isinstance(result.error, Unprintable)
    failed = records(tmp_path, "r")[-1]
    assert failed["data"]["error"] == {"type": "Unprintable", "message": "<exception str() failed>"}
    assert failed["data"]["step"] == "unprintable#0"


@step
async def slow(x: int) -> int:
    await asyncio.Event().wait()  # never set: only a cancel ends it
    return x


@workflow(name="cancels")
async def cancels(mode: str) -> str:
    if mode == "taskgroup":  # a sibling's failure cancels the others
        try:
            async with asyncio.TaskGroup() as group:
                group.create_task(slow(1))
                group.create_task(flaky(2))
        except* ValueError:
            pass
    else:  # a timeout around the call cancels it (the call never ends by itself)
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(slow(1), 0.01)
    return mode


def test_a_call_the_workflow_cancels_is_recorded_and_replays_identical(tmp_path: Path) -> None:
    # Before, its replay row was "failed" (no result, no failure), and the replay DIFFERS.
    BEHAVIOUR.clear()
    for mode in ("taskgroup", "timeout"):
        store = tmp_path / mode
        assert run(cancels, store, "r", mode).status == "completed"
        entries = {f["key"]: f["error"]["type"] for _, f in failures(store, "r")}
        expected = {"slow#0": "CancelledError"}
        if mode == "taskgroup":
            expected["flaky#0"] = "ValueError"
        assert entries == expected, mode
        storage = FileCheckpointStorage(store)
        try:
            report = asyncio.run(replay(cancels.build(checkpoint_storage=storage), "r.0"))
        finally:
            storage.close()
        assert report.identical, (mode, report.steps)
        assert {row.key: row.status for row in report.steps} == dict.fromkeys(expected, "same")


def test_a_call_cancelled_because_the_run_is_stopped_is_not_a_failure(tmp_path: Path) -> None:
    started = asyncio.Event()

    @step
    async def blocked(x: int) -> int:
        started.set()
        await asyncio.Event().wait()
        return x

    @workflow(name="stopped")
    async def stopped(x: int) -> int:
        await ok(x)
        return await blocked(x)

    async def main() -> None:
        storage = FileCheckpointStorage(tmp_path)
        try:
            task = asyncio.ensure_future(
                stopped.build(checkpoint_storage=storage).run(1, run_id="r")
            )
            await started.wait()
            task.cancel()  # the caller gives up: the engine cancels the run's tasks
            with contextlib.suppress(BaseException):
                await task
        finally:
            storage.close()

    asyncio.run(main())
    assert failures(tmp_path, "r") == []


def test_a_replay_that_fails_with_an_exception_that_cannot_be_printed_reports_it(
    tmp_path: Path,
) -> None:
    run(lets_unprintable_out, tmp_path, "r", 3)
    storage = FileCheckpointStorage(tmp_path)
    try:
        report = asyncio.run(replay(lets_unprintable_out.build(checkpoint_storage=storage), "r.0"))
    finally:
        storage.close()
    assert report.replay_status == "failed"  # was a RuntimeError out of replay itself
    assert (report.error_type, report.error) == ("Unprintable", "<exception str() failed>")
    assert _describe(Unprintable()) == "Unprintable: <exception str() failed>"  # a worker's line


@pytest.mark.parametrize("at", [1e300, -1.0, float("nan"), float("inf"), True, "1"])
def test_an_entry_whose_time_has_no_date_reads_as_absent(at: Any) -> None:
    # A record edited with its checksum: log --json crashed showing 1e300 as a date.
    assert StepFailure.from_json({"key": "k", "error": {}, "at": at}) is None
    attempt = {"key": "k", "attempt": 1, "error": {}, "at": 1.0, "retry_at": at}
    assert AttemptRecord.from_json(attempt) is None
    assert StepFailure.from_json({"key": "k", "error": {}, "at": 1.7e9}) is not None


def test_a_failure_sorts_among_the_source_s_keys_where_it_came() -> None:
    def record(key: str) -> StepRecord:
        return StepRecord.from_json({"key": key, "digest": "d", "result": 1}, "test")

    # ok#0 recorded twice (a resumed run recorded it again), then the failure, then ok#1.
    source = [record("ok#0"), record("ok#0"), record("ok#1")]
    failure = StepFailure("flaky#0", "d", "ValueError", "bad", 1.0)
    calls = ReplayCalls(order=["ok#0", "flaky#0", "ok#1"])
    calls.served = {"ok#0": "ok#0", "ok#1": "ok#1"}
    calls.failures = {"flaky#0": failure}
    rows = diff_steps(source, calls, [(2, failure)])
    assert [(row.key, row.status) for row in rows] == [
        ("ok#0", "cached"),
        ("flaky#0", "same"),
        ("ok#1", "cached"),
    ]


def test_no_execute_says_a_recorded_failure_is_not_served(tmp_path: Path) -> None:
    BEHAVIOUR.clear()
    run(caught, tmp_path, "r", (1, True))
    storage = FileCheckpointStorage(tmp_path)
    try:
        flow = caught.build(checkpoint_storage=storage)
        report = asyncio.run(replay(flow, "r.3", execute=False))
    finally:
        storage.close()
    assert report.replay_status == "failed" and report.error_type == "ReplayDivergenceError"
    # Was "no recorded result and execution is off": true, but not why there is none.
    assert "its recorded call failed (ValueError: bad 2), a failure is not served" in (
        report.error or ""
    )
