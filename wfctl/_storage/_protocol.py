"""The storage contract the engine and the commands use, and the read models storages return.

Two protocols. :class:`CheckpointStorage` is the seven methods a checkpoint storage of
agent-framework's functional API has; any object with them can hold a run, driven by one
process (wfctl then excludes a second driver inside that process only). :class:`RunStore` is
every duty of a storage that can be shared between processes and machines: wfctl's own
storages (file, memory, PostgreSQL) are run stores, every command opens one, and the
conformance suite (:mod:`wfctl.storage.testing`) checks each duty.

The engine commits every checkpoint by awaiting ``storage.save(checkpoint)`` from inside its one
serialized commit section, having chosen ``seq`` and the parent itself, so a storage that
follows this protocol (or wraps another one to observe, delay or replicate saves) cannot fork a
chain; a run store also refuses any save that does not extend the run's head by one link.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass, field
from typing import Protocol, runtime_checkable

from wfctl._errors import CheckpointCorruptError, RunLockedError
from wfctl._records._checkpoint import Checkpoint, RunStatus

__all__ = [
    "CheckpointStorage",
    "JournalProblem",
    "RunJournal",
    "RunLease",
    "RunLock",
    "RunStatus",
    "RunStore",
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
    ``head_seq`` is the seq the storage names as the run's head, if it was read with the records
    in one snapshot (a database's head pointer, read in the same statement); None otherwise,
    and ``verify-lineage`` then asks ``get_latest`` for the head.
    """

    run_id: str
    checkpoints: Sequence[Checkpoint]
    problems: Sequence[JournalProblem] = ()
    torn_tail: int = 0
    source: str = ""
    head_seq: int | None = None


@dataclass(frozen=True, slots=True)
class RunSummary:
    """One run as ``wfctl runs`` lists it.

    ``status`` is ``completed``, ``failed``, ``paused`` (its head is a pause that waits for
    answers), ``running`` (its lock is held) or ``interrupted``: its head is a pause with
    nothing to answer (Ctrl-C, a signal, ``wfctl pause``: it stays until resumed), or a pause a
    stopping worker wrote to hand the run over, or a root/step/resume record nobody holds the
    lock of (it crashed or was killed): a worker takes the last two; ``corrupt`` when one of its records cannot be
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


@runtime_checkable
class RunLease(Protocol):
    """The exclusive right to drive (and so append to) one run, held until released.

    A storage grants at most one lease per run at a time, across every process (and machine)
    that shares it, and takes it back when its holder dies: a file storage's is an OS lock on
    the run's journal, a PostgreSQL storage's an advisory lock on a connection of its own.
    """

    @property
    def run_id(self) -> str:
        """The run held."""
        ...

    def pause_requested(self) -> bool:
        """Return whether someone asked the run to pause (asked at every step, so cheap).

        No round trip to a server: a storage learns of requests as they come (a notification)
        or from a local look (one ``lstat``).
        """
        ...

    async def release(self) -> None:
        """Give the run back (idempotent)."""
        ...


@runtime_checkable
class RunStore(CheckpointStorage, Protocol):
    """Every duty of a storage that wfctl's engine and commands use, shared or not.

    Beyond :class:`CheckpointStorage`: reading a run whole with what cannot be trusted, one
    run's summary, leases, pause requests, deletion and closing. ``save`` must refuse (with
    ``CheckpointCorruptError``) a checkpoint that does not extend its run's head by exactly one
    link, whatever the caller believes the head to be. A writer saves while it holds the run's
    lease; a store may refuse a save without one (the PostgreSQL store does: that is how a
    process that lost its lease is kept from appending), so every writer takes it first.
    """

    @property
    def location(self) -> str:
        """Where the store is, as people name it (a path, or a URL without its password)."""
        ...

    async def read_run(self, run_id: str) -> RunJournal:
        """Return everything stored for the run, with what cannot be trusted.

        Raises:
            InvalidIdError: ``run_id`` is malformed.
            RunNotFoundError: the run does not exist.
        """
        ...

    async def run_summary(self, run_id: str) -> RunSummary:
        """Return one run's summary, verified whole, reading only that run.

        Raises:
            InvalidIdError: ``run_id`` is malformed.
            RunNotFoundError: the run has no committed checkpoint.
        """
        ...

    async def lease_run(self, run_id: str) -> RunLease:
        """Take the run's lease now (a run with no records yet can be leased, to start it).

        Raises:
            InvalidIdError: ``run_id`` is malformed.
            RunLockedError: someone holds it; the message names them where the store knows.
        """
        ...

    async def claim_run(self, exclude: Collection[str] = ()) -> RunLease | None:
        """Lease one run a worker may drive, oldest first; None if there is none.

        A run may be driven when its head is a root, step, resume or answer record, or a
        pause a stopping worker wrote to hand it over (``reason: "handoff"``; not completed,
        failed, cancelled or paused otherwise), nobody holds its lease, and its id is not in
        ``exclude``. A run whose records cannot be trusted is never returned. Workers on
        several processes and machines may claim at once: each run goes to one of them.
        """
        ...

    async def request_pause(self, run_id: str) -> None:
        """Ask whoever drives the run to pause at its next step boundary.

        Raises:
            RunNotFoundError: no such run.
        """
        ...

    async def clear_pause(self, run_id: str) -> None:
        """Withdraw a pause request (no-op if there is none)."""
        ...

    async def delete_run(self, run_id: str) -> bool:
        """Remove a run whole; False if it did not exist.

        Raises:
            RunLockedError: the run is being driven.
        """
        ...

    async def delete_runs(self, run_ids: Sequence[str]) -> tuple[list[str], list[RunLockedError]]:
        """Remove several runs: the ids removed, and the error of each run being driven (kept).

        Raises:
            InvalidIdError: a run id is malformed (nothing is removed).
        """
        ...

    async def aclose(self) -> None:
        """Let go of what the store holds open (connections, files); leases stay valid."""
        ...
