"""The run loop: executes a workflow body, keys its calls, serves the cache, and pauses cleanly.

One :class:`Run` object lives for one ``Workflow.run`` call. It owns every task created inside
the run (through the task factory in :mod:`wfctl._engine._keys`) and decides the outcome; its
:class:`~wfctl._engine._pausing.PauseGate` counts the steps in flight. Pausing works in two phases:

1. A branch that calls ``request_info`` without an answer (or reaches a step boundary after a
   pause was requested) suspends. Sibling branches keep going; the supervisor waits until no
   step is in flight and the loop has settled (or the drain timeout passes).
2. The supervisor raises :class:`PauseSignal` in every suspended branch, cancels whatever is
   still blocked, waits for the body and every task of the run to end, and only then commits
   the pause checkpoint, which is therefore the head and holds every pending request.
"""

from __future__ import annotations

import asyncio
import contextvars
import random
import sys
import time
from collections import deque
from collections.abc import Callable, Coroutine
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, NoReturn

from wfctl._errors import (
    DuplicateStepKeyError,
    ReplayDivergenceError,
    UnencodableValueError,
    WorkflowExitError,
)
from wfctl._records._attempts import AttemptRecord, AttemptStart, StepFailure
from wfctl._records._codec import (
    EncodedCall,
    decode,
    digest_and_size,
    encode,
    encode_call,
    encoded_size,
    value_size,
)
from wfctl._records._recorded import (
    ARGS_OPTED_OUT,
    Divergence,
    RecordedCalls,
    StepRecord,
    args_text,
    record_args_of,
    step_record_of,
)

from ._chain import CheckpointChain
from ._context import context_of
from ._effects import StepEffects, current_effects
from ._events import (
    DeferredEvent,
    EventHistory,
    RequestInfoEvent,
    WorkflowErrorDetails,
    WorkflowEvent,
    WorkflowEventSource,
    WorkflowRunState,
    error_message,
    event_of,
    made_event,
)
from ._guard import ExitGuard
from ._keys import (
    ROOT_SCOPE,
    Scope,
    current_scope,
    install_task_factory,
    register_transparent,
    scope_var,
)
from ._keys import uninstall_task_factory as _uninstall
from ._pausing import PauseGate, PauseSignal
from ._policies import (
    SYSTEM_CLOCK,
    Retry,
    StepPolicy,
    attach_attempts,
    attempts_of,
    call_with_policy,
    clock_var,
    durable_sleep,
)
from ._port import port_var
from ._response_types import convert_answer
from ._response_types import type_name as response_type_name
from ._stepkeys import StepKeys

if TYPE_CHECKING:
    from ._step import Step

__all__ = [
    "DEFAULT_EVENT_HISTORY",
    "DEFAULT_EVENT_HISTORY_BYTES",
    "BodyOutcome",
    "Run",
    "RunOptions",
]


_effects = current_effects()
_port = port_var()
#: Seconds between the supervisor's looks for a pause request while steps run.
PAUSE_POLL = 0.1
_scope = scope_var()
_NO_POLICY = StepPolicy()
#: Events a result keeps by default: the most recent ones (``run(..., event_history=N)``).
DEFAULT_EVENT_HISTORY = 10_000
#: Bytes of values (step arguments and results, outputs, request data) the weighed events a
#: result keeps may hold between them by default (``run(..., event_history_bytes=N)``).
DEFAULT_EVENT_HISTORY_BYTES = 4 * 2**20
#: Values smaller than this are bounded by the event count alone; only events holding this
#: much or more count toward ``event_history_bytes`` (10,000 events of smaller values hold
#: at most 10 MiB), so an ordinary step pays one comparison per event for the bound.
WEIGHED_BYTES = 1024


@dataclass(frozen=True, slots=True)
class RunOptions:
    """How a run treats recorded results.

    ``allow_changed``: a call whose recorded result no longer matches runs live (reported as
    changed) instead of failing the run. ``execute``: False serves only recorded results; any
    call that would have to run is a divergence. ``shuffle_seed``: hand cached results back
    after a seeded random number of extra loop yields, to perturb completion order.
    ``drain_timeout``: seconds a pause waits for running steps before cancelling them.
    ``complete_history``: the recorded calls are a whole finished run, so a call that misses
    while its step has other records is a divergence at once (see :meth:`Run.call_step`).
    ``event_history``: how many of the most recent events the result keeps (None: all).
    ``event_history_bytes``: at most how many bytes of values those of them holding
    ``WEIGHED_BYTES`` or more may hold between them (None: no bound); the oldest go first
    (see :meth:`Run.emit`).
    ``keep_records``: keep the step records the run commits, for the caller (replay's diff).
    ``on_served``: told each call served from a record (its key, the record), as it is served
    (replay's rows); it must not raise.
    """

    allow_changed: bool = False
    execute: bool = True
    shuffle_seed: int | None = None
    drain_timeout: float = 30.0
    complete_history: bool = False
    #: The caller reads the run's events as they happen (``run(stream=True)``).
    streaming: bool = False
    event_history: int | None = DEFAULT_EVENT_HISTORY
    event_history_bytes: int | None = DEFAULT_EVENT_HISTORY_BYTES
    keep_records: bool = False
    on_served: Callable[[str, StepRecord], None] | None = None


@dataclass(frozen=True, slots=True)
class BodyOutcome:
    """How the body ended: ``completed`` (with ``value``), ``paused`` or ``failed``; and how
    the call ended: ``cancelled`` too (a pause that honoured a cancel request)."""

    status: str
    value: Any = None
    error: BaseException | None = None


class Run:
    """The state of one executing run."""

    def __init__(
        self,
        *,
        run_id: str,
        chain: CheckpointChain,
        recorded: RecordedCalls,
        responses: dict[str, Any],
        options: RunOptions,
        on_event: Callable[[WorkflowEvent], None] | None = None,
        pause_probe: Callable[[], bool] | None = None,
        step_retries: Retry | None = None,
        past_attempts: dict[str, list[AttemptRecord]] | None = None,
        past_failures: dict[str, StepFailure] | None = None,
        past_starts: dict[str, AttemptStart] | None = None,
    ) -> None:
        self.run_id = run_id
        self.chain = chain
        self.recorded = recorded
        self.responses = responses
        self.options = options
        self.context = context_of(self)
        self.state: dict[str, Any] = {}
        self.outputs: list[Any] = []
        self.encoded_outputs: list[Any] = []
        #: The most recent events (all of them with ``event_history=None``; see ``events``);
        #: how many older ones were let go. The live listener sees every event either way.
        self._events: deque[WorkflowEvent | DeferredEvent] = deque(maxlen=options.event_history)
        self._deferred = False
        self.events_dropped = 0
        #: The kept events that hold ``WEIGHED_BYTES`` or more, as (index, bytes), oldest first
        #: (an event's index counts every event the history took: the oldest kept one's is
        #: ``events_dropped``); what they hold between them, and the most it may be
        #: (``event_history_bytes``; see ``emit``).
        self._weighed: deque[tuple[int, int]] = deque()
        self._held_bytes = 0
        limit = options.event_history_bytes
        self._max_held_bytes = sys.maxsize if limit is None else limit
        self.pending: dict[str, tuple[RequestInfoEvent, Any]] = {}
        self.executed = StepKeys()
        self.cached = StepKeys()
        self.changed = StepKeys()
        self.divergence: ReplayDivergenceError | None = None
        #: Exceptions raised out of executed steps, innermost first, with the step's key.
        self._step_failures: list[tuple[BaseException, str]] = []
        self._on_event = on_event
        self._pause_probe = pause_probe
        self._rng = (
            random.Random(options.shuffle_seed) if options.shuffle_seed is not None else None
        )
        self._tasks: set[asyncio.Task[Any]] = set()
        self._body: asyncio.Task[Any] | None = None
        #: Set once the engine cancels the run's tasks (the run ends, pauses past its drain, or
        #: its caller was cancelled): a step cancelled then was not cancelled by the workflow.
        self._stopping = False
        chain.solo = self._solo
        self.gate = PauseGate()
        self._request_ids: set[str] = set()
        self._unsettled: list[tuple[str, str | None, str, str, str | None, str]] = []
        #: The workflow's retries for steps that declare none; the failed attempts recorded
        #: so far, by call key; the clock policies wait on (see ``wfctl._engine._policies``).
        self.step_retries = step_retries
        self.past_attempts = past_attempts or {}
        #: The last attempt each call started, by key (one with no outcome was cut off).
        self.past_starts = past_starts or {}
        #: The recorded failures of calls the history holds no result for, by key (a replay's
        #: history gathers them): a divergence says why there is nothing to serve.
        self.past_failures = past_failures or {}
        self.clock = clock_var.get() or SYSTEM_CLOCK

    # -- bookkeeping -------------------------------------------------------------------------

    def adopt_task(self, task: asyncio.Task[Any]) -> None:
        """Own a task created inside the run, so none outlives it."""
        self._tasks.add(task)
        task.add_done_callback(self._task_done)

    def _task_done(self, task: asyncio.Task[Any]) -> None:
        """Forget a task of the run that ended; take its error if the run reports it itself.

        A branch parked on a request or a pause ends with the run's :class:`PauseSignal`, and
        one that diverged with the error the run fails with: nobody awaits such a task once
        the run pauses or fails, and asyncio would log each as "Task exception was never
        retrieved", with a traceback. Any other error stays the awaiting code's to take. The
        error is looked at through ``_exception`` (asyncio's, on its Python and C tasks alike),
        since ``exception()`` would take it whatever it is.
        """
        self._tasks.discard(task)
        error = getattr(task, "_exception", None)
        if error is not None and (isinstance(error, PauseSignal) or error is self.divergence):
            task.exception()

    def _solo(self) -> bool:
        """Whether the caller is the body with no other task of the run alive (sequential code).

        Only then may a step commit at once, in its caller: no other step could join its group
        commit (see ``wfctl._engine._chain``).
        """
        body = self._body
        return (
            not self._tasks and body is not None and asyncio.current_task(body.get_loop()) is body
        )

    def guard(self, coro: Coroutine[Any, Any, Any]) -> Coroutine[Any, Any, Any]:
        """Wrap workflow code about to run in its own task: its SystemExit fails the run."""
        return ExitGuard(coro, f"{getattr(coro, '__qualname__', 'a task')}()")

    @property
    def events(self) -> deque[WorkflowEvent]:
        """The most recent events, oldest first (``RunOptions.event_history`` of them).

        With no live listener an event is kept as its fields and time, and made here, when
        the history is first read after it (the same event ``emit`` would have made then).
        """
        if self._deferred:
            run_id, events = self.run_id, self._events
            self._events = deque(
                (made_event(run_id, kept) for kept in events), maxlen=events.maxlen
            )
            self._deferred = False
        return self._events  # type: ignore[return-value]  # no DeferredEvent is left in it

    def history(self) -> EventHistory:
        """The events kept so far, for a result: made into events only if they are read."""
        return EventHistory(self.run_id, tuple(self._events))

    def emit(
        self,
        kind: str,
        key: str | None = None,
        data: Any = None,
        data_bytes: int = 0,
        **fields: Any,
    ) -> None:
        """Record an event of wfctl's ``kind`` and hand it to the live listener.

        ``data_bytes`` is about how many bytes ``data`` holds (its encoding's, see
        :func:`~wfctl._records._codec.encoded_size`; 0 for a small one): the history keeps the most
        recent ``event_history`` events, of which those holding ``WEIGHED_BYTES`` or more
        hold at most ``event_history_bytes`` between them, and lets the oldest go first.
        ``fields`` are the event's other fields (``executor_id``, ``extra``, ``state``, ...).
        With no listener, nothing but the history reads the event: it is made when that is
        read (see ``events``), and not at all once it has been let go.
        """
        self.keep(kind, key, data, data_bytes, fields)

    def keep(
        self, kind: str, key: str | None, data: Any, data_bytes: int, fields: dict[str, Any]
    ) -> None:
        """:meth:`emit`, its other fields given as one dict (which is not changed, nor kept
        past the making of the event: a caller may pass the same one for every event)."""
        if self._on_event is not None:
            self._publish(event_of(kind, self.run_id, key, data, **fields), data_bytes)
            return
        events = self._events
        if len(events) == events.maxlen:
            self.events_dropped += 1
            if events.maxlen == 0:  # ``event_history=0``: nothing is kept
                return
        events.append((kind, key, data, fields, time.time()))
        self._deferred = True
        if data_bytes >= WEIGHED_BYTES:
            self._weigh(data_bytes)

    def publish_custom(self, event: WorkflowEvent) -> None:
        """Record an event user code made (``ctx.add_event``), stamped with this run."""
        self._publish(
            replace(event, kind="custom", run_id=self.run_id, timestamp=time.time()),
            value_size(event.data),
        )

    def _publish(self, event: WorkflowEvent, data_bytes: int = 0) -> None:
        events = self._events
        if len(events) == events.maxlen:
            self.events_dropped += 1
        events.append(event)
        if data_bytes >= WEIGHED_BYTES and events.maxlen != 0:
            self._weigh(data_bytes)
        if self._on_event is not None:
            self._on_event(event)

    def _weigh(self, data_bytes: int) -> None:
        """Count the bytes of the event just kept; let the oldest events go past the bound."""
        events, weighed = self._events, self._weighed
        while weighed and weighed[0][0] < self.events_dropped:  # let go by the count since
            self._held_bytes -= weighed.popleft()[1]
        weighed.append((self.events_dropped + len(events) - 1, data_bytes))
        self._held_bytes += data_bytes
        while self._held_bytes > self._max_held_bytes:
            events.popleft()
            self.events_dropped += 1
            if weighed[0][0] < self.events_dropped:
                self._held_bytes -= weighed.popleft()[1]

    async def sleep(self, seconds: float) -> None:
        """Sleep durably inside the run (``ctx.sleep``; see :func:`~._policies.durable_sleep`)."""
        await durable_sleep(self, seconds)

    def add_output(self, value: Any) -> None:
        """Append an output; inside a step it is recorded with the step's result."""
        encoded = self._encode(value, "<output>")
        effects = _effects.get()
        if effects is not None:
            effects.outputs.append(encoded)
        self.outputs.append(value)
        self.encoded_outputs.append(encoded)
        self.emit(
            "output", None, value, encoded_size(encoded), executor_id=self.chain.workflow_name
        )

    def set_state(self, key: str, value: Any) -> None:
        """Set run state; inside a step the change is recorded with the step's result."""
        effects = _effects.get()
        if effects is not None:
            effects.state[key] = self._encode(value, f"<state {key}>")
        self.state[key] = value

    @staticmethod
    def _encode(value: Any, key: str) -> Any:
        try:
            return encode(value)
        except UnencodableValueError as exc:
            raise exc.for_key(key) from None

    # -- steps -------------------------------------------------------------------------------

    def start_step(
        self, step: Step[Any], args: tuple[Any, ...], kwargs: dict[str, Any], explicit: str | None
    ) -> Coroutine[Any, Any, Any]:
        """Key a step call now, where it is made, and return the coroutine that performs it.

        The key is taken when the call expression is evaluated, not when its coroutine first
        runs: ``as_completed``/``wait`` start tasks in ``set`` order, but the calls are made in
        program order, so keys stay the same from run to run.

        Raises:
            DuplicateStepKeyError: an explicit key repeats in this scope.
        """
        scope = current_scope() or Scope(ROOT_SCOPE)
        if explicit is None and step.replay_key is not None:
            explicit = str(step.replay_key(*args, **kwargs))
        name = step.name
        key = scope.call_key(name) if explicit is None else scope.explicit_key(name, explicit)
        return self._call_step(step, key, scope.path, explicit, args, kwargs)

    async def _call_step(
        self,
        step: Step[Any],
        key: str,
        scope_path: str,
        explicit: str | None,
        args: tuple[Any, ...],
        kwargs: dict[str, Any],
    ) -> Any:
        """Serve a keyed call's recorded result, or execute it."""
        name = step.name
        gate = self.gate
        if gate.released:
            raise PauseSignal
        if gate.interrupted or (self._pause_probe is not None and self._pause_probe()):
            gate.interrupted = True
            await gate.suspend(_effects.get() is not None)
        encoded_args = encode_call(args, kwargs)  # once: for the digest and the record
        call_digest, args_bytes = digest_and_size(encoded_args, self.chain.version)
        match = self.recorded.take(scope_path, name, explicit, call_digest, key)
        if isinstance(match, StepRecord):
            return await self._serve(key, match)
        changed = replaced = False
        if isinstance(match, Divergence):
            if not self.options.execute or (
                self.options.complete_history and not self.options.allow_changed
            ):
                self._diverge(
                    ReplayDivergenceError(
                        key,
                        call_digest,
                        match.recorded_digests,
                        call_args=_shown_args(step, encoded_args),
                        recorded_args=match.recorded_args,
                    ),
                    name,
                )
            if self.options.complete_history:
                changed = True
            else:
                # A prefix of history: this may be a call that had not happened yet when the
                # checkpoint was written (a sibling, a completion-ordered loop). It runs live;
                # settle() decides at the end whether a recorded call was left unclaimed.
                shown = _shown_args(step, encoded_args)
                self._unsettled.append((key, call_digest, scope_path, name, explicit, shown))
                # Its record says so until then: a run resumed past it settles it too.
                replaced = not self.options.allow_changed
        elif match is None and not self.options.execute:
            failed = self.past_failures.get(key)
            reason = "no recorded result and execution is off"
            if failed is not None:
                reason = (
                    f"its recorded call failed ({failed.error}), a failure is not served, "
                    "and execution is off"
                )
            self._diverge(
                ReplayDivergenceError(
                    key, call_digest, [], reason, call_args=_shown_args(step, encoded_args)
                ),
                name,
            )
        return await self._execute(
            step,
            key,
            scope_path,
            explicit,
            call_digest,
            encoded_args,
            args_bytes,
            args,
            kwargs,
            changed,
            replaced,
        )

    def settle(self) -> ReplayDivergenceError | None:
        """Judge the calls that ran live beside unclaimed records, once the body completed.

        A record of a step still unclaimed in the scope where a call of that step ran live means
        that call replaced it: a divergence (or, with ``allow_changed``, a changed step).
        """
        replaced: list[str] = []  # keys of live calls that replaced a record, in call order
        for key, call_digest, scope_path, name, explicit, shown in self._unsettled:
            left = self.recorded.unconsumed(scope_path, name, explicit)
            if not left:
                continue
            if self.options.allow_changed:
                replaced.append(key)
                continue
            error = ReplayDivergenceError(
                key,
                call_digest,
                [r.digest for r in left],
                "recorded call(s) never claimed: " + ", ".join(r.key for r in left),
                call_args=shown,
                recorded_args=[r.describe_args() for r in left],
            )
            if self.divergence is None:
                self.divergence = error
        # Those that executed are changed steps; one that raised (and the body went on) is
        # neither, as it was not before the check.
        moved = self.executed.remove_keys(set(replaced))
        for key in replaced:
            if key in moved:
                self.changed.append(key)
        return self.divergence

    def failed_step(self, error: BaseException) -> str | None:
        """Return the key of the step that raised ``error``, or None if the body raised it."""
        return next((key for exc, key in self._step_failures if exc is error), None)

    def served(self, key: str, record: StepRecord) -> None:
        """Note that the call ``key`` was served from ``record``, and tell ``on_served``."""
        self.chain.note_served()
        self.cached.append(key)
        told = self.options.on_served
        if told is not None:
            told(key, record)

    def _diverge(self, error: ReplayDivergenceError, name: str) -> NoReturn:
        if self.divergence is None:
            self.divergence = error
        self._emit_step_failed(name, error.key, error, {"error": str(error), "divergence": True})
        raise error

    async def _serve(self, key: str, record: StepRecord) -> Any:
        value = decode(record.result, where=f"recorded result of {record.key}")
        if record.replaced:  # ran live past an unclaimed record, before a pause or a crash
            self._unsettled.append(
                (
                    key,
                    record.digest,
                    record.scope,
                    record.name,
                    record.explicit,
                    record.describe_args(),
                )
            )
        if record.effects:
            for name, encoded in record.effects.get("state", {}).items():
                self.state[name] = decode(encoded, where=f"state effect of {record.key}")
            for encoded in record.effects.get("outputs", []):
                value_out = decode(encoded, where=f"output effect of {record.key}")
                self.outputs.append(value_out)
                self.encoded_outputs.append(encoded)
                self.emit(
                    "output",
                    key,
                    value_out,
                    encoded_size(encoded),
                    executor_id=self.chain.workflow_name,
                )
            outer = _effects.get()
            if outer is not None:
                outer.merge(record.effects)
        self.served(key, record)
        self.emit(
            "step_cached",
            key,
            value,
            encoded_size(record.result),
            executor_id=record.name,
            extra={"recorded_as": record.key} if record.key != key else {},
        )
        if self._rng is not None:
            for _ in range(self._rng.randint(0, 4)):
                await asyncio.sleep(0)
        return value

    async def _execute(
        self,
        step: Step[Any],
        key: str,
        scope_path: str,
        explicit: str | None,
        call_digest: str | None,
        encoded_args: EncodedCall,
        args_bytes: int,
        args: tuple[Any, ...],
        kwargs: dict[str, Any],
        changed: bool,
        replaced: bool,
    ) -> Any:
        if self.chain.lost is not None:
            raise self.chain.lost  # the run cannot commit any more: execute nothing more
        step_retries = self.step_retries
        self.keep("step_started", key, _invocation(args, kwargs), args_bytes, step.event_fields)
        self.gate.step_started()
        outer = _effects.get()
        effects = StepEffects()
        scope_token = _scope.set(Scope(key))
        effects_token = _effects.set(effects)
        # Encoded before the call (with its digest), so the record says what the step received
        # even if it mutates its arguments.
        if step.record_args:
            call_args, call_kwargs, args_omitted = record_args_of(encoded_args)
        else:
            call_args, call_kwargs, args_omitted = None, None, ARGS_OPTED_OUT
        clock = time.perf_counter()
        record = None
        try:
            if step.context is not None:
                args, kwargs = step.context.join(args, kwargs, self.context)
            policy = step.policy
            if policy is None and step_retries is None:
                value = await step.fn(*args, **kwargs)
            else:
                value = await call_with_policy(
                    self, key, policy or _NO_POLICY, lambda: step.fn(*args, **kwargs)
                )
            step.types.adopt(value)  # a class the annotation spells but could not resolve
            result = self._encode(value, key)
            record = step_record_of(
                key,
                scope_path,
                step.name,
                call_digest,
                result,
                explicit,
                time.perf_counter() - clock,
                effects.to_json(),
                call_args,
                call_kwargs,
                args_omitted,
                replaced,
            )
            await self.chain.commit_step(record)
        except PauseSignal:
            raise
        except asyncio.CancelledError as exc:
            # Cancelled by the workflow itself (a TaskGroup whose sibling failed, a timeout
            # around the call): the call ended without a result, as a failure does.
            if record is None and not (self._stopping or self.gate.released):
                self._note_failure(key, call_digest, exc)
            raise
        except SystemExit as exc:  # asyncio would end the process with it: fail the run
            error = WorkflowExitError(exc.code, f"step {key}")
            attach_attempts(error, attempts_of(exc))  # the attempts that failed before it
            self._step_failures.append((error, key))  # it failed in this step, as any error
            self._emit_step_failed(step.name, key, error)
            raise error from exc
        except BaseException as exc:
            self._step_failures.append((exc, key))
            self._emit_step_failed(step.name, key, exc)
            if record is None and isinstance(exc, Exception):  # the call failed, not its commit
                self._note_failure(key, call_digest, exc)
            raise
        finally:
            _scope.reset(scope_token)
            _effects.reset(effects_token)
            self.gate.step_ended()
        (self.changed if changed else self.executed).append(key)
        if outer is not None:
            outer.merge(record.effects)
        self.keep(
            "step_completed",
            key,
            value,
            len(result) if type(result) is str else encoded_size(result),
            {"executor_id": step.name, "extra": {"changed": True}}
            if changed
            else step.event_fields,
        )
        return value

    def _note_failure(self, key: str, digest: str | None, error: BaseException) -> None:
        """Have the chain record that call ``key`` ended with ``error`` and no result."""
        failure = StepFailure(
            key, digest, type(error).__name__, error_message(error), self.clock.now()
        )
        self.chain.note_failure(failure, error)

    def _emit_step_failed(
        self, name: str, key: str, error: BaseException, extra: dict[str, Any] | None = None
    ) -> None:
        details = WorkflowErrorDetails.from_exception(error, executor_id=name)
        self.emit(
            "step_failed",
            key,
            details,
            executor_id=name,
            details=details,
            extra=extra or {"error": f"{type(error).__name__}: {error_message(error)}"},
        )

    # -- requests and pausing ----------------------------------------------------------------

    async def request_info(
        self, request_data: Any, response_type: type | None, request_id: str | None
    ) -> Any:
        """Return the answer to a request, or suspend the branch until the run pauses."""
        scope = current_scope() or Scope(ROOT_SCOPE)
        rid = request_id if request_id is not None else scope.call_key("request")
        if rid in self._request_ids:
            raise DuplicateStepKeyError(rid)
        self._request_ids.add(rid)
        # The type this code declares is the one that counts: an answer recorded before the
        # code changed (allow_changed) must fit it too.
        type_name = response_type_name(response_type, rid)
        if rid in self.responses:
            return convert_answer(self.responses[rid], type_name, rid)
        if self.gate.released:
            raise PauseSignal
        encoded = self._encode(request_data, rid)
        event = RequestInfoEvent(
            "request_info",
            request_data,
            executor_id=self.chain.workflow_name,
            origin=WorkflowEventSource.FRAMEWORK,
            kind="request",
            run_id=self.run_id,
            key=rid,
            timestamp=time.time(),
            request_data=request_data,
            response_type=response_type,
        )
        self.pending[rid] = (event, encoded)
        self._publish(event, encoded_size(encoded))
        self.emit("status", None, state=WorkflowRunState.IN_PROGRESS_PENDING_REQUESTS)
        await self.gate.suspend(_effects.get() is not None)

    # -- the supervisor ----------------------------------------------------------------------

    async def execute(self, body: Callable[[], Coroutine[Any, Any, Any]]) -> BodyOutcome:
        """Run the body to its end, pausing cleanly if asked to; never leave a task behind."""
        loop = asyncio.get_running_loop()
        install_task_factory(loop)
        context = contextvars.copy_context()
        context.run(_port.set, self)
        context.run(_scope.set, Scope(ROOT_SCOPE))
        context.run(_effects.set, None)
        body_task: asyncio.Task[Any] = asyncio.Task(
            ExitGuard(body(), "the workflow body"), context=context
        )
        self._body = body_task
        try:
            await self._supervise(body_task)
        finally:
            self._stopping = True
            for task in (body_task, *self._tasks):
                task.cancel()
            await asyncio.gather(body_task, *self._tasks, return_exceptions=True)
            _uninstall(loop)
        return self._outcome(body_task)

    async def _supervise(self, body_task: asyncio.Task[Any]) -> None:
        # A pause request (Ctrl-C, SIGTERM, `wfctl pause`) arrives as a marker in the storage.
        # Step boundaries look for it, but a step that runs long reaches none: so the
        # supervisor looks too, every PAUSE_POLL seconds, and starts the drain (whose timeout
        # then holds for one running step as for many).
        poll = PAUSE_POLL if self._pause_probe is not None else None
        while not body_task.done():
            gate = self.gate
            waiter = asyncio.Task(gate.wanted.wait(), context=contextvars.Context())
            try:
                while True:
                    done, _ = await asyncio.wait(
                        {body_task, waiter}, timeout=poll, return_when=asyncio.FIRST_COMPLETED
                    )
                    if done or self._pause_asked():
                        break
            finally:
                waiter.cancel()
            if body_task.done():
                return
            gate.wanted.clear()
            await gate.drain(self.options.drain_timeout, self.chain.flush)
            if body_task.done():
                return
            await gate.release()
            self._stopping = True
            for task in (*self._tasks, body_task):
                task.cancel()  # still blocked after the signal: nothing more can happen
            await asyncio.wait({body_task})

    def _pause_asked(self) -> bool:
        """Whether a pause was requested from outside (and mark the gate so if it was)."""
        if not self.gate.interrupted and self._pause_probe is not None and self._pause_probe():
            self.gate.interrupted = True
        return self.gate.interrupted

    def _outcome(self, body_task: asyncio.Task[Any]) -> BodyOutcome:
        error = None if body_task.cancelled() else body_task.exception()
        if self.gate.released and (self.pending or self.gate.interrupted):
            return BodyOutcome("paused")
        if body_task.cancelled():
            return BodyOutcome("failed", error=asyncio.CancelledError("the run was cancelled"))
        if self.chain.lost is not None:
            return BodyOutcome("failed", error=self.chain.lost)
        if self.divergence is not None:
            return BodyOutcome("failed", error=self.divergence)
        if error is not None:
            return BodyOutcome("failed", error=error)
        divergence = self.settle()
        if divergence is not None:
            return BodyOutcome("failed", error=divergence)
        return BodyOutcome("completed", value=body_task.result())


def _invocation(args: tuple[Any, ...], kwargs: dict[str, Any]) -> dict[str, Any] | None:
    """The data of an ``executor_invoked`` event: the call's arguments, as agent-framework's."""
    return {"args": args, "kwargs": kwargs} if args or kwargs else None


def _shown_args(step: Step[Any], encoded: EncodedCall) -> str:
    """Return what a call received, for a divergence message (never a step's secret)."""
    if not step.record_args:
        return "arguments not shown (record_args=False)"
    return "unencodable arguments" if encoded is None else args_text(*encoded)


# A task that only runs one keyed step call opens no scope of its own (see ``wfctl._engine._keys``).
register_transparent(Run._call_step.__code__)
