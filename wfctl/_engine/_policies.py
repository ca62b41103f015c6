"""Step policies: retries with backoff and a timeout per attempt, and durable sleep.

A policy is a layer around the one place a run calls a step's body (``Run._execute``): a step
without one takes the same path as before, one ``is None`` check away. With one,
:func:`call_with_policy` calls the body once per attempt, each under its own timeout, and
commits every failed attempt (:class:`AttemptRecord`) through the run's chain, in the same
group commit as step results, before it backs off; when the call may be retried, it commits
each attempt's start (:class:`AttemptStart`) before the attempt runs. A run that crashes or
pauses resumes the schedule: the attempt count goes on (an attempt it died in counts), it waits
only for what is left, and a call with no attempt left raises ``AttemptsExhaustedError``
instead of running again. Only a resume of a failed run, or a new run, starts the count afresh
(``History.forget_attempts``).

A step backing off, and a branch in :func:`durable_sleep`, is not running: it does not count as
work in flight, so a pause drains without waiting for it, and it is cancelled by the release.

Time comes from a :class:`Clock` (wall-clock seconds and an async sleep); tests swap it
through :data:`clock_var` so that no test really waits.
"""

from __future__ import annotations

import contextvars
import random
import time
from collections.abc import Callable, Coroutine, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, NoReturn, Protocol

from wfctl._errors import AttemptsExhaustedError
from wfctl._records._attempts import SLEEP_STEP, AttemptRecord, AttemptStart, StepFailure, iso
from wfctl._records._recorded import StepRecord

from ._events import error_message
from ._keys import ROOT_SCOPE, Scope, current_scope
from ._port import RunPort

if TYPE_CHECKING:
    from wfctl._errors import ReplayDivergenceError
    from wfctl._records._recorded import RecordedCalls

    from ._chain import CheckpointChain
    from ._pausing import PauseGate
    from ._stepkeys import StepKeys

__all__ = [
    "Clock",
    "PolicyRun",
    "Retry",
    "StepPolicy",
    "SystemClock",
    "attach_attempts",
    "attempts_of",
    "call_with_policy",
    "clock_var",
    "durable_sleep",
]


class Clock(Protocol):
    """Where a run's policies read the time and wait."""

    def now(self) -> float:
        """Seconds since the epoch (wall clock: recorded wake-up times survive a restart)."""
        ...

    async def sleep(self, seconds: float) -> None:
        """Wait ``seconds``."""
        ...


class SystemClock:
    """The real clock."""

    def now(self) -> float:
        """Return ``time.time()``."""
        return time.time()

    async def sleep(self, seconds: float) -> None:
        """``asyncio.sleep``."""
        import asyncio  # loaded by then: not at import (``wfctl runs`` never needs it)

        await asyncio.sleep(seconds)


#: The clock the next run reads, None for the real one (tests set a fake one; not public).
clock_var: contextvars.ContextVar[Clock | None] = contextvars.ContextVar(
    "wfctl_clock", default=None
)
SYSTEM_CLOCK = SystemClock()


@dataclass(frozen=True, slots=True)
class Retry:
    """How a step retries: ``attempts`` in all, waiting ``initial * backoff ** (n - 1)``
    seconds (at most ``max_interval``) after failed attempt ``n``.

    ``jitter`` waits a random 50-100% of that instead, seeded by the step's key and the
    attempt, so the schedule is the same every time. An exception is retried if it is an
    instance of ``retry_on`` and not of ``give_up_on``; a timeout (``TimeoutError``) is an
    ``Exception``, so it is retried by default.
    """

    attempts: int = 3
    backoff: float = 2.0
    initial: float = 1.0
    max_interval: float = 60.0
    jitter: bool = True
    retry_on: tuple[type[BaseException], ...] = (Exception,)
    give_up_on: tuple[type[BaseException], ...] = ()

    def __post_init__(self) -> None:
        from wfctl._errors import WorkflowDefinitionError

        if self.attempts < 1 or self.initial < 0 or self.backoff < 1 or self.max_interval < 0:
            raise WorkflowDefinitionError(
                f"invalid {self!r}: attempts >= 1, backoff >= 1, initial and max_interval >= 0"
            )

    def retries(self, error: BaseException) -> bool:
        """Whether ``error`` is worth another attempt."""
        return isinstance(error, self.retry_on) and not isinstance(error, self.give_up_on)

    def delay(self, attempt: int, key: str) -> float:
        """Seconds to wait after failed attempt ``attempt`` (1-based) of the call ``key``."""
        wait = min(self.initial * self.backoff ** (attempt - 1), self.max_interval)
        if self.jitter:
            wait *= random.Random(f"{key}#{attempt}").uniform(0.5, 1.0)
        return wait


@dataclass(frozen=True, slots=True)
class StepPolicy:
    """What a step declared: its retries (None: the workflow's) and its timeout per attempt."""

    retry: Retry | None = None
    timeout: float | None = None


def attempts_of(error: BaseException) -> tuple[AttemptRecord, ...]:
    """Return the failed attempts before ``error`` (raised by a step's last attempt)."""
    attempts: tuple[AttemptRecord, ...] = getattr(error, "wfctl_attempts", ())
    return attempts


def attach_attempts(error: BaseException, failed: Sequence[AttemptRecord]) -> None:
    """Give ``error``, raised by a step's last attempt, the ``failed`` attempts before it
    (:func:`attempts_of`) and a note ``(attempt N; M failed before it)``; none: nothing."""
    if not failed:
        return
    try:
        error.wfctl_attempts = tuple(failed)  # type: ignore[attr-defined]
        error.add_note(f"(attempt {len(failed) + 1}; {len(failed)} failed before it)")
    except AttributeError:  # pragma: no cover  # an exception without __dict__
        pass


class PolicyRun(RunPort[Any, Any], Protocol):
    """The running run, as a policy reaches it besides the port (:class:`~wfctl._engine._run.Run`
    is one)."""

    @property
    def clock(self) -> Clock:
        """The clock policies wait on."""
        ...

    @property
    def gate(self) -> PauseGate:
        """The run's steps in flight (a step backing off is not one)."""
        ...

    @property
    def step_retries(self) -> Retry | None:
        """The workflow's retries for steps that declare none."""
        ...

    @property
    def past_attempts(self) -> Mapping[str, Sequence[AttemptRecord]]:
        """The failed attempts recorded so far, by call key."""
        ...

    @property
    def past_starts(self) -> Mapping[str, AttemptStart]:
        """The last attempt start recorded so far, by call key (the retry limit's count)."""
        ...

    @property
    def past_failures(self) -> Mapping[str, StepFailure]:
        """The calls recorded as failed for good while the run went on, by call key."""
        ...

    @property
    def chain(self) -> CheckpointChain:
        """The run's chain of checkpoints."""
        ...

    @property
    def recorded(self) -> RecordedCalls:
        """The recorded results the run serves."""
        ...

    @property
    def executed(self) -> StepKeys:
        """The keys of the calls executed."""
        ...

    def served(self, key: str, record: StepRecord) -> None:
        """Note that the call ``key`` was served from ``record``."""
        ...

    def _diverge(self, error: ReplayDivergenceError, name: str) -> NoReturn:
        """Fail the run with a divergence."""
        ...


async def wait_out(run: PolicyRun, until: float, in_step: bool) -> None:
    """Wait until the epoch time ``until`` without counting as work in flight."""
    clock = run.clock
    if in_step:
        run.gate.step_ended()
    try:
        await clock.sleep(max(0.0, until - clock.now()))
    finally:
        if in_step:
            run.gate.step_started()


async def call_with_policy(
    run: PolicyRun,
    key: str,
    policy: StepPolicy,
    call: Callable[[], Coroutine[Any, Any, Any]],
) -> Any:
    """Call a step body (``call``) under ``policy``; return the first attempt's result that
    succeeds, or raise the last attempt's own exception with the attempts attached
    (:func:`attempts_of`).

    When the call may be retried, each attempt's start is committed before its body runs, so
    the limit counts the attempts a kill cut off. A resumed call goes on from what was
    recorded: its attempt number, and the wait left of its backoff.

    Raises:
        AttemptsExhaustedError: the call made all its attempts before this resume.
    """
    from ._pausing import PauseSignal  # imports asyncio: not at import (``wfctl runs``)

    retry = policy.retry if policy.retry is not None else run.step_retries
    counted = retry is not None and retry.attempts > 1
    failed = list(run.past_attempts.get(key, ()))
    start = run.past_starts.get(key)
    if retry is not None and start is not None and start.attempt > _last_attempt(failed):
        # The run stopped in this attempt, or after its last one failed for good.
        delay = retry.delay(start.attempt, key)
        failed.append(start.ended(delay, run.past_failures.get(key)))
        if start.attempt < retry.attempts:
            await run.chain.commit_attempt(failed[-1])  # so ``log`` says how it ended
            _retrying(run, failed[-1], retry)
    attempt = _last_attempt(failed) + 1
    if counted and retry is not None and attempt > retry.attempts:
        last = failed[-1]
        error = AttemptsExhaustedError(key, last.attempt, f"{last.error_type}: {last.message}")
        error.wfctl_attempts = tuple(failed)  # type: ignore[attr-defined]  # attempts_of
        raise error
    if failed:
        # A crash or a pause came while this call backed off: wait out what is left.
        await wait_out(run, failed[-1].retry_at, True)
    while True:
        if counted:
            await run.chain.commit_attempt(AttemptStart(key, attempt, run.clock.now()))
        try:
            if policy.timeout is None:
                return await call()
            import asyncio  # see SystemClock.sleep

            async with asyncio.timeout(policy.timeout):
                return await call()
        except PauseSignal:
            if counted:  # the run pauses in this attempt: it did not fail, it is taken back
                run.chain.note_withdrawn(AttemptStart(key, attempt, run.clock.now(), True))
            raise
        except (Exception, SystemExit) as exc:
            # A SystemExit is never retried, whatever retry_on says: the run loop fails the
            # run with it (Run._execute), carrying the attempts over.
            if (
                retry is None
                or attempt >= retry.attempts
                or not isinstance(exc, Exception)
                or not retry.retries(exc)
            ):
                attach_attempts(exc, failed)
                raise
            now = run.clock.now()
            delay = retry.delay(attempt, key)
            record = AttemptRecord(
                key, attempt, type(exc).__name__, error_message(exc), now, now + delay
            )
            failed.append(record)
            await run.chain.commit_attempt(record)
            _retrying(run, record, retry)
            await wait_out(run, record.retry_at, True)
            attempt += 1


def _retrying(run: PolicyRun, failed: AttemptRecord, retry: Retry) -> None:
    """Emit ``step_retrying``: attempt ``failed`` failed, the next one comes at its
    ``retry_at``."""
    run.emit(
        "step_retrying",
        failed.key,
        {
            "attempt": failed.attempt + 1,
            "attempts": retry.attempts,
            "delay": round(failed.retry_at - failed.at, 6),
            "retry_at": iso(failed.retry_at),
            "error": f"{failed.error_type}: {failed.message}",
        },
    )


def _last_attempt(failed: Sequence[AttemptRecord]) -> int:
    """The number of the last of a call's failed attempts (0: none)."""
    return failed[-1].attempt if failed else 0


async def durable_sleep(run: PolicyRun, seconds: float) -> None:
    """Sleep ``seconds`` inside a run, with the wake-up time recorded as a step result.

    The first run commits ``<scope>/sleep#<n>`` with the wake-up time before it waits; a run
    restored past it (after a kill or a pause) is served that time and waits only for what is
    left. Inside a step body the step's own result is what is durable: it is a plain sleep.
    """
    from ._effects import current_effects

    if current_effects().get() is not None:
        await run.clock.sleep(seconds)
        return
    scope = current_scope() or Scope(ROOT_SCOPE)
    key = scope.call_key(SLEEP_STEP)
    match = run.recorded.take(scope.path, SLEEP_STEP, None, None, key)
    if isinstance(match, StepRecord) and isinstance(match.result, int | float):
        until = float(match.result)
        run.served(key, match)
        run.emit(
            "step_cached",
            key,
            until,
            executor_id=SLEEP_STEP,
            extra={"recorded_as": match.key} if match.key != key else {},
        )
    else:
        if not run.options.execute:
            from wfctl._errors import ReplayDivergenceError

            run._diverge(
                ReplayDivergenceError(key, None, [], "no recorded result and execution is off"),
                SLEEP_STEP,
            )
        run.emit("step_started", key, {"args": (seconds,), "kwargs": {}}, executor_id=SLEEP_STEP)
        until = run.clock.now() + seconds
        await run.chain.commit_step(StepRecord(key, scope.path, SLEEP_STEP, None, until))
        run.executed.append(key)
        run.emit("step_completed", key, until, executor_id=SLEEP_STEP)
    run.emit("sleeping", key, {"until": iso(until), "seconds": max(0.0, until - run.clock.now())})
    await wait_out(run, until, False)
