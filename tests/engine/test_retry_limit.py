"""A step's retry limit holds across kills: attempts and waits made before a crash count.

A kill is played in-process: the run is held where the kill lands (in an attempt, or in a
backoff), the chain's head is noted, the run is cancelled, and whatever the cancellation wrote
after that head is cut (``storage.delete``), which leaves the chain a SIGKILL leaves. The
scenario takes any store, so the PostgreSQL tests run it too. ``tests/harness`` kills real
processes.
"""

from __future__ import annotations

import asyncio
import contextlib
from dataclasses import dataclass, field
from typing import Any, Literal

import pytest

from tests.conftest import arun, assert_one_chain
from tests.engine.test_policies import T0, FakeClock, using
from wfctl import (
    AttemptsExhaustedError,
    FileCheckpointStorage,
    InMemoryCheckpointStorage,
    Retry,
    RunContext,
    WorkflowEvent,
    attempts_of,
    step,
    workflow,
)
from wfctl._engine._restore import load_folded  # internal: what a resume folds
from wfctl._inspect._entries import log_entry  # internal: what ``log`` says of a record
from wfctl._records._payloads import ResumePayload, StepPayload  # internal: what the records hold
from wfctl.storage import RunStore

Where = Literal["attempt", "backoff"]


class KillingClock:
    """A clock whose waits serve ``served`` seconds, then block where a kill lands (if any of
    the wait is left); a wait of at most ``served`` seconds passes."""

    def __init__(self, served: float | None) -> None:
        self.t = T0
        self.served = served
        self.slept: list[float] = []
        self.waiting = asyncio.Event()

    def now(self) -> float:
        return self.t

    async def sleep(self, seconds: float) -> None:
        self.slept.append(seconds)
        if self.served is not None and seconds > self.served:
            self.t += self.served
            self.waiting.set()
            await asyncio.Future()  # until the "kill" cancels it
        self.t += seconds
        await asyncio.sleep(0)


@dataclass
class CrashLoop:
    """What a run of the payment step saw over its kills and resumes."""

    calls: int = 0
    kills: int = 0
    error: BaseException | None = None
    slept: list[float] = field(default_factory=list)
    #: The next attempt each ``step_retrying`` event announced.
    retrying: list[int] = field(default_factory=list)
    #: The workflow, to resume the run again.
    workflow: Any = None


async def crash_loop(storage: RunStore, where: Where, cycles: int = 7) -> CrashLoop:
    """Run a step that always fails under ``Retry(attempts=3, initial=2, backoff=1)``, killing
    the run in each attempt (``attempt``) or one second into each backoff (``backoff``) and
    resuming it, up to ``cycles`` times or until it ends."""
    seen = CrashLoop()
    entered = asyncio.Event()
    clock = KillingClock(1.0 if where == "backoff" else None)

    @step(retries=Retry(attempts=3, initial=2.0, backoff=1.0, jitter=False))
    async def pay() -> None:
        seen.calls += 1
        if where == "attempt":
            entered.set()
            await asyncio.Future()  # until the "kill" cancels it
        raise ConnectionError("card declined")

    @workflow(name="payment", checkpoint_storage=storage)
    async def payment() -> None:
        await pay()

    gate = entered if where == "attempt" else clock.waiting

    def heard(event: WorkflowEvent) -> None:
        if event.kind == "step_retrying":
            seen.retrying.append(event.data["attempt"])

    with using(clock):  # type: ignore[arg-type]  # a clock of its own, as the seam takes
        for cycle in range(cycles):
            gate.clear()
            run = asyncio.ensure_future(
                payment.run(run_id="pay", on_event=heard)
                if cycle == 0
                else payment.resume("pay", on_event=heard)
            )
            held = asyncio.ensure_future(gate.wait())
            await asyncio.wait({run, held}, return_when=asyncio.FIRST_COMPLETED)
            held.cancel()
            if run.done():
                seen.error = run.exception()
                break
            head = await storage.get_latest(run_id="pay")
            assert head is not None
            run.cancel()
            with contextlib.suppress(BaseException):
                await run
            await storage.delete(f"pay.{head.seq + 1}")  # what a SIGKILL leaves
            seen.kills += 1
    seen.slept = clock.slept
    seen.workflow = payment
    return seen


def during_attempts(seen: CrashLoop) -> None:
    """Check a loop killed in every attempt: three attempts, then the run fails without a
    fourth."""
    assert seen.calls == 3 and seen.kills == 3
    assert isinstance(seen.error, AttemptsExhaustedError)
    assert seen.error.key == "pay#0" and seen.error.attempts == 3
    assert [a.attempt for a in attempts_of(seen.error)] == [1, 2, 3]


def during_backoffs(seen: CrashLoop) -> None:
    """Check a loop killed one second into every backoff: three attempts, and each resume
    waits the second left (never a full backoff again)."""
    assert seen.calls == 3 and seen.kills == 2
    assert isinstance(seen.error, ConnectionError)
    assert [a.attempt for a in attempts_of(seen.error)] == [1, 2]
    assert seen.slept == [2.0, 1.0, 2.0, 1.0]


async def check_chain(storage: RunStore) -> None:
    """The run failed, in one chain whose resumes after kills say ``recover``."""
    chain = await storage.list_checkpoints(run_id="pay")
    assert_one_chain(chain)
    assert chain[-1].kind == "failed"
    reasons = [ResumePayload.of(c).reason for c in chain if c.kind == "resume"]
    assert reasons and set(reasons) == {"recover"}


@pytest.mark.parametrize("where", ["attempt", "backoff"])
def test_kills_never_add_attempts_on_the_file_store(tmp_path: Any, where: Where) -> None:
    async def main() -> CrashLoop:
        storage = FileCheckpointStorage(tmp_path)
        seen = await crash_loop(storage, where)
        await check_chain(storage)
        return seen

    seen = arun(main())
    (during_attempts if where == "attempt" else during_backoffs)(seen)


def test_a_kill_in_an_attempt_counts_it_and_resumes_after_its_backoff() -> None:
    async def main() -> tuple[CrashLoop, list[Any]]:
        storage = InMemoryCheckpointStorage()
        seen = await crash_loop(storage, "attempt", cycles=3)
        return seen, await storage.list_checkpoints(run_id="pay")

    seen, chain = arun(main())
    assert seen.calls == 3 and seen.kills == 3  # killed in attempts 1, 2 and 3
    assert seen.retrying == [2, 3]  # each resume announces the attempt after the cut one
    payloads = [StepPayload.of(c) for c in chain if c.kind == "step"]
    assert [s.attempt for p in payloads for s in p.started] == [1, 2, 3]
    cut = [a for p in payloads for a in p.attempts]
    assert [(a.attempt, a.error_type) for a in cut] == [(1, "AttemptCutOff"), (2, "AttemptCutOff")]
    # Its backoff counts from its start: time the kill and the resume took is served.
    assert [a.retry_at - a.at for a in cut] == [2.0, 2.0]


def test_resuming_a_failed_run_gives_its_steps_their_attempts_again(tmp_path: Any) -> None:
    async def main() -> tuple[CrashLoop, list[Any], BaseException]:
        storage = FileCheckpointStorage(tmp_path)
        seen = await crash_loop(storage, "backoff")
        assert seen.calls == 3
        with using(KillingClock(None)), pytest.raises(ConnectionError) as again:  # type: ignore[arg-type]
            await seen.workflow.resume("pay")
        return seen, await storage.list_checkpoints(run_id="pay"), again.value

    seen, chain, error = arun(main())
    assert seen.calls == 6  # three more attempts: the failed run's user asked for them
    assert [a.attempt for a in attempts_of(error)] == [1, 2]
    reasons = [ResumePayload.of(c).reason for c in chain if c.kind == "resume"]
    assert reasons == ["recover", "recover", "retry"]


def test_a_new_run_restored_from_a_killed_run_has_retries_of_its_own(tmp_path: Any) -> None:
    async def main() -> tuple[CrashLoop, BaseException, dict[str, Any]]:
        storage = FileCheckpointStorage(tmp_path)
        seen = await crash_loop(storage, "backoff")  # killed in two backoffs, then it failed
        chain = await storage.list_checkpoints(run_id="pay")
        # The head the last kill left: attempt 2 failed, one attempt left.
        killed = [c for c in chain if c.kind == "step" and StepPayload.of(c).attempts][-1]
        assert StepPayload.of(killed).attempts[0].attempt == 2
        with using(KillingClock(None)), pytest.raises(ConnectionError) as again:  # type: ignore[arg-type]
            await seen.workflow.run(checkpoint_id=killed.checkpoint_id, run_id="again")
        _, history = await load_folded(storage, "again")  # what a resume of it would count
        return seen, again.value, history.attempts

    seen, error, attempts = arun(main())
    assert seen.calls == 6  # the new run made three attempts of its own
    assert [a.attempt for a in attempts_of(error)] == [1, 2]
    assert [a.attempt for a in attempts["pay#0"]] == [1, 2]  # not its origin's too


def test_a_pause_inside_an_attempt_does_not_spend_it() -> None:
    storage = InMemoryCheckpointStorage()
    calls: list[str] = []

    @step(retries=Retry(attempts=2, initial=1.0, jitter=False))
    async def confirm(ctx: RunContext) -> None:
        calls.append("confirm")
        if len(calls) == 1:  # the first call asks; the answer is recorded for the others
            await ctx.request_info("charge the card?", str)
        raise ConnectionError("declined")

    @workflow(checkpoint_storage=storage)
    async def checkout() -> None:
        await confirm()

    async def main() -> tuple[BaseException, list[str]]:
        paused = await checkout.run()
        [request] = paused.get_request_info_events()
        with pytest.raises(ConnectionError) as failed:
            await checkout.resume(paused.run_id, responses={request.request_id: "yes"})
        chain = await storage.list_checkpoints(run_id=paused.run_id)
        return failed.value, [str(log_entry(c).detail) for c in chain if c.kind == "step"]

    with using(FakeClock()):
        error, details = arun(main())
    # Paused in attempt 1, it was not spent: after the answer, attempts 1 and 2 both run.
    assert calls == ["confirm"] * 3
    assert [a.attempt for a in attempts_of(error)] == [1]
    assert details[:2] == [
        "started confirm#0 attempt 1",
        "confirm#0 attempt 1 paused in, not counted",
    ]
