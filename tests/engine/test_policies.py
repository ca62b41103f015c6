"""Step policies: retries with backoff, a timeout per attempt, and durable sleep.

Time comes from a fake clock set through ``wfctl._engine._policies.clock_var`` (internal, test-only):
nothing here really waits. A clock that ``holds`` blocks every wait until the run cancels it,
which is how a pause or a kill lands "during the backoff".
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import ObservedStorage, arun, assert_one_chain, failure_of
from tests.engine.test_crash import _wait_for
from wfctl import (
    FileCheckpointStorage,
    InMemoryCheckpointStorage,
    Retry,
    RunContext,
    WorkflowExitError,
    attempts_of,
    step,
    workflow,
)
from wfctl._engine._policies import clock_var  # internal: the test clock seam
from wfctl._records._payloads import FailedPayload, StepPayload  # internal: what the records hold

T0 = 1_000_000.0


class FakeClock:
    """A clock that only moves when the run sleeps; ``hold`` makes every wait block."""

    def __init__(self, now: float = T0, *, hold: bool = False) -> None:
        self.t = now
        self.slept: list[float] = []
        self.hold = hold
        self.waiting = asyncio.Event()

    def now(self) -> float:
        return self.t

    async def sleep(self, seconds: float) -> None:
        self.slept.append(seconds)
        if self.hold:
            self.waiting.set()
            await asyncio.Future()  # until the run cancels it
        self.t += seconds
        await asyncio.sleep(0)


@contextlib.contextmanager
def using(clock: FakeClock) -> Iterator[FakeClock]:
    token = clock_var.set(clock)
    try:
        yield clock
    finally:
        clock_var.reset(token)


class Flaky(Exception):
    pass


class Fatal(Exception):
    pass


def flaky_step(fails: int, error: type[Exception] = Flaky, **policy: Any) -> Any:
    calls: list[int] = []

    @step(name="call", **policy)
    async def call(x: int) -> str:
        calls.append(x)
        if len(calls) <= fails:
            raise error(f"failure {len(calls)}")
        return f"ok:{x}"

    call.calls = calls  # type: ignore[attr-defined]
    return call


def attempts_in(checkpoints: list[Any]) -> list[tuple[str, int, str]]:
    return [
        (a.key, a.attempt, a.error_type)
        for c in checkpoints
        if c.kind == "step"
        for a in StepPayload.of(c).attempts
    ]


def test_success_after_failures_records_each_attempt_and_serves_the_success() -> None:
    storage = InMemoryCheckpointStorage()
    call = flaky_step(2, retries=Retry(attempts=5, initial=1.0, backoff=2.0, jitter=False))

    @workflow(checkpoint_storage=storage)
    async def wf() -> str:
        return await call(1)

    events: list[Any] = []
    with using(FakeClock()) as clock:
        result = arun(wf.run(on_event=events.append))
    assert result.status == "completed" and result.result == "ok:1"
    assert clock.slept == [1.0, 2.0]  # initial, then initial * backoff
    chain = arun(storage.list_checkpoints(run_id=result.run_id))
    assert_one_chain(chain)
    assert attempts_in(chain) == [("call#0", 1, "Flaky"), ("call#0", 2, "Flaky")]
    retrying = [e.data for e in events if e.kind == "step_retrying"]
    assert [(d["attempt"], d["attempts"], d["delay"]) for d in retrying] == [
        (2, 5, 1.0),
        (3, 5, 2.0),
    ]
    # Replay serves the successful attempt's result: the body is not called again.
    again = arun(wf.run(checkpoint_id=chain[-1].checkpoint_id, new_run=True))
    assert again.result == "ok:1" and len(call.calls) == 3


def test_giving_up_raises_the_steps_own_exception_with_the_attempts() -> None:
    storage = InMemoryCheckpointStorage()
    call = flaky_step(99, retries=Retry(attempts=3, jitter=False))

    @workflow(checkpoint_storage=storage)
    async def wf() -> str:
        return await call(1)

    with using(FakeClock()), pytest.raises(Flaky) as caught:
        arun(wf.run())
    assert str(failure_of(caught).error) == "failure 3"
    assert [a.attempt for a in attempts_of(caught.value)] == [1, 2]
    assert len(call.calls) == 3


def test_non_retryable_errors_fail_at_once() -> None:
    storage = InMemoryCheckpointStorage()
    call = flaky_step(1, Fatal, retries=Retry(attempts=5, give_up_on=(Fatal,)))
    other = flaky_step(1, Fatal, retries=Retry(attempts=5, retry_on=(Flaky,)))

    @workflow(checkpoint_storage=storage)
    async def wf(which: int) -> str:
        return await (call if which == 0 else other)(1)

    with using(FakeClock()) as clock:
        for which, s in ((0, call), (1, other)):
            with pytest.raises(Fatal) as caught:
                arun(wf.run(which))
            assert attempts_of(failure_of(caught).error) == ()
            assert len(s.calls) == 1
    assert clock.slept == []


def test_sys_exit_after_failed_attempts_is_not_retried_and_keeps_them() -> None:
    storage = InMemoryCheckpointStorage()
    calls: list[int] = []

    # Even a retry_on that names BaseException does not retry an exit.
    @step(name="call", retries=Retry(attempts=5, jitter=False, retry_on=(BaseException,)))
    async def call(x: int) -> str:
        calls.append(x)
        if len(calls) == 1:
            raise Flaky("failure 1")
        sys.exit(7)

    @workflow(checkpoint_storage=storage)
    async def wf() -> str:
        return await call(1)

    with using(FakeClock()) as clock, pytest.raises(WorkflowExitError) as caught:
        arun(wf.run())
    assert len(calls) == 2 and clock.slept == [1.0]
    # The run's error stands in for the last attempt's SystemExit: the attempts before it are
    # on it, as on any step's final exception, and the run failed in that step.
    assert [a.attempt for a in attempts_of(caught.value)] == [1]
    assert "(attempt 2; 1 failed before it)" in caught.value.__notes__
    head = arun(storage.get_latest(run_id=failure_of(caught).run_id))
    assert head is not None and FailedPayload.of(head).step == "call#0"


def test_timeout_counts_as_a_retryable_failure() -> None:
    storage = InMemoryCheckpointStorage()
    calls: list[int] = []

    @step(timeout=0.01, retries=Retry(attempts=2, jitter=False))
    async def slow() -> str:
        calls.append(1)
        if len(calls) == 1:
            await asyncio.Future()  # never answers: the attempt times out
        return "fast"

    @workflow(checkpoint_storage=storage)
    async def wf() -> str:
        return await slow()

    with using(FakeClock()):
        result = arun(wf.run())
    assert result.result == "fast" and len(calls) == 2
    chain = arun(storage.list_checkpoints(run_id=result.run_id))
    assert attempts_in(chain) == [("slow#0", 1, "TimeoutError")]


def test_workflow_default_retries_and_a_step_override() -> None:
    storage = InMemoryCheckpointStorage()
    inherits = flaky_step(1)
    no_retry = flaky_step(1, retries=Retry(attempts=1))

    @workflow(checkpoint_storage=storage, step_retries=Retry(attempts=2, jitter=False))
    async def wf(which: int) -> str:
        return await (inherits if which == 0 else no_retry)(1)

    with using(FakeClock()):
        assert arun(wf.run(0)).result == "ok:1"
        with pytest.raises(Flaky):
            arun(wf.run(1))


def test_jitter_is_seeded_by_key_and_attempt() -> None:
    retry = Retry(initial=10.0, backoff=2.0, max_interval=15.0)
    assert retry.delay(1, "a#1") == retry.delay(1, "a#1")
    assert 5.0 <= retry.delay(1, "a#1") <= 10.0 and 7.5 <= retry.delay(3, "a#1") <= 15.0


def test_pause_during_backoff_pauses_at_once_and_resume_continues_the_schedule() -> None:
    storage = InMemoryCheckpointStorage()
    call = flaky_step(2, retries=Retry(attempts=5, initial=100.0, max_interval=1000, jitter=False))

    @workflow(checkpoint_storage=storage)
    async def wf() -> str:
        return await call(1)

    async def pause_while_backing_off(clock: FakeClock) -> Any:
        run = asyncio.ensure_future(wf.run(run_id="backoff", drain_timeout=3600))
        await clock.waiting.wait()  # the step is backing off
        await storage.request_pause("backoff")
        return await run

    clock = FakeClock(hold=True)
    with using(clock):
        result = arun(pause_while_backing_off(clock))
    assert result.status == "paused" and len(call.calls) == 1
    # Resumed 30 s later: attempt 2 waits only the 70 s left of its 100 s.
    later = FakeClock(T0 + 30)
    with using(later):
        resumed = arun(wf.resume("backoff"))
    assert resumed.result == "ok:1" and len(call.calls) == 3
    assert later.slept == [70.0, 200.0]
    chain = arun(storage.list_checkpoints(run_id="backoff"))
    assert_one_chain(chain)
    assert [a for _, a, _ in attempts_in(chain)] == [1, 2]


def test_durable_sleep_records_the_wake_up_time_and_resumes_what_is_left() -> None:
    storage = InMemoryCheckpointStorage()
    after: list[str] = []

    @step
    async def done() -> str:
        after.append("done")
        return "woke"

    @workflow(checkpoint_storage=storage)
    async def wf(ctx: RunContext) -> str:
        await ctx.sleep(3600)
        return await done()

    async def pause_while_sleeping(clock: FakeClock) -> Any:
        run = asyncio.ensure_future(wf.run(run_id="sleeper", on_event=events.append))
        await clock.waiting.wait()
        await storage.request_pause("sleeper")
        return await run

    events: list[Any] = []
    clock = FakeClock(hold=True)
    with using(clock):
        result = arun(pause_while_sleeping(clock))
    assert result.status == "paused" and after == []
    assert [e.data["seconds"] for e in events if e.kind == "sleeping"] == [3600]
    later = FakeClock(T0 + 3000)
    with using(later):
        resumed = arun(wf.resume("sleeper"))
    assert resumed.result == "woke" and later.slept == [600.0]


def test_retries_in_parallel_branches_share_group_commits() -> None:
    inner = InMemoryCheckpointStorage()
    storage = ObservedStorage(inner)
    gate = asyncio.Event()
    fails: dict[int, int] = {}

    @step(retries=Retry(attempts=3, jitter=False))
    async def branch(i: int) -> int:
        fails[i] = fails.get(i, 0) + 1
        if fails[i] == 1:
            raise Flaky(f"branch {i}")
        return i

    @workflow(checkpoint_storage=storage)  # type: ignore[arg-type]
    async def wf() -> list[int]:
        return list(await asyncio.gather(*(branch(i) for i in range(4))))

    async def go() -> Any:
        storage.gates[1] = gate  # hold the first commit after the root: the rest queue up
        run = asyncio.ensure_future(wf.run(run_id="fan"))
        await storage.save_started(1).wait()
        gate.set()
        return await run

    with using(FakeClock()):
        result = arun(go())
    assert result.result == [0, 1, 2, 3]
    chain = arun(inner.list_checkpoints(run_id="fan"))
    assert_one_chain(chain)
    assert sorted(attempts_in(chain)) == [(f"branch#{i}", 1, "Flaky") for i in range(4)]
    steps = [StepPayload.of(c) for c in chain if c.kind == "step"]
    # The four first attempts start, then fail, in one loop iteration: one group commit holds
    # the four starts, the next one the four failures.
    assert len(steps[0].started) == 4 and len(steps[1].attempts) == 4
    assert len(steps) < 12


@pytest.mark.parametrize("bad", [{"attempts": 0}, {"backoff": 0.5}, {"initial": -1}])
def test_invalid_policies_are_refused(bad: dict[str, Any]) -> None:
    with pytest.raises(TypeError):
        Retry(**bad)


def test_invalid_timeout_is_refused() -> None:
    with pytest.raises(TypeError):

        @step(timeout=0)
        async def s() -> None:
            pass


CHILD = str(Path(__file__).with_name("policy_child.py"))


def _kill_when_waiting(store: Path, run_id: str, mode: str) -> list[Any]:
    """Start the child; SIGKILL it once it waits (its marker file); return the run's chain."""
    proc = subprocess.Popen(
        [sys.executable, CHILD, str(store), run_id, mode],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    _wait_for(store / "ready", proc)  # written once the attempt or the sleep is durable
    proc.send_signal(signal.SIGKILL)
    proc.communicate(timeout=30)
    assert proc.returncode == -signal.SIGKILL
    return arun(FileCheckpointStorage(store).list_checkpoints(run_id=run_id))


def _resume_at(store: Path, run_id: str, mode: str, now: float) -> Any:
    """Resume in a child whose clock reads ``now`` and never waits; return what it printed."""
    done = subprocess.run(
        [sys.executable, CHILD, str(store), run_id, mode, str(now)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def test_sigkill_during_backoff_resumes_the_attempt_count(tmp_path: Path) -> None:
    chain = _kill_when_waiting(tmp_path, "killed", "run")
    [first] = [a for c in chain if c.kind == "step" for a in StepPayload.of(c).attempts]
    assert first.attempt == 1 and first.retry_at - first.at == 3600.0
    # It waits the 10 s left, attempt 2 fails (recorded as 2), attempt 3 succeeds.
    resumed = _resume_at(tmp_path, "killed", "resume", first.retry_at - 10)
    assert resumed == {"result": "ok", "slept": [10.0, 7200.0], "calls": 3}
    chain = arun(FileCheckpointStorage(tmp_path).list_checkpoints(run_id="killed"))
    assert_one_chain(chain)
    assert [a for _, a, _ in attempts_in(chain)] == [1, 2]


def test_sigkill_during_a_durable_sleep_waits_only_for_what_is_left(tmp_path: Path) -> None:
    chain = _kill_when_waiting(tmp_path, "napping", "nap")
    [sleep] = [r for c in chain if c.kind == "step" for r in StepPayload.of(c).steps]
    assert sleep.key == "sleep#0"
    resumed = _resume_at(tmp_path, "napping", "wake", sleep.result - 25)
    assert resumed == {"result": "woke", "slept": [25.0], "calls": 1}
