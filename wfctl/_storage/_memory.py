"""The in-memory storage: the file storage's semantics without files, for tests and scratch.

Checkpoints are stored as a JSON round trip of what was saved, so data that would not survive
the file storage does not survive here either, and later mutation of the caller's objects cannot
rewrite history. Locks are in-process holds; pause requests are a set.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Hashable
from typing import ClassVar

from wfctl._errors import RunLockedError, RunNotFoundError
from wfctl._records._checkpoint import Checkpoint, split_checkpoint_id, validate_run_id
from wfctl._records._payloads import CancelRequest

from ._base import RunStoreBase, check_append
from ._lock import HeldLease, LocalRunLock
from ._protocol import RunJournal

__all__ = ["InMemoryCheckpointStorage"]


class InMemoryCheckpointStorage(RunStoreBase):
    """Checkpoints in a dict of run id -> chain; nothing survives the process."""

    #: Its ``save`` never waits (no await suspends it): the engine may run a sequential
    #: step's commit in the caller instead of a task (``wfctl._engine._chain``).
    _SAVES_WITHOUT_WAITING: ClassVar[bool] = True

    def __init__(self) -> None:
        self._runs: dict[str, list[Checkpoint]] = {}
        self._locks: set[Hashable] = set()
        self._pauses: set[str] = set()
        self._cancels: dict[str, CancelRequest] = {}
        self._mutex = threading.Lock()

    def __repr__(self) -> str:
        return f"InMemoryCheckpointStorage(runs={len(self._runs)})"

    async def save(self, checkpoint: Checkpoint) -> None:
        """Append ``checkpoint`` to its run's chain.

        Raises:
            InvalidIdError: the run id is malformed.
            CheckpointCorruptError: it does not extend the run's head by exactly one link.
            TypeError, ValueError: its data is not plain JSON.
        """
        run_id = validate_run_id(checkpoint.run_id)
        where = f"memory:{run_id}"
        with self._mutex:
            chain = self._runs.get(run_id)
            head = chain[-1] if chain else None
            check_append(
                checkpoint,
                -1 if head is None else head.seq,
                None if head is None else head.checkpoint_id,
                where,
            )
            stored = Checkpoint.from_dict(json.loads(json.dumps(checkpoint.to_dict())), where)
            self._runs.setdefault(run_id, []).append(stored)

    async def read_run(self, run_id: str) -> RunJournal:
        """Return a run's checkpoints as saved (a memory storage has no problems or torn tails;
        the strict reads resolve the references in their step arguments, see ``strict_chain``).

        Raises:
            RunNotFoundError: no such run.
        """
        return RunJournal(run_id, tuple(self._get(run_id)), source=f"memory:{run_id}")

    def _get(self, run_id: str) -> list[Checkpoint]:
        chain = self._runs.get(validate_run_id(run_id))
        if not chain:
            raise RunNotFoundError(run_id)
        return chain

    async def load_head(self, run_id: str) -> Checkpoint | None:
        """Return the run's last checkpoint (None if it has none)."""
        chain = self._runs.get(run_id)
        return chain[-1] if chain else None

    async def load_root(self, run_id: str) -> Checkpoint | None:
        """Return the run's first checkpoint (None if it has none)."""
        chain = self._runs.get(run_id)
        return chain[0] if chain else None

    async def run_ids(self) -> list[str]:
        """Return the ids of the runs held."""
        return list(self._runs)

    async def is_leased(self, run_id: str) -> bool:
        """Return whether the run is held in this process (the only one that sees it)."""
        return run_id in self._locks

    @property
    def location(self) -> str:
        """``memory:`` (what messages name)."""
        return "memory:"

    def lock_run(self, run_id: str) -> LocalRunLock:
        """Take an in-process exclusive hold on the run.

        Raises:
            RunLockedError: it is already held (by "this process").
        """
        return LocalRunLock(self._locks, validate_run_id(run_id), run_id, None)

    async def lease_run(self, run_id: str) -> HeldLease:
        """Take the run's lease: an in-process hold, and its pause request's probe.

        Raises:
            RunLockedError: it is already held (by "this process").
        """
        pauses = self._pauses
        return HeldLease(self.lock_run(run_id), lambda: run_id in pauses)

    async def request_pause(self, run_id: str) -> None:
        """Ask the run to pause at its next step boundary.

        Raises:
            RunNotFoundError: no such run.
        """
        self._get(run_id)
        self._pauses.add(run_id)

    def pause_requested(self, run_id: str) -> bool:
        """Return whether a pause was requested for ``run_id``."""
        return run_id in self._pauses

    async def clear_pause(self, run_id: str) -> None:
        """Withdraw a pause request, and a cancel request with it (no-op if there is none)."""
        self._pauses.discard(run_id)
        self._cancels.pop(run_id, None)

    async def request_cancel(self, run_id: str, request: CancelRequest) -> None:
        """Ask the run to end cancelled at its next step boundary (a pause request naming who
        asked).

        Raises:
            RunNotFoundError: no such run.
        """
        self._get(run_id)
        self._cancels[run_id] = request
        self._pauses.add(run_id)

    async def cancel_request(self, run_id: str) -> CancelRequest | None:
        """Return the run's cancel request, if there is one."""
        return self._cancels.get(run_id)

    async def aclose(self) -> None:
        """Nothing to let go of: the runs stay (they live as long as this object)."""

    async def delete(self, checkpoint_id: str) -> bool:
        """Cut a run's chain at ``checkpoint_id`` (seq 0 removes the run); False if absent.

        Raises:
            RunLockedError: the run is held.
        """
        run_id, seq = split_checkpoint_id(checkpoint_id)
        with self._mutex:
            chain = self._runs.get(run_id)
            if not chain or seq >= len(chain):
                return False
            if run_id in self._locks:
                raise RunLockedError(run_id, "this process")
            if seq == 0:
                del self._runs[run_id]
                self._pauses.discard(run_id)
                self._cancels.pop(run_id, None)
            else:
                del chain[seq:]
            return True
