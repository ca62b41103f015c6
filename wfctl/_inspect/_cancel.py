"""``wfctl cancel``: end a run for good with a ``cancelled`` record.

The record is committed like any other, under the run's lock, as the next link of its chain, so
the chain stays one verifiable lineage; it is an ending record (the storage writes the end
marker after it), nothing may follow it, ``resume`` refuses the run and ``gc`` may collect it.
A completed run has nothing left to cancel.

A paused, failed, interrupted or queued run is cancelled here, under its lease (one whose lease
someone holds all the same, a resume starting or a session that is not wfctl's, is refused with
``RunLockedError``: no driver would honour a request). A running run (its driver holds its
lease, on this machine or another) is never taken from its driver: a cancel
request (:class:`~wfctl._records._payloads.CancelRequest`, naming who asked) is left in the
store beside its pause request, and the driver stops at its next step boundary, as for ``wfctl
pause``, and commits the ``cancelled`` record itself, under its own lease (see
:func:`wfctl._engine._ending.commit_ending`). The caller then waits (a bounded poll, backing off
as ``log --follow`` does) until the run is cancelled; a run that let go of its lease without
honouring the request (it failed or paused first) is cancelled here, and one that completed
first is a :class:`RunStateError`.
"""

from __future__ import annotations

import asyncio
import contextlib
import getpass
import os
import socket
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Final

from wfctl._config import StoreRef
from wfctl._engine._admission import continuing_chain
from wfctl._engine._restore import load_outline
from wfctl._errors import RunLockedError, RunNotFoundError, RunStateError
from wfctl._records._checkpoint import Checkpoint, Kind, RunStatus, validate_run_id
from wfctl._records._payloads import CancelledPayload, CancelRequest, RootPayload, ended_as
from wfctl._storage import FileCheckpointStorage
from wfctl._storage._capabilities import clear_pause, lease_run, request_cancel
from wfctl._storage._layout import TEMPLATE_NAME
from wfctl._storage._open import on_store
from wfctl._storage._protocol import RunStore

from ._documents import document, utc_time
from ._follow import FIRST_INTERVAL, LONGEST_INTERVAL

__all__ = ["CancelReport", "cancel_run", "requester"]

#: The status a run is reported in when its cancel was asked for and not waited for.
_ASKED: Final = RunStatus.RUNNING.value


@dataclass(frozen=True, slots=True)
class CancelReport:
    """A run that was cancelled (the record that ended it, and what it was before), or a
    running run asked to be (``--no-wait``: ``checkpoint_id`` and ``cancelled_at`` are None)."""

    run_id: str
    workflow_name: str
    #: The run's status before: ``paused``, ``failed``, ``interrupted``, ``queued`` or
    #: ``running`` (its driver ended it).
    previous_status: str
    #: The ``cancelled`` record, now the run's head (None: asked, not waited for).
    checkpoint_id: str | None
    cancelled_at: str | None
    reason: str | None
    #: Who asked the run's driver (a running run), else None.
    requested_by: str | None = None

    @property
    def status(self) -> str:
        """``cancelled``, or ``running`` for a run asked and not waited for."""
        return RunStatus.CANCELLED.value if self.checkpoint_id is not None else _ASKED

    def to_json(self) -> dict[str, Any]:
        """Return the ``wfctl/cancel@1`` document (see docs/json.md)."""
        return document(
            "cancel",
            {
                "run_id": self.run_id,
                "workflow": self.workflow_name,
                "status": self.status,
                "previous_status": self.previous_status,
                "head_checkpoint_id": self.checkpoint_id,
                "cancelled_at": utc_time(self.cancelled_at) if self.cancelled_at else None,
                "reason": self.reason,
                "requested_by": self.requested_by,
            },
        )


def cancel_run(
    store: StoreRef,
    run_id: str,
    *,
    reason: str | None = None,
    wait: bool = True,
    must_exist: bool = True,
    sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
) -> CancelReport:
    """End ``run_id`` for good: a ``cancelled`` record as the head of its chain.

    A running run is asked to end at its next step boundary (its driver records it); with
    ``wait`` this returns once it has.

    Args:
        reason: stored in the record (``--reason``).
        wait: for a running run, wait until it is cancelled (False: return once asked).
        sleep: how to wait between looks at a running run (tests pass a recorder).

    Raises:
        StoreLocationError: the store is missing (with ``must_exist``) or is not one.
        InvalidIdError, RunNotFoundError: no such run.
        RunStateError: the run completed (before its driver reached a step boundary, too),
            or was cancelled already.
        RunLockedError: someone holds the lease of a run that is not running (its head ends
            it): a resume starting, or a session that is not wfctl's.
        CheckpointCorruptError: a record fails verification or the chain is broken.
        WfctlError: the run is running and its store cannot ask its driver.
        KeyboardInterrupt: while waiting (the request stays: the run still ends cancelled).
    """
    validate_run_id(run_id)

    async def cancel(storage: RunStore) -> CancelReport:
        return await _cancel(storage, run_id, reason, wait, sleep)

    return on_store(store, cancel, must_exist=must_exist)


def requester() -> str:
    """Name who asks, as a cancelled record and the driver's last line say it."""
    try:
        user = getpass.getuser()
    except (OSError, KeyError):  # no name for this uid (a container's)
        user = f"uid {os.getuid()}"
    return f"{user}@{socket.gethostname()} (pid {os.getpid()})"


async def _cancel(
    storage: RunStore,
    run_id: str,
    reason: str | None,
    wait: bool,
    sleep: Callable[[float], Awaitable[None]],
) -> CancelReport:
    # Taking the lease of a run that does not exist would create its journal: look first.
    if await storage.get_latest(run_id=run_id) is None:
        raise RunNotFoundError(run_id)
    try:
        return await _cancel_held(storage, run_id, reason)
    except RunLockedError:
        summary = await storage.run_summary(run_id)
        if summary.status != RunStatus.RUNNING:
            # Held, but not driven (its head ends it): a resume taking it, or a session that
            # is not wfctl's. No driver would honour a request.
            raise
    request = CancelRequest(requester(), datetime.now(UTC).isoformat(timespec="seconds"), reason)
    await request_cancel(storage, run_id, request)
    if not wait:
        name = summary.workflow_name
        return CancelReport(run_id, name, _ASKED, None, None, reason, request.by)
    return await _until_cancelled(storage, run_id, reason, sleep)


async def _cancel_held(
    storage: RunStore, run_id: str, reason: str | None, *, asked: bool = False
) -> CancelReport:
    """Cancel the run under its lease.

    ``asked``: its driver was asked to cancel it; a run it cancelled is reported, and one that
    completed first is refused saying so.

    Raises:
        RunLockedError: someone holds the lease.
    """
    lease = await lease_run(storage, run_id)
    try:
        return await _cancel_leased(storage, run_id, reason, asked)
    finally:
        await lease.release()


async def _until_cancelled(
    storage: RunStore, run_id: str, reason: str | None, sleep: Callable[[float], Awaitable[None]]
) -> CancelReport:
    """Wait until the run's driver lets go of it, looking less often as it runs on (a long
    step); then report the ``cancelled`` record it committed, or cancel the run here if it
    let go without honouring the request (it failed or paused first)."""
    interval = FIRST_INTERVAL
    while True:
        # Taking the lease of a run removed meanwhile would create its journal: look first.
        head = await storage.get_latest(run_id=run_id)
        if head is None:
            raise RunNotFoundError(run_id)
        if head.kind == Kind.CANCELLED:  # final: whoever holds the lease now cannot change it
            return _report_of(head)
        with contextlib.suppress(RunLockedError):  # still driven: look again
            return await _cancel_held(storage, run_id, reason, asked=True)
        await sleep(interval)
        interval = min(interval * 2, LONGEST_INTERVAL)


async def _cancel_leased(
    storage: RunStore, run_id: str, reason: str | None, asked: bool = False
) -> CancelReport:
    chain = await load_outline(storage, run_id)  # root and head: not the steps between
    root, head = chain[0], chain[-1]
    if asked and head.kind in (Kind.CANCELLED, Kind.COMPLETED):
        await clear_pause(storage, run_id)  # the request, if its driver left it
        if head.kind == Kind.CANCELLED:  # by its driver (or by another cancel meanwhile)
            return _report_of(head)
        raise RunStateError(
            run_id,
            f"completed ({head.checkpoint_id}) before it reached a step boundary; "
            "nothing was cancelled",
        )
    previous = _status_of(run_id, head)
    writer = continuing_chain(storage, chain, root.workflow_name)
    cancelled = await writer.commit(CancelledPayload(previous, reason))
    await clear_pause(storage, run_id)
    if isinstance(storage, FileCheckpointStorage):  # nothing to answer: drop the template
        (storage.root / "runs" / run_id / TEMPLATE_NAME).unlink(missing_ok=True)
    return CancelReport(
        run_id,
        root.workflow_name,
        previous,
        cancelled.checkpoint_id,
        cancelled.timestamp,
        reason,
    )


def _status_of(run_id: str, head: Checkpoint) -> str:
    """Return the status of a run whose head is ``head`` and whose lock this process holds."""
    if head.kind == Kind.COMPLETED:
        raise RunStateError(run_id, f"has completed ({head.checkpoint_id}); nothing to cancel")
    if head.kind == Kind.CANCELLED:
        raise RunStateError(run_id, f"was cancelled already ({head.checkpoint_id})")
    if head.kind == Kind.ROOT and RootPayload.of(head).submitted:
        return RunStatus.QUEUED.value
    status = ended_as(head) or RunStatus.INTERRUPTED
    return status.value


def _report_of(head: Checkpoint) -> CancelReport:
    """Report the ``cancelled`` record ``head`` (one a driver committed, or another cancel)."""
    payload = CancelledPayload.of(head)
    return CancelReport(
        head.run_id,
        head.workflow_name,
        payload.status,
        head.checkpoint_id,
        head.timestamp,
        payload.reason,
        payload.by,
    )
