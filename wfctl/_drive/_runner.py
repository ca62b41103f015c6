"""The drivers behind ``wfctl run``, ``resume`` and ``replay``: load, run, handle Ctrl-C, report.

Each driver owns its event loop (so it can handle SIGINT through it), makes one engine call and
returns a frozen report; the CLI only renders it and picks the exit code.

Ctrl-C while a run executes (see :mod:`wfctl._drive._interrupts`):

1. the first asks the run to pause (``request_pause``: the engine stops at the next step
   boundary, lets running steps finish and writes a pause checkpoint) -- the outcome is
   ``interrupted``;
2. the second cancels the run (its head stays at the last checkpoint written, so it can still
   be resumed) -- the outcome is ``aborted``.
"""

from __future__ import annotations

import asyncio
import shlex
from collections.abc import Awaitable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from wfctl._config import StoreRef, trusts_store
from wfctl._engine._admission import refuse_cancelled
from wfctl._engine._ending import failed_result, own_notes
from wfctl._engine._events import error_message
from wfctl._engine._response_types import type_name
from wfctl._engine._restore import load_outline
from wfctl._engine._trust import FOREIGN_REMEDY, CodeRule, recorded_code_check
from wfctl._errors import (
    ReplayInterrupted,
    RunCancelledError,
    RunStateError,
    UnencodableValueError,
    UnregisteredTypeError,
    WfctlError,
    WorkflowChangedError,
)
from wfctl._ids import new_run_id
from wfctl._inspect._documents import document, utc_time
from wfctl._inspect._next_steps import (
    Hint,
    failed_run_hints,
    failure_summary,
    resume_command,
    store_option,
    with_allow_changed,
)
from wfctl._records._checkpoint import Kind, validate_run_id
from wfctl._records._codec import encode
from wfctl._records._payloads import RootPayload, recorded_requests
from wfctl._redact import shown
from wfctl._storage import FileCheckpointStorage
from wfctl._storage._durability import FULL, Durability
from wfctl._storage._open import open_storage
from wfctl._storage._protocol import RunStore

from ._answers import (
    TEMPLATE_NAME,
    PendingRequest,
    parse_responses,
    write_answers_template,
)
from ._inputs import NotJsonError, load_json, load_toml, read_text
from ._interrupts import Drive, EventListener, InterruptListener, drive_call
from ._loader import load_workflow

if TYPE_CHECKING:
    from wfctl._engine._events import WorkflowEvent
    from wfctl._engine._result import WorkflowRunResult
    from wfctl._engine._workflow import Workflow
    from wfctl._inspect._replay import ReplayRows, RowSink
    from wfctl._records._checkpoint import Checkpoint

__all__ = [
    "EventListener",
    "InterruptListener",
    "ReplayInterrupted",
    "RunReport",
    "read_input",
    "replay_checkpoint",
    "resume_run",
    "run_workflow",
]

NO_INPUT: Any = object()


@dataclass(frozen=True, slots=True)
class RunReport:
    """How a ``wfctl run``/``resume`` ended.

    ``status`` is ``completed``, ``failed``, ``paused`` (waiting for answers), ``interrupted``
    (stopped by Ctrl-C, a signal or ``wfctl pause`` with nothing to answer: the word every
    command uses for the run), ``cancelled`` (``wfctl cancel`` ended it while it ran: ``error``
    says who asked) or ``aborted`` (a second Ctrl-C cancelled it). ``outputs`` are encoded
    with the checkpoint codec, so they are plain JSON. ``answers_file`` is the template written
    when the run paused on requests. ``target`` is the code that was imported, and
    ``target_recorded`` says whether it came from the run's record (not the command line).
    A failed run names the step that raised (``failed_step``,
    None when the body raised) and the commands that can help (``hints``).
    """

    status: str
    run_id: str
    workflow_name: str
    checkpoint_id: str | None
    store: StoreRef
    outputs: tuple[Any, ...] = ()
    requests: tuple[PendingRequest, ...] = ()
    error: str | None = None
    answers_file: Path | None = None
    store_option: str = ""
    executed: int = 0
    cached: int = 0
    changed: int = 0
    elapsed: float = 0.0
    target: str = ""
    target_recorded: bool = False
    failed_step: str | None = None
    #: It failed reading a recorded value whose class this process has not registered.
    unregistered: bool = False
    hints: tuple[Hint, ...] = ()
    #: The ``step_retrying`` events of this call: each failed attempt that was retried.
    retries: tuple[dict[str, Any], ...] = ()
    #: How this call's commits were synced (``--durability``).
    durability: Durability = FULL

    @property
    def resume_command(self) -> str:
        """The command that continues this run (with the answers file when there is one)."""
        command = f"wfctl resume {self.run_id}{self.store_option}"
        if self.answers_file is not None:
            command += f" --responses {shlex.quote(str(self.answers_file))}"
        return command

    @property
    def failure_note(self) -> str:
        """For a failed run: where it failed and what a retry would do about it."""
        return failure_summary(self.failed_step, unregistered=self.unregistered)

    @property
    def response_example(self) -> str | None:
        """A ``--response KEY=VALUE`` form of the resume command, for the first request."""
        if not self.requests:
            return None
        key = self.requests[0].key
        return (
            f"wfctl resume {self.run_id}{self.store_option} --response {shlex.quote(key + '=...')}"
        )

    def to_json(self) -> dict[str, Any]:
        """Return the ``wfctl/run@1`` document (``run`` and ``resume``; see docs/json.md)."""
        resumable = self.status in ("paused", "interrupted", "aborted", "failed")
        resume_command = self.resume_command if resumable else None
        if self.hints:  # a failed run: the most direct command that can help
            resume_command = self.hints[0].command
        return document(
            "run",
            {
                "run_id": self.run_id,
                "workflow": self.workflow_name,
                "status": self.status,
                "head_checkpoint_id": self.checkpoint_id,
                "store": shown(self.store),
                "outputs": list(self.outputs),
                "requests": [r.to_json() for r in self.requests],
                "error": self.error,
                "answers_file": str(self.answers_file) if self.answers_file else None,
                "resume_command": resume_command,
                "failed_step_key": self.failed_step,
                "hints": [hint.to_json() for hint in self.hints],
                "retries": [_retry_json(retry) for retry in self.retries],
                "step_counts": {
                    "executed": self.executed,
                    "cached": self.cached,
                    "changed": self.changed,
                },
                "duration_s": round(self.elapsed, 6),
                "target": self.target,
                "target_recorded": self.target_recorded,
                "durability": {
                    "mode": self.durability.mode,
                    "batch_steps": self.durability.batch_steps,
                    "batch_ms": self.durability.batch_ms,
                },
            },
        )


def _retry_json(retry: dict[str, Any]) -> dict[str, Any]:
    """Return a ``step_retrying`` event's data in the document vocabulary."""
    retry_at = retry.get("retry_at")
    return {
        "key": retry.get("key"),
        "next_attempt": retry.get("attempt"),
        "max_attempts": retry.get("attempts"),
        "delay_s": retry.get("delay"),
        "retry_at": utc_time(retry_at) if isinstance(retry_at, str) else None,
        "error": retry.get("error"),
    }


def _encode_all(values: Sequence[Any]) -> tuple[Any, ...]:
    out = []
    for value in values:
        try:
            out.append(encode(value))
        except UnencodableValueError:
            out.append(repr(value))
    return tuple(out)


class RunFacts:
    """What a run's report needs from its events, gathered as they happen.

    The CLI keeps no event history on the result (``event_history=0``: a long run's events
    would pile up in memory), so the retries and the failed step are collected from the live
    events instead, every one of them, however long the run.
    """

    def __init__(self) -> None:
        self.retries: list[dict[str, Any]] = []
        self.failed_step: str | None = None

    def listening(self, listener: EventListener) -> EventListener:
        """Return ``listener`` with this collector in front of it."""

        def both(event: WorkflowEvent) -> None:
            if event.kind == "step_retrying":
                self.retries.append({"key": event.key, **event.data})
            elif event.kind == "run_failed" and isinstance(event.data, dict):
                self.failed_step = event.data.get("step")
            listener(event)

        return both


def _outcome(
    drive: Drive[WorkflowRunResult],
    facts: RunFacts,
    storage: RunStore,
    workflow: Workflow,
    store: StoreRef,
    target_recorded: bool = False,
) -> RunReport:
    workflow_name, loaded = workflow.name, workflow.target or ""
    result = drive.value
    run_id = result.run_id if result is not None else drive.run_id or ""
    if result is None:  # aborted: the head is whatever was committed last
        head = asyncio.run(storage.get_latest(run_id=run_id)) if run_id else None
        return RunReport(
            status="aborted",
            run_id=run_id,
            workflow_name=workflow_name,
            checkpoint_id=head.checkpoint_id if head is not None else None,
            store=store,
            store_option=store_option(store),
            elapsed=drive.elapsed,
            target=loaded,
            target_recorded=target_recorded,
            durability=_durability_of(storage),
        )
    requests = tuple(
        PendingRequest(
            r.request_id, _encode_all([r.request_data])[0], type_name(r.response_type, r.request_id)
        )
        for r in result.get_request_info_events()
    )
    status: str = result.status
    if status == "paused" and not requests:  # as its pause record reads (``ended_as``)
        status = "interrupted"  # by Ctrl-C or SIGTERM here, or by `wfctl pause` from elsewhere
    answers = None
    if isinstance(storage, FileCheckpointStorage):  # the template lives beside the journal
        run_dir = storage.root / "runs" / run_id
        if result.status == "paused" and requests:
            answers = write_answers_template(run_dir, run_id, requests)
        else:  # an earlier pause's template is stale now
            (run_dir / TEMPLATE_NAME).unlink(missing_ok=True)
    failed_step: str | None = None
    hints: tuple[Hint, ...] = ()
    if status == "failed":
        failed_step = facts.failed_step
        hints = failed_run_hints(result, failed_step, storage, workflow, store)
    return RunReport(
        status=status,
        run_id=run_id,
        workflow_name=workflow_name,
        checkpoint_id=result.checkpoint_id or None,
        store=store,
        outputs=_encode_all(result.get_outputs()),
        requests=requests,
        error=_error_text(result.error),
        answers_file=answers,
        store_option=store_option(store),
        executed=len(result.executed),
        cached=len(result.cached),
        changed=len(result.changed),
        elapsed=drive.elapsed,
        target=loaded,
        target_recorded=target_recorded,
        failed_step=failed_step,
        unregistered=isinstance(result.error, UnregisteredTypeError),
        hints=hints,
        retries=tuple(facts.retries),
        durability=_durability_of(storage),
    )


def _error_text(error: BaseException | None) -> str | None:
    """What the report says went wrong: who cancelled the run, or the error described."""
    if isinstance(error, RunCancelledError):
        return str(error)  # its own sentence: who asked, when, why
    return _describe(error) if error is not None else None


def _describe(error: BaseException) -> str:
    """Return ``Type: message``, then the error's notes (what else went wrong), on one line.

    The library's note on how to retry the run is left out: the report gives the commands.
    """
    return "; ".join([f"{type(error).__name__}: {error_message(error)}", *own_notes(error)])


async def _settled(call: Awaitable[WorkflowRunResult]) -> WorkflowRunResult:
    """Return what a ``run``/``resume`` call gave, a failed run included (those raise)."""
    try:
        return await call
    except BaseException as exc:
        result = failed_result(exc)
        if result is None:
            raise
        return result


def read_input(input_json: str | None, input_file: Path | None) -> Any:
    """Return the run's input from ``--input`` (JSON) or ``--input-file`` (JSON or TOML).

    Returns :data:`NO_INPUT` when neither is given.

    Both are held to the limits of :mod:`wfctl._drive._inputs` (size, depth, integer length,
    strict JSON).

    Raises:
        WfctlError: both are given, the JSON is invalid, the file cannot be read or parsed,
            or either is over a limit.
    """
    if input_json is not None and input_file is not None:
        raise WfctlError("give --input or --input-file, not both")
    if input_json is not None:
        try:
            return load_json(input_json, "--input")
        except NotJsonError as exc:
            raise NotJsonError(f"{exc}; quote text as JSON, e.g. --input '\"cats\"'") from None
    if input_file is None:
        return NO_INPUT
    what = f"input file {str(input_file)!r}"
    text = read_text(input_file, what)
    if input_file.suffix.lower() == ".toml":
        return load_toml(text, what)
    return load_json(text, what)


def run_workflow(
    target: str,
    *,
    store: StoreRef,
    input_json: str | None = None,
    input_file: Path | None = None,
    run_id: str | None = None,
    drain_timeout: float = 30.0,
    durability: Durability | None = None,
    on_event: EventListener | None = None,
    on_interrupt: InterruptListener | None = None,
) -> RunReport:
    """Load ``target`` and run it to its end, a pause, or Ctrl-C, in the store ``store``.

    The input is ``input_json`` (JSON text) or the content of ``input_file`` (see
    :func:`read_input`); with neither, the workflow gets no message. ``durability`` is how
    its commits are synced (default ``full``).

    Raises:
        WfctlError: the input is invalid or unreadable.
        WorkflowLoadError: the target cannot be loaded.
        RunArgumentError: the input does not fit the workflow parameter's annotation.
        InvalidIdError: ``run_id`` is malformed.
        RunStateError: a run with that id exists already.
        UnencodableValueError: the input cannot be stored.
    """
    message = read_input(input_json, input_file)
    workflow = load_workflow(target)
    if message is not NO_INPUT:  # checked against its annotation before a store is opened
        message = workflow.message_from_data(message)
    else:  # a parameter without a default is refused in the command line's words
        workflow.message_for()
    storage = open_storage(store, must_exist=False, durability=durability or FULL)
    # The engine refuses an existing run id itself, under the run's lock.
    run_id = validate_run_id(run_id) if run_id is not None else new_run_id()
    bound = workflow.build(checkpoint_storage=storage)
    args = () if message is NO_INPUT else (message,)

    facts = RunFacts()

    def start(listener: EventListener) -> Awaitable[WorkflowRunResult]:
        return _settled(
            bound.run(
                *args,
                run_id=run_id,
                drain_timeout=drain_timeout,
                on_event=facts.listening(listener),
                event_history=0,
            )
        )

    drive = drive_call(start, storage, run_id, on_event, on_interrupt)
    return _outcome(drive, facts, storage, workflow, store)


def resume_run(
    run_id: str,
    *,
    store: StoreRef,
    responses: Sequence[str] = (),
    responses_file: Path | None = None,
    target: str | None = None,
    trust_store: bool = False,
    allow_changed: bool = False,
    drain_timeout: float = 30.0,
    durability: Durability | None = None,
    on_event: EventListener | None = None,
    on_interrupt: InterruptListener | None = None,
) -> RunReport:
    """Continue a paused, failed or interrupted run from its head, in the same chain.

    The workflow is reloaded from the ``target`` its root recorded (else its ``module:qualname``
    reference) unless ``target`` is given; see :func:`_load_recorded` for when a recorded
    target is refused (``trust_store`` trusts a store another user owns). With
    ``allow_changed`` the run continues although its code changed (the fix of a failed run):
    recorded steps are served from the record and the rest run the new code. ``durability``
    is how its new commits are synced (default ``full``).

    Raises:
        RunNotFoundError, InvalidIdError: no such run.
        CheckpointCorruptError: its chain cannot be trusted.
        RunStateError: it completed, an answer names no pending request, or a paused run got
            no answers.
        AnswerTypeError: an answer does not fit its request's type (nothing is recorded).
        RunLockedError: another process is executing it.
        UntrustedTargetError: its recorded target is refused (see :func:`_load_recorded`).
        WorkflowLoadError: its workflow cannot be loaded.
        WorkflowChangedError: its code changed since it was written and ``allow_changed`` is
            False.
    """
    storage = open_storage(store, must_exist=False, durability=durability or FULL)
    # Its root, pauses and head: not its steps, which the resume itself folds as it reads them.
    chain = asyncio.run(load_outline(storage, validate_run_id(run_id)))
    root, head = chain[0], chain[-1]
    if head.kind == Kind.COMPLETED:
        raise RunStateError(
            run_id,
            "has completed; nothing to resume (to run it again from a checkpoint: "
            f"wfctl replay --checkpoint {head.checkpoint_id}{store_option(store)})",
        )
    refuse_cancelled(
        run_id,
        head,
        f"wfctl replay --checkpoint {head.previous_checkpoint_id}{store_option(store)}",
    )
    # Every request the run paused on: an answer given before may be sent again.
    types = {r.request_id: r.response_type for c in chain for r in recorded_requests(c)}
    answers = parse_responses(responses, responses_file, types)
    workflow = _load_recorded(root, store, target, trust_store)
    bound = workflow.build(checkpoint_storage=storage)

    facts = RunFacts()

    def start(listener: EventListener) -> Awaitable[WorkflowRunResult]:
        # resume() reads the head again under the run's lock: a resumer racing this one makes
        # it fail (RunLockedError / RunStateError), never quietly start a new run.
        return _settled(
            bound.resume(
                run_id,
                responses=answers,
                allow_changed=allow_changed,
                drain_timeout=drain_timeout,
                on_event=facts.listening(listener),
                event_history=0,
            )
        )

    try:
        drive = drive_call(start, storage, run_id, on_event, on_interrupt)
    except WorkflowChangedError as exc:  # say exactly how to go ahead with the new code
        given = [("--target", target), *(("--response", pair) for pair in responses)]
        given.append(("--responses", str(responses_file) if responses_file else None))
        given.append(("--trust-store", "" if trust_store else None))
        again = resume_command(run_id, store)
        raise exc.with_command(with_allow_changed(again, given)) from None
    return _outcome(drive, facts, storage, workflow, store, target_recorded=target is None)


def _durability_of(storage: RunStore) -> Durability:
    """Return how ``storage`` syncs commits (a server commits each: ``full``)."""
    return storage.durability if isinstance(storage, FileCheckpointStorage) else FULL


def _load_recorded(
    root: Checkpoint, store: StoreRef, target: str | None, trust_store: bool
) -> Workflow:
    """Load ``target``, else the target ``root`` recorded -- if wfctl may import it.

    A recorded target is imported under the one rule :func:`wfctl._engine._trust.recorded_code_check`
    applies for resume, replay and worker alike: outside the store, not Python's own library,
    not found only through the current directory unless the run was started there, and --
    in a directory store -- only from a store of this user's or trusted (``trust_store``, or
    ``trusted_stores`` in ``wfctl.toml``); from a server store not trusted, only from under the
    current directory. A target given on the command line is the user's own choice and is
    loaded as ``wfctl run`` loads one.

    Raises:
        UntrustedTargetError: the recorded target is refused.
        WorkflowLoadError: the workflow cannot be loaded.
        WfctlError: the root records no target.
    """
    if target is not None:
        return load_workflow(target)
    run_id = root.run_id
    payload = RootPayload.of(root)
    recorded = payload.target or payload.workflow
    if not isinstance(recorded, str) or not recorded:
        raise WfctlError(f"run {run_id!r} records no workflow target; pass --target")
    if isinstance(store, str):  # a server: anyone who can write to it could name the code
        trusted = trust_store or trusts_store(store)
        rule = CodeRule(
            None,
            () if trusted else (Path.cwd(),),
            "the current directory",
            trusted=trusted,
            remedy=FOREIGN_REMEDY,
        )
    else:
        rule = CodeRule(store, trusted=trust_store)
    check = recorded_code_check(recorded, run_id, payload.started_in, rule)
    return load_workflow(recorded, before_import=check)


def replay_checkpoint(
    checkpoint_id: str,
    *,
    store: StoreRef,
    target: str | None = None,
    trust_store: bool = False,
    allow_changed: bool = False,
    execute: bool = True,
    shuffle_seed: int | None = None,
    on_event: EventListener | None = None,
    on_interrupt: InterruptListener | None = None,
    rows_to: RowSink | None = None,
) -> ReplayRows:
    """Replay ``checkpoint_id`` as a new run, and return its comparison with the source run,
    a row at a time as it is iterated (:class:`~wfctl._inspect._replay.ReplayRows`).

    The workflow is loaded as :func:`resume_run` loads it (``target``, else the source run's
    recorded target, if wfctl may import it). ``rows_to``, if given, is handed the first rows
    while the replay runs (those of the records it is served in the source's order); the rows
    returned are the ones after them.

    Raises:
        CheckpointNotFoundError, InvalidIdError: no such checkpoint.
        CheckpointCorruptError: the source chain cannot be trusted.
        UntrustedTargetError: the recorded target is refused (see :func:`_load_recorded`).
        WorkflowLoadError: the workflow cannot be loaded.
        WorkflowChangedError: the code changed and ``allow_changed`` is False.
        ReplayInterrupted: Ctrl-C paused or aborted the replay (its message says which).
    """
    from wfctl._engine._run import RunOptions
    from wfctl._inspect._replay import read_source, start_replay

    storage = open_storage(store, must_exist=False)
    # Read once, folded as read: the trust check, the restore and the diff all use it.
    source = asyncio.run(read_source(storage, checkpoint_id))
    workflow = _load_recorded(source.outline[0], store, target, trust_store)
    bound = workflow.build(checkpoint_storage=storage)

    def start(listener: EventListener) -> Awaitable[ReplayRows]:
        options = RunOptions(allow_changed, execute, shuffle_seed)
        return start_replay(bound, checkpoint_id, source, options, listener, rows_to=rows_to)

    try:
        drive = drive_call(start, storage, None, on_event, on_interrupt)
    except WorkflowChangedError as exc:  # say exactly how to go ahead with the new code
        given = [
            ("--target", target),
            ("--no-execute", "" if not execute else None),
            ("--shuffle", str(shuffle_seed) if shuffle_seed is not None else None),
        ]
        again = f"wfctl replay --checkpoint {shlex.quote(checkpoint_id)}{store_option(store)}"
        raise exc.with_command(with_allow_changed(again, given)) from None
    rows = drive.value
    if rows is None:
        raise ReplayInterrupted(f"replay run {drive.run_id or '(not started)'} aborted")
    report = rows.report
    if (drive.interrupts or drive.stopped_by) and report.replay_status == "paused":
        raise ReplayInterrupted(
            f"replay run {report.replay_run_id} paused; continue it with: "
            f"wfctl resume {report.replay_run_id}{store_option(store)}"
        )
    rows.report = replace(report, target=workflow.target or "", target_recorded=target is None)
    return rows
