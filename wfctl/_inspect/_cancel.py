"""``wfctl cancel``: end a paused, failed, interrupted or queued run for good with a ``cancelled`` record.

The record is committed like any other, under the run's lock, as the next link of its chain, so
the chain stays one verifiable lineage; it is an ending record (the storage writes the end
marker after it), nothing may follow it, ``resume`` refuses the run and ``gc`` may collect it.
A running run (its lock is held) cannot be cancelled: pause it first (``wfctl pause``). A
completed run has nothing left to cancel.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from wfctl._config import StoreRef
from wfctl._engine._admission import continuing_chain
from wfctl._engine._restore import load_outline
from wfctl._errors import RunNotFoundError, RunStateError
from wfctl._records._checkpoint import Checkpoint, Kind, RunStatus, validate_run_id
from wfctl._records._payloads import CancelledPayload, RootPayload, ended_as
from wfctl._storage import FileCheckpointStorage
from wfctl._storage._capabilities import clear_pause, lease_run
from wfctl._storage._layout import TEMPLATE_NAME
from wfctl._storage._open import on_store
from wfctl._storage._protocol import RunStore

from ._documents import document, utc_time

__all__ = ["CancelReport", "cancel_run"]


@dataclass(frozen=True, slots=True)
class CancelReport:
    """A run that was cancelled: the record that ended it, and what it was before."""

    run_id: str
    workflow_name: str
    #: The run's status before: ``paused``, ``failed``, ``interrupted`` or ``queued``.
    previous_status: str
    #: The ``cancelled`` record, now the run's head.
    checkpoint_id: str
    cancelled_at: str
    reason: str | None

    def to_json(self) -> dict[str, Any]:
        """Return the ``wfctl/cancel@1`` document (see docs/json.md)."""
        return document(
            "cancel",
            {
                "run_id": self.run_id,
                "workflow": self.workflow_name,
                "status": RunStatus.CANCELLED.value,
                "previous_status": self.previous_status,
                "head_checkpoint_id": self.checkpoint_id,
                "cancelled_at": utc_time(self.cancelled_at),
                "reason": self.reason,
            },
        )


def cancel_run(
    store: StoreRef, run_id: str, *, reason: str | None = None, must_exist: bool = True
) -> CancelReport:
    """End ``run_id`` for good: commit a ``cancelled`` record as the head of its chain.

    Args:
        reason: stored in the record (``--reason``).

    Raises:
        StoreLocationError: the store is missing (with ``must_exist``) or is not one.
        InvalidIdError, RunNotFoundError: no such run.
        RunLockedError: the run is running (another process holds its lock).
        RunStateError: the run completed, or was cancelled already.
        CheckpointCorruptError: a record fails verification or the chain is broken.
    """
    validate_run_id(run_id)
    return on_store(
        store, lambda storage: _commit_cancel(storage, run_id, reason), must_exist=must_exist
    )


async def _commit_cancel(storage: RunStore, run_id: str, reason: str | None) -> CancelReport:
    # Taking the lease of a run that does not exist would create its journal: look first.
    if await storage.get_latest(run_id=run_id) is None:
        raise RunNotFoundError(run_id)
    lease = await lease_run(storage, run_id)
    try:
        return await _cancel_leased(storage, run_id, reason)
    finally:
        await lease.release()


async def _cancel_leased(storage: RunStore, run_id: str, reason: str | None) -> CancelReport:
    chain = await load_outline(storage, run_id)  # root and head: not the steps between
    root, head = chain[0], chain[-1]
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
