"""The storage protocol the engine commits through, and the read models storages return.

The engine commits every checkpoint by awaiting ``storage.save(checkpoint)`` from inside its one
serialized commit section, having chosen ``seq`` and the parent itself, so a storage that
follows this protocol (or wraps another one to observe, delay or replicate saves) cannot fork a
chain. The optional capabilities (``read_run``, ``lock_run``, pause requests) are used when a
storage has them; :mod:`wfctl._storage._capabilities` supplies fallbacks for the rest.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Protocol, runtime_checkable

from wfctl._checkpoint import Checkpoint, RunStatus
from wfctl._errors import CheckpointCorruptError

__all__ = [
    "CheckpointStorage",
    "JournalProblem",
    "RunJournal",
    "RunLock",
    "RunStatus",
    "RunSummary",
]


@runtime_checkable
class CheckpointStorage(Protocol):
    """What a checkpoint storage must do. All methods are coroutines."""

    async def save(self, checkpoint: Checkpoint) -> None:
        """Commit ``checkpoint`` durably (or as the storage's mode promises) before returning."""
        ...

    async def load(self, checkpoint_id: str) -> Checkpoint:
        """Return the checkpoint, or raise ``CheckpointNotFoundError``."""
        ...

    async def delete(self, checkpoint_id: str) -> bool:
        """Cut the run's chain at this checkpoint (it and every later one); True if found."""
        ...

    async def list_checkpoints(
        self, *, workflow_name: str | None = None, run_id: str | None = None
    ) -> list[Checkpoint]:
        """Return matching checkpoints, each run's in chain order."""
        ...

    async def list_checkpoint_ids(
        self, *, workflow_name: str | None = None, run_id: str | None = None
    ) -> list[str]:
        """Return the ids of :meth:`list_checkpoints`."""
        ...

    async def get_latest(
        self, *, workflow_name: str | None = None, run_id: str | None = None
    ) -> Checkpoint | None:
        """Return the newest head among matching runs (None if there is none)."""
        ...

    async def list_runs(self, *, workflow_name: str | None = None) -> list[RunSummary]:
        """Return one summary per run, oldest first."""
        ...


@dataclass(frozen=True, slots=True)
class JournalProblem:
    """Something stored for a run that cannot be trusted: where it is, and why.

    ``where`` names the file or record (``<journal>:<line>`` for a rejected record of the file
    storage; empty when nothing more precise than the run is known). ``line`` is that record's
    journal line (1-based), set only for a record the read rejected, so lineage verification
    can number the records it kept without reading the text back. ``str()`` is the
    ``<where>: <reason>`` line that verdicts, summaries and messages show.
    """

    where: str
    reason: str
    line: int | None = None

    def __str__(self) -> str:
        return f"{self.where}: {self.reason}" if self.where else self.reason

    @classmethod
    def from_error(cls, error: CheckpointCorruptError) -> JournalProblem:
        """Return the problem ``error`` reports (where it is and why)."""
        return cls(error.where, error.reason)


@dataclass(frozen=True, slots=True)
class RunJournal:
    """Everything stored for one run, as read, with what could not be trusted.

    ``checkpoints`` are the records that parsed and passed their checksum, in storage order
    (duplicates and gaps included: lineage verification judges them). ``problems`` names each
    record that did not, and anything else that fails (an end marker that contradicts the
    journal, a journal that cannot be opened). ``torn_tail`` is the byte count of an uncommitted
    partial record left at the end by a crash (not a problem: it was never acknowledged).
    """

    run_id: str
    checkpoints: Sequence[Checkpoint]
    problems: Sequence[JournalProblem] = ()
    torn_tail: int = 0
    source: str = ""


@dataclass(frozen=True, slots=True)
class RunSummary:
    """One run as ``wfctl runs`` lists it.

    ``status`` is ``completed``, ``failed``, ``paused``, ``running`` (its lock is held) or
    ``interrupted`` (its head is a root/step/resume record and nobody holds its lock: it
    crashed or was killed and can be resumed); ``corrupt`` when one of its records cannot be
    trusted (a checksum or a chain link fails), or ``unreadable`` when its journal cannot be
    read at all (permissions, an I/O error). ``problem`` then says where and why (``head_seq``
    is -1 and the timestamps are empty). ``waiting`` says what a running run whose newest
    record is a durable sleep or a failed attempt waits for (``sleeping until <time>``,
    ``backing off <key>: attempt <n> at <time>``) while that time is still ahead.
    """

    run_id: str
    workflow_name: str
    status: RunStatus
    head_checkpoint_id: str
    head_seq: int
    created: str
    updated: str
    origin_run_id: str | None = None
    origin_checkpoint_id: str | None = None
    pending: tuple[str, ...] = field(default_factory=tuple)
    problem: str | None = None
    waiting: str | None = None


class RunLock(Protocol):
    """An exclusive hold on one run, taken for as long as the run executes."""

    def release(self) -> None:
        """Give the run back."""
        ...
