"""Admitting a run: what happens between ``Workflow.run``/``resume`` and the first line of the body.

There are three ways in, and each takes the same shape: check the arguments and what the run
starts from, take the run's lock (:func:`admitting`), commit the run's first checkpoint(s) under
it, and hand the locked chain to :func:`wfctl._engine._driving.drive`. If anything fails before the body
runs, the lock is released and the error propagates.

- :func:`start_run`: a fresh run; its root records the message.
- :func:`restore_run`: ``run(checkpoint_id=...)``; a run's head continues in place
  (:func:`continue_run`), any other checkpoint becomes a new run (:func:`restore_new_run`).
- :func:`continue_run`: ``resume(run_id)``; reads the head *under* the lock, so it never turns
  into a restore.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
from collections.abc import AsyncIterator, Sequence
from typing import TYPE_CHECKING, Any, Final

from wfctl._errors import (
    CheckpointCorruptError,
    RunArgumentError,
    RunLockedError,
    RunStateError,
    UnencodableValueError,
    WfctlError,
    WorkflowChangedError,
)
from wfctl._ids import new_run_id
from wfctl._records._checkpoint import Checkpoint, Kind, validate_run_id
from wfctl._records._codec import decode, encode
from wfctl._records._payloads import RootPayload, recorded_signature
from wfctl._storage._capabilities import clear_pause, lease_run
from wfctl._storage._protocol import CheckpointStorage, RunLease

from ._chain import CheckpointChain
from ._driving import Driven, EventListener, drive
from ._restore import (
    History,
    check_answers,
    collect_history,
    convert_answers,
    drop_resent_answers,
    encode_answers,
    load_folded,
    load_source,
)
from ._run import RunOptions
from ._trust import names_a_file

if TYPE_CHECKING:
    from ._definition import DefinedWorkflow

__all__ = [
    "admitting",
    "continue_run",
    "continuing_chain",
    "lease_new_run",
    "place_in",
    "refuse_cancelled",
    "restore_new_run",
    "restore_run",
    "start_run",
    "submit_run",
]


@contextlib.asynccontextmanager
async def admitting(
    storage: CheckpointStorage, run_id: str, held: RunLease | None = None
) -> AsyncIterator[RunLease]:
    """Take ``run_id``'s lease for the admission in the block; release it if that fails.

    On success the lease stays held: the run is driven under it and :func:`drive` releases it.

    Args:
        held: the run's lease, when the caller holds it already (a worker that claimed the
            run); it is used instead of taking one, and released the same way.

    Raises:
        RunLockedError: another process is driving the run.
    """
    if held is not None and held.run_id != run_id:
        raise RunArgumentError(f"the lease held is run {held.run_id!r}'s, not {run_id!r}'s")
    lease = held if held is not None else await lease_run(storage, run_id)
    try:
        yield lease
    except BaseException:
        await lease.release()
        raise


#: How many fresh ids a new run tries: one is replaced only when it is taken already, which
#: needs another run made in the same second with the same 32 random bits.
FRESH_ID_TRIES: Final = 8


async def lease_new_run(storage: CheckpointStorage, run_id: str | None) -> RunLease:
    """Take the lease of a run that has no checkpoint yet: ``run_id``, else a fresh id.

    A fresh id is the caller's promise of a new run, so one that is taken (a run holds it, one
    that does not verify included, or another process is admitting one under it) is replaced
    by another, instead of refusing a run id the caller never chose. ``run_id`` is the
    caller's, and is refused.

    Raises:
        InvalidIdError: ``run_id`` is malformed.
        RunStateError: a run ``run_id`` exists already.
        RunLockedError: another process holds ``run_id``'s lease.
    """
    if run_id is not None:
        lease = await lease_run(storage, validate_run_id(run_id))
        if await _is_new(storage, lease):
            return lease
        raise RunStateError(run_id, "exists already; pick another run id, or resume it")
    for _ in range(FRESH_ID_TRIES):
        try:
            lease = await lease_run(storage, new_run_id())
            if await _is_new(storage, lease):
                return lease
        except (RunLockedError, CheckpointCorruptError):
            continue  # held by another admission, or a run that does not verify has the id
    raise WfctlError(  # pragma: no cover - 8 collisions of 32 random bits in a row
        f"no free run id in {FRESH_ID_TRIES} tries: each was taken already"
    )


async def _is_new(storage: CheckpointStorage, lease: RunLease) -> bool:
    """Whether the leased run has no checkpoint; if it has, release its lease."""
    try:
        if await storage.get_latest(run_id=lease.run_id) is None:
            return True
    except BaseException:
        await lease.release()
        raise
    await lease.release()
    return False


def refuse_cancelled(run_id: str, head: Checkpoint, again: str) -> None:
    """Refuse to go on with a run whose head is a ``cancelled`` record (it ended for good).

    Args:
        again: how to run it again from where it stopped (a command or a call), for the message.

    Raises:
        RunStateError: ``head`` is a cancelled record.
    """
    if head.kind == Kind.CANCELLED:
        raise RunStateError(
            run_id,
            f"was cancelled ({head.checkpoint_id}) and cannot be resumed; to run it again "
            f"from where it stopped: {again}",
        )


def continuing_chain(
    storage: CheckpointStorage, chain: list[Checkpoint], workflow_name: str
) -> CheckpointChain:
    """Return a chain that commits after ``chain``'s head, in its run, keeping its origin
    and its root's format version."""
    root = chain[0]
    origin = (root.origin_run_id, root.origin_checkpoint_id)
    return CheckpointChain(
        storage,
        root.run_id,
        workflow_name,
        head=chain[-1],
        origin=origin if origin[0] and origin[1] else None,  # type: ignore[arg-type]
        version=root.version,
    )


def root_payload(
    workflow: DefinedWorkflow,
    encoded_input: Any,
    restored_from: str | None = None,
    submitted: bool = False,
) -> RootPayload:
    """Return the payload of a run's root: its input, and how to find and check its code.

    Code found by module name records the directory the run was started in: a later import
    found through the current directory is allowed only from there (see :mod:`._trust`).
    """
    code = workflow.target or workflow.reference or ""
    started_in = None
    if not names_a_file(code.rpartition(":")[0] or code):
        with contextlib.suppress(OSError):  # a directory removed under the process: none
            started_in = os.getcwd()
    return RootPayload(
        encoded_input,
        workflow.reference,
        workflow.signature,
        restored_from,
        workflow.target,
        submitted,
        started_in,
    )


def place_in(chain: Sequence[Checkpoint], target: Checkpoint) -> int:
    """Return where ``chain`` holds ``target``: its seq in a whole chain, its place in an outline
    (a chain without its step checkpoints but some, see :func:`~._restore.load_source`)."""
    if target.seq < len(chain) and chain[target.seq] is target:
        return target.seq
    return next(index for index, checkpoint in enumerate(chain) if checkpoint is target)


def check_code(
    workflow: DefinedWorkflow, chain: list[Checkpoint], upto: int, options: RunOptions
) -> str:
    """Return the signature that wrote ``chain[upto]``, refusing changed code unless allowed.

    Raises:
        RunStateError: the chain belongs to another workflow.
        WorkflowChangedError: the code changed and ``options.allow_changed`` is False.
    """
    root = chain[0]
    if root.workflow_name != workflow.name:
        raise RunStateError(
            root.run_id, f"belongs to workflow {root.workflow_name!r}, not {workflow.name!r}"
        )
    recorded = recorded_signature(chain, upto)
    if recorded != workflow.signature and not options.allow_changed:
        raise WorkflowChangedError(workflow.name, recorded, workflow.signature)
    return recorded


async def _commit_root(
    workflow: DefinedWorkflow, lease: RunLease, encoded: Any, submitted: bool
) -> CheckpointChain:
    """Commit a fresh run's root under its ``lease`` (of a new run: :func:`lease_new_run`)."""
    chain = CheckpointChain(workflow.storage, lease.run_id, workflow.name)
    await chain.commit(root_payload(workflow, encoded, submitted=submitted))
    return chain


def _encoded_input(value: Any) -> Any:
    try:
        return encode(value)
    except UnencodableValueError as exc:
        raise exc.for_key("<input>") from None


async def start_run(
    workflow: DefinedWorkflow,
    value: Any,
    run_id: str | None,
    options: RunOptions,
    on_event: EventListener | None,
) -> Driven:
    """Start a fresh run of ``workflow`` on the message ``value``.

    Raises:
        UnencodableValueError: the message cannot be stored.
        InvalidIdError: ``run_id`` is malformed.
        RunStateError: a run ``run_id`` exists already.
    """
    encoded = _encoded_input(value)
    new = await lease_new_run(workflow.storage, run_id)
    async with admitting(workflow.storage, new.run_id, new) as lease:
        chain = await _commit_root(workflow, lease, encoded, submitted=False)
    return await drive(workflow, chain, lease, value, History(), {}, options, on_event)


async def submit_run(workflow: DefinedWorkflow, value: Any, run_id: str | None) -> Checkpoint:
    """Admit a fresh run of ``workflow`` on ``value`` without driving it; return its root.

    The root (input, target, signature, marked ``submitted``) is committed under the run's
    lease, which is then released: the run is ``queued`` until a worker claims it
    (:meth:`~wfctl.storage.RunStore.claim_run`) or ``wfctl resume`` starts it.

    Raises:
        UnencodableValueError: the message cannot be stored.
        InvalidIdError: ``run_id`` is malformed.
        RunStateError: a run ``run_id`` exists already.
    """
    encoded = _encoded_input(value)
    new = await lease_new_run(workflow.storage, run_id)
    async with admitting(workflow.storage, new.run_id, new) as lease:
        chain = await _commit_root(workflow, lease, encoded, submitted=True)
    await lease.release()
    assert chain.head is not None  # committed just above
    return chain.head


async def restore_run(
    workflow: DefinedWorkflow,
    checkpoint_id: str,
    responses: dict[str, Any],
    run_id: str | None,
    options: RunOptions,
    on_event: EventListener | None,
    new_run: bool,
) -> Driven:
    """Continue the run whose head ``checkpoint_id`` is, else restore it into a new run.

    The run is read as a replay reads it (:func:`~._restore.load_source`): folded as it is
    read, its outline kept and what the restore may serve packed, never the chain whole.
    """
    chain, target, _, known = await load_source(workflow.storage, checkpoint_id)
    root = chain[0]
    if target is chain[-1] and target.kind != Kind.COMPLETED and not new_run:
        if run_id is not None and run_id != root.run_id:
            raise RunArgumentError(
                f"{checkpoint_id} is the head of run {root.run_id!r}, which continues in "
                f"place, so run_id={run_id!r} cannot apply; pass new_run=True to restore "
                "it into a new run with that id"
            )
        return await continue_run(
            workflow, root.run_id, checkpoint_id, responses, options, on_event
        )
    if target.kind == Kind.PAUSE and not new_run:
        # Its answers were given already (maybe a moment ago, by another process): taking
        # this for a restore would quietly run the rest again in a new run.
        raise RunStateError(
            root.run_id,
            f"{checkpoint_id} was answered already (the run is at {chain[-1].checkpoint_id}); "
            "to branch from it anyway, pass new_run=True",
        )
    return await restore_new_run(
        workflow, checkpoint_id, chain, target, known, responses, run_id, options, on_event
    )


async def restore_new_run(
    workflow: DefinedWorkflow,
    checkpoint_id: str,
    chain: list[Checkpoint],
    target: Checkpoint,
    history: History | None,
    responses: dict[str, Any],
    run_id: str | None,
    options: RunOptions,
    on_event: EventListener | None,
) -> Driven:
    """Restore ``checkpoint_id`` into a new run whose root names it as its origin.

    The new run writes in the format version of the run it restores from: the calls it
    matches against that run's records, and ``replay``'s diff pairs its records with them, by
    digests of one hash.

    Args:
        chain, target: the chain of the run holding ``checkpoint_id``, and that checkpoint
            (as :func:`~wfctl._engine._restore.load_target` returns them), or its outline
            (as :func:`~wfctl._engine._restore.load_source` returns it, with ``history``).
        history: what ``chain`` up to ``target`` recorded, origins first, when the caller has
            read it already; else it is read here (from a whole chain).
        run_id: the new run's id (None: a fresh one).

    Raises:
        RunStateError: a run ``run_id`` exists already.
    """
    storage = workflow.storage
    root = chain[0]
    check_code(workflow, chain, place_in(chain, target), options)
    message = decode(RootPayload.of(root).input, where=f"{root.checkpoint_id} input")
    if target.kind == Kind.COMPLETED:
        options = dataclasses.replace(options, complete_history=True)
    if history is None:
        history = await collect_history(storage, chain, target.seq)
    history.forget_attempts()  # a run of its own: its calls get their full retries
    responses = drop_resent_answers(root.run_id, chain, target, responses, history.responses)
    check_answers(root.run_id, chain, target, responses, require=False)
    responses = convert_answers(chain, target, responses)
    new = await lease_new_run(storage, run_id)
    origin = target.checkpoint_id  # the id of the checkpoint read, as its run writes it
    async with admitting(storage, new.run_id, new) as lease:
        run_chain = CheckpointChain(
            storage,
            lease.run_id,
            workflow.name,
            origin=(root.run_id, origin),
            version=root.version,
        )
        await run_chain.commit(
            root_payload(workflow, RootPayload.of(root).input, restored_from=origin)
        )
        if responses:
            await run_chain.commit(encode_answers(responses, "answer"))
    return await drive(workflow, run_chain, lease, message, history, responses, options, on_event)


#: Why a run goes on without answers, by the kind of its head: a pause, a failure, or (any
#: other kind: the process died in the run) ``recover``.
_RESUME_REASONS: dict[Kind, str] = {Kind.PAUSE: "continue", Kind.FAILED: "retry"}


async def continue_run(
    workflow: DefinedWorkflow,
    run_id: str,
    expected_head: str | None,
    responses: dict[str, Any],
    options: RunOptions,
    on_event: EventListener | None,
    held: RunLease | None = None,
    loaded: tuple[list[Checkpoint], History] | None = None,
) -> Driven:
    """Continue a run's own chain from its head, reading the head under the run's lock.

    A submitted run that has not started yet (its head is its root) starts, with no record
    before its first step. ``held`` is the run's lease when the caller holds it already (a
    worker that claimed the run); else it is taken here. ``loaded`` is what
    :func:`~._restore.load_folded` returned for the run under that held lease (a worker
    reads it to find the run's code); else it is read here.
    """
    storage = workflow.storage
    async with admitting(storage, run_id, held) as lease:
        # Folded as it is read: only the chain's run-level checkpoints and its head stay.
        chain, history = loaded if loaded is not None else await load_folded(storage, run_id)
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
        refuse_cancelled(run_id, target, f"restore {target.previous_checkpoint_id}")
        recorded = check_code(workflow, chain, target.seq, options)
        message = decode(RootPayload.of(root).input, where=f"{root.checkpoint_id} input")
        responses = drop_resent_answers(run_id, chain, target, responses, history.responses)
        check_answers(run_id, chain, target, responses, require=target.kind == Kind.PAUSE)
        responses = convert_answers(chain, target, responses)
        run_chain = continuing_chain(storage, chain, workflow.name)
        # Its next steps may refer to the results read before it, as to those it writes: the
        # writer holds them from now on (at most HELD_MAX of them), the history no more.
        run_chain.hold_read(history.held)
        history.held = []
        reason = "answer" if responses else _RESUME_REASONS.get(target.kind, "recover")
        if target.kind == Kind.FAILED:
            history.forget_attempts()  # its user resumes a failed run: every call tries afresh
        changed = workflow.signature if recorded != workflow.signature else None
        starting = target is root and RootPayload.of(root).submitted and changed is None
        if not starting:  # a queued run starts from its root: nothing to record before it
            await run_chain.commit(encode_answers(responses, reason, signature=changed))
        await clear_pause(storage, run_id)
    return await drive(workflow, run_chain, lease, message, history, responses, options, on_event)
