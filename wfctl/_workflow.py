"""``@workflow`` and :class:`Workflow`: start, resume and restore runs."""

from __future__ import annotations

import dataclasses
import inspect
from collections.abc import Awaitable, Callable
from typing import Any, overload

from ._chain import CheckpointChain
from ._checkpoint import Checkpoint, Kind, validate_run_id
from ._codec import decode, encode
from ._config import resolve_store
from ._ending import build_result, commit_ending
from ._errors import (
    RunArgumentError,
    RunStateError,
    UnencodableValueError,
    WorkflowChangedError,
    WorkflowDefinitionError,
)
from ._events import WorkflowEvent
from ._ids import new_run_id
from ._message import NO_MESSAGE, MessageParameter
from ._payloads import RootPayload, recorded_signature
from ._recorded import RecordedCalls
from ._restore import (
    History,
    check_answers,
    collect_history,
    convert_answers,
    encode_answers,
    load_target,
)
from ._result import WorkflowRunResult
from ._run import Run, RunOptions
from ._signature import code_signature
from ._step import Step, context_parameter
from ._storage import FileCheckpointStorage
from ._storage._capabilities import clear_pause, load_chain, lock_run, pause_requested
from ._storage._protocol import CheckpointStorage, RunLock

__all__ = ["Workflow", "workflow"]

EventListener = Callable[[WorkflowEvent], None]


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
    ) -> None:
        if not inspect.iscoroutinefunction(fn):
            raise WorkflowDefinitionError(
                f"@workflow needs an async function; {getattr(fn, '__qualname__', fn)!r} is not"
            )
        self.fn = fn
        self.name = name or fn.__name__
        self.description = description if description is not None else inspect.getdoc(fn)
        self._storage = checkpoint_storage
        self._message = MessageParameter(fn, self.name, context_parameter(fn))
        self._signature: str | None = None
        self._last_paused: str | None = None
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
        if self._signature is None:
            self._signature = code_signature(self.fn, _unwrap_step)
        return self._signature

    @property
    def storage(self) -> CheckpointStorage:
        """The bound storage, or a durable file storage at the configured store."""
        if self._storage is None:
            self._storage = FileCheckpointStorage(resolve_store())
        return self._storage

    def build(self, checkpoint_storage: CheckpointStorage | None = None) -> Workflow:
        """Return this workflow bound to ``checkpoint_storage``."""
        bound = Workflow(
            self.fn,
            name=self.name,
            description=self.description,
            checkpoint_storage=checkpoint_storage or self._storage,
        )
        bound.target = self.target
        bound._signature = self._signature  # same code: no need to read its source again
        return bound

    async def run(
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
    ) -> WorkflowRunResult:
        """Start a run, or continue or restore one.

        - ``run(message)``: a fresh run.
        - ``run(checkpoint_id=head, responses=...)``: continue a paused, failed or interrupted
          run from its head, in the same chain.
        - ``run(checkpoint_id=other)``: restore any other checkpoint (or a completed run) as a
          new run whose root names its origin.
        - ``run(responses=...)``: answer the run this object paused last.

        Args:
            allow_changed: restore even though the code changed, and run live (reported as
                changed) any call whose recorded result no longer matches.
            execute: False serves recorded results only; a call that would run is a divergence.
            shuffle_seed: perturb the order in which cached results come back.
            drain_timeout: seconds a pause waits for running steps before cancelling them.
            on_event: called with each event as it happens.
            new_run: restore ``checkpoint_id`` into a new run even if it is a run's head.

        A fresh run without a message uses the default of the workflow's parameter.

        Raises:
            RunArgumentError: (a ``ValueError``) contradictory arguments: a message together
                with ``checkpoint_id`` or ``responses`` (a restore runs on the message its root
                recorded); no message for a parameter without a default; a message for a
                workflow that takes none; ``new_run`` without ``checkpoint_id``.
            CheckpointNotFoundError, CheckpointCorruptError, InvalidIdError: bad checkpoint.
            RunLockedError: another process is executing that run.
            RunStateError: answers that match no pending request, or none for a paused run.
            AnswerTypeError: an answer does not fit its request's ``response_type``; nothing
                is recorded.
            WorkflowChangedError: the code changed and ``allow_changed`` is False.
            UnencodableValueError: the message cannot be stored.
        """
        options = RunOptions(allow_changed, execute, shuffle_seed, drain_timeout)
        if message is not NO_MESSAGE and (checkpoint_id is not None or responses is not None):
            raise RunArgumentError(
                f"workflow {self.name!r}: a message starts a fresh run, so it cannot go with "
                f"{'checkpoint_id' if checkpoint_id is not None else 'responses'} (a restored "
                "run uses the message its root recorded); pass one or the other"
            )
        if checkpoint_id is None and responses is not None:
            if self._last_paused is None:
                raise RunStateError("-", "no paused run to answer: pass checkpoint_id")
            checkpoint_id = self._last_paused
        if checkpoint_id is not None:
            return await self._restore(
                checkpoint_id, responses or {}, run_id, options, on_event, new_run
            )
        if new_run:
            raise RunArgumentError(
                f"workflow {self.name!r}: new_run=True restores a checkpoint into a new run; "
                "it needs checkpoint_id"
            )
        value = self._message.message_for(message)
        try:
            encoded = encode(value)
        except UnencodableValueError as exc:
            raise exc.for_key("<input>") from None
        run_id = validate_run_id(run_id) if run_id is not None else new_run_id()
        lock = lock_run(self.storage, run_id)
        try:
            if await self.storage.get_latest(run_id=run_id) is not None:
                raise RunStateError(run_id, "exists already; pick another run id, or resume it")
            chain = CheckpointChain(self.storage, run_id, self.name)
            await chain.commit(self._root_payload(encoded))
        except BaseException:
            lock.release()
            raise
        return await self._drive(chain, lock, value, History(), {}, options, on_event)

    def _root_payload(self, encoded_input: Any, restored_from: str | None = None) -> RootPayload:
        return RootPayload(
            encoded_input, self.reference, self.signature, restored_from, self.target
        )

    async def resume(
        self,
        run_id: str,
        *,
        responses: dict[str, Any] | None = None,
        allow_changed: bool = False,
        drain_timeout: float = 30.0,
        on_event: EventListener | None = None,
    ) -> WorkflowRunResult:
        """Continue ``run_id`` from its head, in its own chain: answer it, retry it or recover it.

        Unlike ``run(checkpoint_id=...)``, this takes the run's lock before it reads the head,
        so it never turns into a restore: if another process holds the run, it fails with
        ``RunLockedError``; if the run has completed, with ``RunStateError``.
        """
        options = RunOptions(allow_changed, drain_timeout=drain_timeout)
        return await self._continue(
            validate_run_id(run_id), None, responses or {}, options, on_event
        )

    def _check_code(self, chain: list[Checkpoint], upto: int, options: RunOptions) -> str:
        root = chain[0]
        if root.workflow_name != self.name:
            raise RunStateError(
                root.run_id, f"belongs to workflow {root.workflow_name!r}, not {self.name!r}"
            )
        recorded = recorded_signature(chain, upto)
        if recorded != self.signature and not options.allow_changed:
            raise WorkflowChangedError(self.name, recorded, self.signature)
        return recorded

    async def _restore(
        self,
        checkpoint_id: str,
        responses: dict[str, Any],
        run_id: str | None,
        options: RunOptions,
        on_event: EventListener | None,
        new_run: bool,
    ) -> WorkflowRunResult:
        storage = self.storage
        chain, target = await load_target(storage, checkpoint_id)
        root = chain[0]
        if target is chain[-1] and target.kind != Kind.COMPLETED and not new_run:
            if run_id is not None and run_id != root.run_id:
                raise RunArgumentError(
                    f"{checkpoint_id} is the head of run {root.run_id!r}, which continues in "
                    f"place, so run_id={run_id!r} cannot apply; pass new_run=True to restore "
                    "it into a new run with that id"
                )
            return await self._continue(root.run_id, checkpoint_id, responses, options, on_event)
        if target.kind == Kind.PAUSE and not new_run:
            # Its answers were given already (maybe a moment ago, by another process): taking
            # this for a restore would quietly run the rest again in a new run.
            raise RunStateError(
                root.run_id,
                f"{checkpoint_id} was answered already (the run is at {chain[-1].checkpoint_id}); "
                "to branch from it anyway, pass new_run=True",
            )
        self._check_code(chain, target.seq, options)
        message = decode(RootPayload.of(root).input, where=f"{root.checkpoint_id} input")
        if target.kind == Kind.COMPLETED:
            options = dataclasses.replace(options, complete_history=True)
        history = await collect_history(storage, chain, target.seq)
        check_answers(root.run_id, chain, target, responses, require=False)
        responses = convert_answers(chain, target, responses)
        new_id = validate_run_id(run_id) if run_id is not None else new_run_id()
        lock = lock_run(storage, new_id)
        try:
            run_chain = CheckpointChain(
                storage, new_id, self.name, origin=(root.run_id, checkpoint_id)
            )
            await run_chain.commit(
                self._root_payload(RootPayload.of(root).input, restored_from=checkpoint_id)
            )
            if responses:
                await run_chain.commit(encode_answers(responses, "answer"))
        except BaseException:
            lock.release()
            raise
        return await self._drive(run_chain, lock, message, history, responses, options, on_event)

    async def _continue(
        self,
        run_id: str,
        expected_head: str | None,
        responses: dict[str, Any],
        options: RunOptions,
        on_event: EventListener | None,
    ) -> WorkflowRunResult:
        """Continue a run's own chain from its head, reading the head under the run's lock."""
        storage = self.storage
        lock = lock_run(storage, run_id)
        try:
            chain = await load_chain(storage, run_id)
            root, target = chain[0], chain[-1]
            if expected_head is not None and target.checkpoint_id != expected_head:
                raise RunStateError(
                    run_id,
                    f"moved past {expected_head} while resuming (now at {target.checkpoint_id})",
                )
            if target.kind == Kind.COMPLETED:
                raise RunStateError(
                    run_id, f"has completed; restore {target.checkpoint_id} to run it again"
                )
            recorded = self._check_code(chain, target.seq, options)
            message = decode(RootPayload.of(root).input, where=f"{root.checkpoint_id} input")
            check_answers(run_id, chain, target, responses, require=target.kind == Kind.PAUSE)
            responses = convert_answers(chain, target, responses)
            history = await collect_history(storage, chain, target.seq)
            origin = (root.origin_run_id, root.origin_checkpoint_id)
            run_chain = CheckpointChain(
                storage,
                run_id,
                self.name,
                head=target,
                origin=origin if origin[0] and origin[1] else None,  # type: ignore[arg-type]
            )
            reason = "answer" if responses else "continue" if target.kind == Kind.PAUSE else "retry"
            changed = self.signature if recorded != self.signature else None
            await run_chain.commit(encode_answers(responses, reason, signature=changed))
            clear_pause(storage, run_id)
        except BaseException:
            lock.release()
            raise
        return await self._drive(run_chain, lock, message, history, responses, options, on_event)

    async def _drive(
        self,
        chain: CheckpointChain,
        lock: RunLock,
        message: Any,
        history: History,
        responses: dict[str, Any],
        options: RunOptions,
        on_event: EventListener | None,
    ) -> WorkflowRunResult:
        storage = self.storage
        answers = {
            key: decode(value, where=f"answer to {key}") for key, value in history.responses.items()
        }
        answers.update(responses)
        run = Run(
            run_id=chain.run_id,
            chain=chain,
            recorded=RecordedCalls(history.records),
            responses=answers,
            options=options,
            on_event=on_event,
            pause_probe=lambda: pause_requested(storage, chain.run_id),
        )

        def announce(checkpoint: Checkpoint) -> None:
            run.emit("checkpoint", None, checkpoint.checkpoint_id)

        chain.on_commit = announce
        run.emit("run_started", None, {"checkpoint": chain.head_id})
        try:
            outcome = await run.execute(lambda: self._message.call(self.fn, message, run.context))
            outcome = await commit_ending(run, outcome)
            if outcome.status == "paused":
                clear_pause(storage, run.run_id)
                self._last_paused = chain.head_id
        finally:
            await chain.drain()
            lock.release()
        return build_result(run, outcome)

@overload
def workflow(fn: Callable[..., Awaitable[Any]], /) -> Workflow: ...


@overload
def workflow(
    *,
    name: str | None = None,
    description: str | None = None,
    checkpoint_storage: CheckpointStorage | None = None,
) -> Callable[[Callable[..., Awaitable[Any]]], Workflow]: ...


def workflow(
    fn: Callable[..., Awaitable[Any]] | None = None,
    /,
    *,
    name: str | None = None,
    description: str | None = None,
    checkpoint_storage: CheckpointStorage | None = None,
) -> Workflow | Callable[[Callable[..., Awaitable[Any]]], Workflow]:
    """Make an async function a workflow: ``@workflow`` or ``@workflow(name=..., ...)``.

    Raises:
        WorkflowDefinitionError: (a ``TypeError``) the function is not ``async`` or takes more
            than one parameter besides its ``RunContext``.
    """
    if fn is not None:
        return Workflow(
            fn, name=name, description=description, checkpoint_storage=checkpoint_storage
        )
    return lambda f: Workflow(
        f, name=name, description=description, checkpoint_storage=checkpoint_storage
    )
