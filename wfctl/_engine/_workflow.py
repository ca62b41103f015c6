"""``@workflow`` and :class:`Workflow`: the definition of a workflow, and the calls that run it.

``Workflow.run`` and ``Workflow.resume`` check their arguments and hand over to
:mod:`wfctl._engine._admission` (lock, check, first commits), which hands the run to
:mod:`wfctl._engine._driving` (execute, end, release).
"""

from __future__ import annotations

import copy
import inspect
from collections.abc import Awaitable, Callable, Coroutine, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any, Literal, overload

from wfctl._config import DEFAULT_STORE
from wfctl._errors import RunArgumentError, RunStateError, WorkflowDefinitionError
from wfctl._records._checkpoint import validate_run_id
from wfctl._storage import FileCheckpointStorage
from wfctl._storage._protocol import CheckpointStorage

from ._admission import continue_run, restore_run, start_run
from ._af_log import AF_LOGGER
from ._annotated import AnnotatedTypes
from ._context import RunContext
from ._driving import EventListener
from ._ending import raise_if_failed
from ._events import WorkflowEvent
from ._message import NO_MESSAGE, MessageParameter
from ._policies import Retry
from ._result import WorkflowRunResult
from ._run import DEFAULT_EVENT_HISTORY, DEFAULT_EVENT_HISTORY_BYTES, RunOptions
from ._signature import code_signature
from ._step import Step, context_parameter
from ._streaming import WorkflowStream

if TYPE_CHECKING:
    from ._agent import FunctionalWorkflowAgent

__all__ = ["Workflow", "workflow"]


def _unwrap_step(obj: Any) -> Any:
    return obj.fn if isinstance(obj, Step) else None


class Workflow:
    """A workflow: an async function run with durable checkpoints.

    Create one with ``@workflow``. ``run`` starts, resumes or restores a run; ``build`` binds
    the same workflow to another storage.
    """

    def __init__(
        self,
        fn: Callable[..., Awaitable[Any]],
        *,
        name: str | None = None,
        description: str | None = None,
        checkpoint_storage: CheckpointStorage | None = None,
        step_retries: Retry | None = None,
    ) -> None:
        if not inspect.iscoroutinefunction(fn):
            raise WorkflowDefinitionError(
                f"@workflow can only decorate async functions; {getattr(fn, '__qualname__', fn)!r} is not"
            )
        self.fn = fn
        self.name = name or fn.__name__
        self.description = description if description is not None else inspect.getdoc(fn)
        self._storage = checkpoint_storage
        #: The retries of every step that declares none of its own (``@step(retries=...)``).
        self.step_retries = step_retries
        self._message = MessageParameter(fn, self.name, context_parameter(fn))
        #: The classes the annotations name, registered so the message and result round-trip.
        self._types = AnnotatedTypes(fn)
        self._signature: str | None = None
        #: The workflow that keeps the code signature: this one, or the one it was built from
        #: (the same function: its source is read once, whichever of them asks first).
        self._code_of: Workflow = self
        self._last_paused: str | None = None
        #: The storage of the last pause when a call's ``checkpoint_storage`` wrote it.
        self._last_paused_storage: CheckpointStorage | None = None
        #: The requests the last call of this object left pending (its pause's), for the
        #: warning a fresh message gets while they are.
        self._last_pending: tuple[str, ...] = ()
        #: How to load this workflow again (``file.py:name``), recorded in each run's root so
        #: ``wfctl resume``/``replay`` can find the code; set by the CLI's loader.
        self.target: str | None = None

    @property
    def takes_message(self) -> bool:
        """Whether the workflow has a message parameter (besides its ``RunContext``)."""
        return self._message.param is not None

    @property
    def reference(self) -> str:
        """Where the workflow function lives, ``module:qualname``."""
        return f"{self.fn.__module__}:{self.fn.__qualname__}"

    @property
    def signature(self) -> str:
        """The code signature over the workflow and the steps it reaches."""
        origin = self._code_of
        if origin._signature is None:
            origin._signature = code_signature(self.fn, _unwrap_step)
        return origin._signature

    @property
    def storage(self) -> CheckpointStorage:
        """The bound storage, else a durable ``FileCheckpointStorage("./.wfctl")``.

        The library reads no configuration: ``WFCTL_STORE`` and ``wfctl.toml`` are the
        command line's, which binds the store it resolved with :meth:`build`. Bind another
        store with ``checkpoint_storage=`` or :meth:`build`.
        """
        if self._storage is None:
            self._storage = FileCheckpointStorage(DEFAULT_STORE)
        return self._storage

    def build(self, checkpoint_storage: CheckpointStorage | None = None) -> Workflow:
        """Return this workflow bound to ``checkpoint_storage`` (None: this one's storage).

        As in agent-framework, the built workflow is a new caller: it does not share this
        object's last pause (``run(responses=...)``). A run's storage can also be chosen per
        call: ``run(..., checkpoint_storage=...)``.
        """
        # The same function: what was read from it (its message parameter, the types its
        # annotations name, its code signature through ``_code_of``) is shared, not read again
        # per build (a worker builds once per run it takes). What is a caller's is its own.
        bound = copy.copy(self)
        bound._storage = checkpoint_storage or self._storage
        bound._last_paused = None
        bound._last_paused_storage = None
        bound._last_pending = ()
        return bound

    @overload
    def run(
        self,
        message: Any = ...,
        *,
        stream: Literal[True],
        include_status_events: bool = ...,
        **arguments: Any,
    ) -> WorkflowStream: ...

    @overload
    def run(
        self,
        message: Any = ...,
        *,
        stream: Literal[False] = ...,
        include_status_events: bool = ...,
        **arguments: Any,
    ) -> Coroutine[Any, Any, WorkflowRunResult]: ...

    def run(
        self,
        message: Any = NO_MESSAGE,
        *,
        stream: bool = False,
        include_status_events: bool = False,
        **arguments: Any,
    ) -> WorkflowStream | Coroutine[Any, Any, WorkflowRunResult]:
        """Start a run, or continue or restore one: ``await wf.run(...)``.

        - ``run(message)``: a fresh run.
        - ``run(checkpoint_id=head, responses=...)``: continue a paused, failed or interrupted
          run from its head, in the same chain.
        - ``run(checkpoint_id=other)``: restore any other checkpoint (or a completed run) as a
          new run whose root names its origin.
        - ``run(responses=...)``: answer the run this object paused last.

        At least one of a message, ``responses`` or ``checkpoint_id`` is given (a message only
        alone), unless the workflow's parameter has a default or it takes no message.

        Args:
            stream: return a :class:`~wfctl.WorkflowStream` at once instead of a coroutine:
                ``async for event in wf.run(msg, stream=True)`` reads the run's events as they
                happen; ``await stream.get_final_response()`` gives the result.
            include_status_events: iterating the result also yields its ``status`` events.
            allow_changed: restore even though the code changed, and run live (reported as
                changed) any call whose recorded result no longer matches.
            execute: False serves recorded results only; a call that would run is a divergence.
            shuffle_seed: perturb the order in which cached results come back.
            drain_timeout: seconds a pause waits for running steps before cancelling them.
            on_event: called with each event as it happens.
            event_history: how many of the most recent events the result keeps (default
                10,000; None keeps all); ``result.events_dropped`` counts the others.
                ``on_event`` and the stream see every event either way.
            event_history_bytes: at most how many bytes of values (step arguments and
                results, outputs, request data, as encoded) the kept events holding 1 KiB
                or more hold between them (default 4 MiB; None: no bound). The oldest events
                go first, so a run of big results does not keep them all alive.
            new_run: restore ``checkpoint_id`` into a new run even if it is a run's head.
            checkpoint_storage: the storage of this call instead of the bound one (to start,
                restore or continue a run there). ``run(responses=...)`` without it answers
                the last pause in the storage that pause was written to.

        A fresh run without a message uses the default of the workflow's parameter.

        Returns a ``completed`` or ``paused`` result. A run that fails raises instead (as
        agent-framework's ``run`` does), once its ``failed`` checkpoint is durable: the
        workflow's own exception (or ``ReplayDivergenceError``, ``UnencodableValueError``, an
        ``OSError`` of the store), carrying ``wfctl_run_id``, ``wfctl_checkpoint_id`` (the
        failed head, from which ``resume`` retries it) and ``wfctl_result`` (the failed
        result: its events, outputs so far, executed steps), and a note saying how to retry.

        Raises:
            RunArgumentError: (a ``ValueError``) contradictory arguments: a message together
                with ``checkpoint_id`` or ``responses`` (a restore runs on the message its root
                recorded); no message for a parameter without a default; a message for a
                workflow that takes none; ``new_run`` without ``checkpoint_id``.
            CheckpointNotFoundError, CheckpointCorruptError, InvalidIdError: bad checkpoint.
            RunLockedError: another process is executing that run.
            RunStateError: (a ``ValueError``) answers that match no pending request or
                contradict an answer the run recorded (an equal one sent again is accepted),
                or none for a paused run.
            AnswerTypeError: an answer does not fit its request's ``response_type``; nothing
                is recorded.
            WorkflowChangedError: the code changed and ``allow_changed`` is False.
            UnencodableValueError: the message cannot be stored.
        """
        if not stream:
            return self._call(message, include_status_events, **arguments)
        listener = arguments.pop("on_event", None)

        def start(put: EventListener) -> Coroutine[Any, Any, WorkflowRunResult]:
            def both(event: WorkflowEvent) -> None:
                put(event)
                if listener is not None:
                    listener(event)

            return self._call(
                message, include_status_events, on_event=both, streaming=True, **arguments
            )

        return WorkflowStream(start)

    async def _call(
        self, message: Any, include_status_events: bool, **arguments: Any
    ) -> WorkflowRunResult:
        result = await self._run(message, **arguments)
        return replace(result, include_status_events=True) if include_status_events else result

    async def _run(
        self,
        message: Any = NO_MESSAGE,
        *,
        checkpoint_id: str | None = None,
        responses: dict[str, Any] | None = None,
        run_id: str | None = None,
        allow_changed: bool = False,
        execute: bool = True,
        shuffle_seed: int | None = None,
        drain_timeout: float = 30.0,
        on_event: EventListener | None = None,
        new_run: bool = False,
        checkpoint_storage: CheckpointStorage | None = None,
        streaming: bool = False,
        event_history: int | None = DEFAULT_EVENT_HISTORY,
        event_history_bytes: int | None = DEFAULT_EVENT_HISTORY_BYTES,
    ) -> WorkflowRunResult:
        """What ``await run(...)`` does (its arguments and errors are documented there)."""
        self._types.register()  # an annotation that did not resolve at decoration
        options = RunOptions(
            allow_changed,
            execute,
            shuffle_seed,
            drain_timeout,
            streaming=streaming,
            event_history=_history_size("event_history", event_history),
            event_history_bytes=_history_size("event_history_bytes", event_history_bytes),
        )
        if message is not NO_MESSAGE and (checkpoint_id is not None or responses is not None):
            other = "checkpoint_id" if checkpoint_id is not None else "responses"
            raise RunArgumentError(
                f"Cannot provide both 'message' and {other!r} to workflow {self.name!r}: a "
                f"message starts a fresh run, so it cannot go with {other} (a restored run "
                "uses the message its root recorded); pass one or the other"
            )
        if message is not NO_MESSAGE and self._last_pending:
            AF_LOGGER.warning(
                "Workflow %s received a fresh message while %d request_info event(s) are still "
                "pending from an unfinished request/response cycle (%s, at %s); the fresh "
                "message starts a run of its own: that run stays paused and answerable with "
                "run(checkpoint_id=%r, responses=...).",
                self.name,
                len(self._last_pending),
                ", ".join(self._last_pending),
                self._last_paused,
                self._last_paused,
            )
        storage = checkpoint_storage
        if checkpoint_id is None and responses is not None:
            if self._last_paused is None:
                raise RunStateError(
                    "-",
                    "there are no pending request_info events to answer: no paused run to "
                    "answer on this workflow object; pass checkpoint_id",
                )
            checkpoint_id = self._last_paused
            storage = storage or self._last_paused_storage
        target = self._bound_for_call(storage)
        if checkpoint_id is not None:
            driven = await restore_run(
                target, checkpoint_id, responses or {}, run_id, options, on_event, new_run
            )
            return self._ended(target, driven.result)
        if new_run:
            raise RunArgumentError(
                f"workflow {self.name!r}: new_run=True restores a checkpoint into a new run; "
                "it needs checkpoint_id"
            )
        try:
            value = self._message.message_for(message)
        except RunArgumentError as exc:
            if message is not NO_MESSAGE:
                raise
            raise RunArgumentError(
                f"Must provide at least one of 'message' (new run), 'responses' or "
                f"'checkpoint_id': {exc}"
            ) from None
        driven = await start_run(target, value, run_id, options, on_event)
        return self._ended(target, driven.result)

    async def resume(
        self,
        run_id: str,
        *,
        responses: dict[str, Any] | None = None,
        allow_changed: bool = False,
        drain_timeout: float = 30.0,
        on_event: EventListener | None = None,
        checkpoint_storage: CheckpointStorage | None = None,
        event_history: int | None = DEFAULT_EVENT_HISTORY,
        event_history_bytes: int | None = DEFAULT_EVENT_HISTORY_BYTES,
    ) -> WorkflowRunResult:
        """Continue ``run_id`` from its head, in its own chain: answer it, retry it or recover it.

        Unlike ``run(checkpoint_id=...)``, this takes the run's lock before it reads the head,
        so it never turns into a restore: if another process holds the run, it fails with
        ``RunLockedError``; if the run has completed, with ``RunStateError``. A run that fails
        again raises its error, as :meth:`run` does. ``event_history`` and
        ``event_history_bytes`` are :meth:`run`'s.
        """
        self._types.register()
        options = RunOptions(
            allow_changed,
            drain_timeout=drain_timeout,
            event_history=_history_size("event_history", event_history),
            event_history_bytes=_history_size("event_history_bytes", event_history_bytes),
        )
        target = self._bound_for_call(checkpoint_storage)
        driven = await continue_run(
            target, validate_run_id(run_id), None, responses or {}, options, on_event
        )
        return self._ended(target, driven.result)

    def _bound_for_call(self, storage: CheckpointStorage | None) -> Workflow:
        """Return this workflow, or a copy bound to ``storage`` for one call."""
        return self if storage is None or storage is self._storage else self.build(storage)

    def _ended(self, target: Workflow, result: WorkflowRunResult) -> WorkflowRunResult:
        """Remember where a call paused, for ``run(responses=...)``; raise a failure."""
        if result.status == "paused":
            self._last_paused = target._last_paused
            self._last_paused_storage = None if target is self else target.storage
            self._last_pending = tuple(request.request_id for request in result.requests)
        else:
            self._last_pending = ()
        return raise_if_failed(result)

    def as_agent(
        self,
        name: str | None = None,
        *,
        description: str | None = None,
        context_providers: Sequence[Any] | None = None,
        **kwargs: Any,
    ) -> FunctionalWorkflowAgent:
        """Return this workflow as an agent-framework agent (agent-framework's signature).

        Its ``run`` drives this workflow, durably, as :meth:`run` does, and answers in
        agent-framework's response types; a ``request_info`` becomes a function-approval
        request, answered with ``agent.run(responses={...})``. ``name`` defaults to the
        workflow's, ``description`` to its description; ``context_providers`` are kept.

        Raises:
            ImportError: agent-framework is not installed (``pip install
                'wfctl[agent-framework]'``).
        """
        from ._agent import FunctionalWorkflowAgent  # the optional extra: imported when asked

        return FunctionalWorkflowAgent(
            self,
            name=name,
            description=description,
            context_providers=context_providers,
            **kwargs,
        )

    def message_for(self, message: Any = NO_MESSAGE) -> Any:
        """Return the message a fresh run gets for ``message`` (none: the parameter's default).

        Raises:
            RunArgumentError: no message for a parameter without a default, or a message for
                a workflow that takes none.
        """
        self._types.register()
        return self._message.message_for(message)

    def message_from_data(self, message: Any) -> Any:
        """Return a message read from data (``--input``, a queued run's input) converted to
        the workflow parameter's annotation (see :meth:`MessageParameter.from_data`).

        Raises:
            RunArgumentError: it does not fit the annotation.
        """
        self._types.register()
        return self._message.from_data(message)

    async def body(self, message: Any, context: RunContext) -> Any:
        """Run the workflow body on ``message``, with its ``RunContext``; return its value.

        The class of the value is registered when the return annotation spells it but could
        not resolve it (a class defined inside a function; see :class:`AnnotatedTypes`).
        """
        value = await self._message.call(self.fn, message, context)
        self._types.adopt(value)
        return value


def _history_size(name: str, bound: int | None) -> int | None:
    """Return a bound of the event history checked: None (no bound) or an int of at least 0.

    Raises:
        RunArgumentError: it is negative or not an integer.
    """
    if bound is None or (type(bound) is int and bound >= 0):
        return bound
    raise RunArgumentError(f"{name} must be None (no bound) or an int >= 0, not {bound!r}")


@overload
def workflow(fn: Callable[..., Awaitable[Any]], /) -> Workflow: ...


@overload
def workflow(
    *,
    name: str | None = None,
    description: str | None = None,
    checkpoint_storage: CheckpointStorage | None = None,
    step_retries: Retry | None = None,
) -> Callable[[Callable[..., Awaitable[Any]]], Workflow]: ...


def workflow(
    fn: Callable[..., Awaitable[Any]] | None = None,
    /,
    *,
    name: str | None = None,
    description: str | None = None,
    checkpoint_storage: CheckpointStorage | None = None,
    step_retries: Retry | None = None,
) -> Workflow | Callable[[Callable[..., Awaitable[Any]]], Workflow]:
    """Make an async function a workflow: ``@workflow`` or ``@workflow(name=..., ...)``.

    ``step_retries`` (a :class:`~wfctl.Retry`) is the retry policy of every step that
    declares none of its own.

    Raises:
        WorkflowDefinitionError: (a ``TypeError`` and a ``ValueError``) the function is not
            ``async`` or takes more than one parameter besides its ``RunContext``.
    """
    if fn is not None:
        return Workflow(
            fn,
            name=name,
            description=description,
            checkpoint_storage=checkpoint_storage,
            step_retries=step_retries,
        )
    return lambda f: Workflow(
        f,
        name=name,
        description=description,
        checkpoint_storage=checkpoint_storage,
        step_retries=step_retries,
    )
