"""Chain rules and queries shared by every wfctl storage, and the base class a storage subclasses.

:class:`RunStoreBase` (public as ``wfctl.storage.RunStoreBase``) builds the protocol's reads on a
few coroutines a storage implements (its run ids, a run's root, its head, its records, whether
it is leased) and documents the whole job of a storage author in its docstring; the file and
memory storages are subclasses. The rules it applies are pure functions over what was read
(:func:`summarize`, :func:`corrupt_summary`, :func:`is_listed`, ...), so the file storage's
synchronous listing (``wfctl runs`` loads no asyncio) and the PostgreSQL store's own reads
apply the same ones. The chain rules (:func:`check_append`, :func:`strict_chain`) are also used
by :mod:`._capabilities` for storages that are not ours.
"""

from __future__ import annotations

import abc
from collections.abc import Awaitable, Callable, Collection, Hashable, Sequence
from typing import Any, TypeGuard

from wfctl._errors import (
    CheckpointCorruptError,
    CheckpointNotFoundError,
    RunLockedError,
    RunNotFoundError,
)
from wfctl._records._checkpoint import (
    ENDING_STATUS,
    Checkpoint,
    Kind,
    RunStatus,
    checkpoint_id_for,
    split_checkpoint_id,
    validate_run_id,
)
from wfctl._records._payloads import (
    CancelRequest,
    RootPayload,
    ended_as,
    handed_over,
    recorded_requests,
    waiting_on,
)
from wfctl._records._refs import holds_refs, resolved

from ._protocol import JournalProblem, RunJournal, RunLease, RunSummary

__all__ = [
    "RunStoreBase",
    "broken_summary",
    "check_append",
    "corrupt_summary",
    "delete_each",
    "is_listed",
    "load_checkpoint",
    "oldest_first",
    "pending_requests",
    "read_problem",
    "status_needs_lease",
    "strict_chain",
    "summarize",
    "unreadable_summary",
]


def check_append(checkpoint: Checkpoint, head_seq: int, head_id: str | None, where: str) -> None:
    """Refuse ``checkpoint`` unless it extends the head ``head_seq``/``head_id`` by one link.

    ``head_seq`` is -1 for a run with no checkpoints. This is what makes two writers at the same
    position impossible: the second one's record names a parent that is no longer the head.

    Raises:
        CheckpointCorruptError: the seq is not ``head_seq + 1``, the parent is not the head, or
            the record is a root anywhere but at seq 0 (or seq 0 is not a root).
    """
    seq, parent = checkpoint.seq, checkpoint.previous_checkpoint_id
    if seq == head_seq + 1 and parent == head_id and (seq == 0) == (checkpoint.kind == Kind.ROOT):
        return
    run = checkpoint.run_id
    if seq == head_seq + 1 and parent == head_id:
        state = "seq 0 must be the run's only root record"
    elif head_seq < 0:
        state = "the run has no checkpoints yet (expected seq 0, the root)"
    elif seq == 0:
        state = f"the run already exists (its head is seq {head_seq})"
    else:
        state = f"its head is seq {head_seq} ({head_id}); expected seq {head_seq + 1}"
    raise CheckpointCorruptError(
        where,
        f"refusing checkpoint seq {seq} ({checkpoint.kind}, parent {parent!r}) of run {run!r}: "
        f"{state}; a second writer at the same position would fork the chain",
    )


def strict_chain(journal: RunJournal, *, resolved_as_read: bool = False) -> list[Checkpoint]:
    """Return a run's checkpoints if they form one unbroken chain ``0..n-1``, the references
    in their step arguments resolved where the read handed them back as saved (a store that
    keeps checkpoints). ``resolved_as_read``: the read resolved them already (the file and
    PostgreSQL stores resolve as they read), so they are not looked for again.

    Raises:
        CheckpointCorruptError: for the first problem the read reported, or the first seq that
            is out of place (gap, duplicate, fork) or names the wrong parent, or a reference
            that names no result before it.
        RunNotFoundError: the run holds no committed checkpoint.
    """
    source = journal.source or f"run {journal.run_id}"
    if journal.problems:
        first = journal.problems[0]
        raise CheckpointCorruptError(first.where or source, first.reason)
    chain = list(journal.checkpoints)
    if not chain:
        raise RunNotFoundError(journal.run_id)
    parent: str | None = None
    for index, checkpoint in enumerate(chain):
        if checkpoint.run_id != journal.run_id:
            raise CheckpointCorruptError(
                source, f"record {index + 1} belongs to run {checkpoint.run_id!r}"
            )
        if checkpoint.seq != index:
            raise CheckpointCorruptError(
                source,
                f"run {journal.run_id!r}: record {index + 1} is seq {checkpoint.seq}, expected "
                f"seq {index} (a gap, duplicate or fork in the chain)",
            )
        if checkpoint.previous_checkpoint_id != parent:
            raise CheckpointCorruptError(
                source,
                f"run {journal.run_id!r}: seq {index} names parent "
                f"{checkpoint.previous_checkpoint_id!r}, expected {parent!r}",
            )
        parent = checkpoint_id_for(journal.run_id, index)
    if not resolved_as_read and any(holds_refs(checkpoint) for checkpoint in chain):
        return list(resolved(chain, source))
    return chain


def pending_requests(head: Checkpoint) -> tuple[str, ...]:
    """Return the request ids a pause checkpoint is waiting for (empty for other kinds)."""
    return tuple(request.request_id for request in recorded_requests(head))


class RunStoreBase(abc.ABC):
    """A run store built on a few primitives: what a storage author subclasses.

    Subclass it, implement the duties below, and run :class:`~wfctl.storage.testing.
    StorageConformance` against it: the suite then checks every duty of
    :class:`~._protocol.RunStore`. The file and memory storages are subclasses. Every primitive
    is a coroutine (a store backed by a server awaits it). ``run_ids``, ``load_root``,
    ``load_head`` and ``is_leased`` are given valid run ids; the protocol's own methods
    (``read_run``, ``save``, ``delete``, ``lease_run``, ``request_pause``, ``clear_pause``) are
    called with what the caller passed, so they refuse a malformed id with ``InvalidIdError``
    (``validate_run_id`` and ``split_checkpoint_id``, exported by ``wfctl.storage``, do it).

    **Reading** (the base builds every read of the protocol on these five):

    - ``run_ids()``: the ids of every stored run, in any order (a run leased but never written
      may be among them).
    - ``load_root(run_id)``: the run's first record, None if it has none; raise
      ``CheckpointCorruptError`` if that record cannot be trusted.
    - ``load_head(run_id)``: the run's last committed record, None if it has none; raise
      ``CheckpointCorruptError`` if that record cannot be trusted.
    - ``read_run(run_id)``: everything stored for the run, with what cannot be trusted (a
      :class:`~._protocol.RunJournal`); validates ``run_id`` (``InvalidIdError``) and raises
      ``RunNotFoundError`` for a run with no records. The strict chain is read from it.
    - ``is_leased(run_id)``: whether someone (any process, any machine) holds the run's lease.

    Two more a store may override to read less: ``verified_ends(run_id)`` (the root and head
    once every record verifies; by default the strict chain's ends) and ``run_version(run_id)``
    (a token that changes with the run's records, so that :meth:`claim_run` skips an ended run
    in one look; by default None: no token).

    **Writing**: ``save(checkpoint)``, refusing with ``CheckpointCorruptError`` a checkpoint
    that does not extend the run's head by one link (:func:`check_append` says so, given the
    head), atomically with respect to every other writer of the store; ``delete(checkpoint_id)``
    cuts a run's chain (seq 0: the whole run), refusing with ``RunLockedError`` while it is
    leased.

    **Leases and pause requests**: ``lease_run(run_id)`` returns a :class:`~._protocol.RunLease`
    (exclusive across every process that shares the store, ``RunLockedError`` while another
    holds it; a run with no records yet can be leased, to start it; its ``pause_requested()``
    is asked at every step, so it must be cheap); ``request_pause(run_id)``
    (``RunNotFoundError`` for a run with no records) and ``clear_pause(run_id)`` reach it;
    ``request_cancel(run_id, request)`` is a pause request that keeps who asked, which the
    driver reads with ``cancel_request(run_id)`` and ends the run ``cancelled``.

    **Naming**: the ``location`` property (a path, or a URL without its password).

    The base provides the rest: ``load_chain``, ``load``, ``list_checkpoints``,
    ``list_checkpoint_ids``, ``get_latest``, ``list_runs``, ``run_summary``, ``claim_run``,
    ``delete_run`` and ``delete_runs`` (through ``delete``), and an ``aclose`` that closes
    nothing. The summarising and filtering rules are the module's pure functions
    (:func:`summarize`, :func:`corrupt_summary`, ...), which a store with a faster path of its
    own (the file store lists runs without an event loop) applies to what it read.
    """

    # -- the primitives a storage implements --------------------------------------------------

    @abc.abstractmethod
    async def run_ids(self) -> list[str]:
        """Return the ids of every stored run, in any order."""

    @abc.abstractmethod
    async def load_root(self, run_id: str) -> Checkpoint | None:
        """Return the run's first record (None if it has none); raise if it is corrupt."""

    @abc.abstractmethod
    async def load_head(self, run_id: str) -> Checkpoint | None:
        """Return the run's last committed record (None if none); raise if it is corrupt."""

    @abc.abstractmethod
    async def read_run(self, run_id: str) -> RunJournal:
        """Return everything stored for the run (see :meth:`~._protocol.RunStore.read_run`)."""

    @abc.abstractmethod
    async def is_leased(self, run_id: str) -> bool:
        """Return whether some process (or task) holds the run's lease right now."""

    @property
    @abc.abstractmethod
    def location(self) -> str:
        """Where the store is, as people name it (a path, or a URL without its password)."""

    @abc.abstractmethod
    async def save(self, checkpoint: Checkpoint) -> None:
        """Append ``checkpoint`` to its run (see :meth:`~._protocol.RunStore.save`)."""

    @abc.abstractmethod
    async def delete(self, checkpoint_id: str) -> bool:
        """Cut a run's chain at ``checkpoint_id`` (seq 0: the whole run); False if absent.

        Raises:
            InvalidIdError: the id is malformed.
            RunLockedError: the run is leased.
        """

    @abc.abstractmethod
    async def request_pause(self, run_id: str) -> None:
        """Ask the run's lease holder to pause (``RunNotFoundError``: the run has no records)."""

    @abc.abstractmethod
    async def clear_pause(self, run_id: str) -> None:
        """Withdraw a pause request, and a cancel request with it (no-op if there is none)."""

    async def request_cancel(self, run_id: str, request: CancelRequest) -> None:
        """Ask the run's lease holder to end it cancelled at its next step boundary.

        A pause request (the lease's ``pause_requested()`` turns true) that also keeps
        ``request``, for :meth:`cancel_request`; ``clear_pause`` withdraws both. A plain pause
        asked after it leaves it a cancel request. ``RunNotFoundError``: the run has no records.
        A store that does not override it cannot cancel a running run.
        """
        raise NotImplementedError(f"{type(self).__name__} does not support cancel requests")

    async def cancel_request(self, run_id: str) -> CancelRequest | None:
        """Return the cancel request standing for the run (None: none, or a plain pause)."""
        return None

    async def verified_ends(self, run_id: str) -> tuple[Checkpoint, Checkpoint] | None:
        """Return the run's root and head once the whole run verifies (None if it has none).

        What :meth:`list_runs` trusts a run by. This default reads the strict chain; a storage
        overrides it with something cheaper that still checks every record (the file storage
        verifies checksums and links without decoding the records' data).

        Raises:
            CheckpointCorruptError: a record fails verification or the chain is broken.
            OSError: the run cannot be read.
        """
        try:
            chain = await self.load_chain(run_id)
        except RunNotFoundError:
            return None
        return chain[0], chain[-1]

    # -- what the base builds on them ---------------------------------------------------------

    async def load_chain(self, run_id: str) -> list[Checkpoint]:
        """Return the run's checkpoints ``0..n-1``, verified as one chain (for restore), the
        references in their step arguments resolved (see :func:`strict_chain`).

        Raises:
            InvalidIdError: ``run_id`` is malformed.
            RunNotFoundError: the run does not exist or has no committed checkpoint.
            CheckpointCorruptError: a record fails verification, the chain is broken, or a
                reference names no result before it.
        """
        return strict_chain(await self.read_run(validate_run_id(run_id)))

    async def load(self, checkpoint_id: str) -> Checkpoint:
        """Return one checkpoint, read strictly with its whole run.

        Raises:
            InvalidIdError: the id is malformed.
            CheckpointNotFoundError: no such run or seq.
            CheckpointCorruptError: the run's journal does not verify.
        """
        return await load_checkpoint(self.load_chain, checkpoint_id)

    async def list_checkpoints(
        self, *, workflow_name: str | None = None, run_id: str | None = None
    ) -> list[Checkpoint]:
        """Return matching checkpoints, each run in chain order, runs oldest first (strict)."""
        return [cp for chain in await self._chains(workflow_name, run_id) for cp in chain]

    async def list_checkpoint_ids(
        self, *, workflow_name: str | None = None, run_id: str | None = None
    ) -> list[str]:
        """Return the ids of :meth:`list_checkpoints`."""
        chains = await self._chains(workflow_name, run_id)
        return [cp.checkpoint_id for chain in chains for cp in chain]

    async def get_latest(
        self, *, workflow_name: str | None = None, run_id: str | None = None
    ) -> Checkpoint | None:
        """Return the newest head among matching runs, or None.

        With ``run_id`` this is that run's head. Otherwise it is the head with the newest
        timestamp (ties broken by run id). A corrupt head is never skipped in favour of an
        older record: it raises, unless the run's root shows it belongs to another workflow.

        Raises:
            CheckpointCorruptError: a candidate head does not verify.
        """
        if run_id is not None:
            head = await self.load_head(validate_run_id(run_id))
            if head is None or (workflow_name is not None and head.workflow_name != workflow_name):
                return None
            return await self._resolved(head)
        best: Checkpoint | None = None
        for rid in await self.run_ids():
            try:
                head = await self.load_head(rid)
            except CheckpointCorruptError:
                if workflow_name is not None and await self._root_workflow(rid) not in (
                    None,
                    workflow_name,
                ):
                    continue
                raise
            if head is None or (workflow_name is not None and head.workflow_name != workflow_name):
                continue
            if best is None or (head.timestamp, head.run_id) > (best.timestamp, best.run_id):
                best = head
        return None if best is None else await self._resolved(best)

    async def _resolved(self, head: Checkpoint) -> Checkpoint:
        """``head``, read as its run's chain reads it when its step arguments hold references
        (which only the records before it resolve)."""
        return await self.load(head.checkpoint_id) if holds_refs(head) else head

    async def list_runs(self, *, workflow_name: str | None = None) -> list[RunSummary]:
        """Return one summary per run, oldest first, each run verified whole.

        A run whose records do not all verify is listed as ``corrupt``, and one that cannot be
        read (permissions, an I/O error) as ``unreadable``, with the problem; the other runs
        are listed as usual.

        Raises:
            StoreLocationError: the store itself cannot be read as a store.
        """
        summaries: list[RunSummary] = []
        for rid in await self.run_ids():
            summary = await self._summary_of(rid, workflow_name)
            if summary is not None:
                summaries.append(summary)
        return oldest_first(summaries)

    async def run_summary(self, run_id: str) -> RunSummary:
        """Return one run's summary, verified whole as :meth:`list_runs` does, reading only it.

        What single-run commands use: the cost does not depend on how many runs the store holds.

        Raises:
            InvalidIdError: ``run_id`` is malformed.
            RunNotFoundError: the run has no committed checkpoint.
        """
        summary = await self._summary_of(validate_run_id(run_id), None)
        if summary is None:
            raise RunNotFoundError(run_id)
        return summary

    async def summary_of_chain(self, chain: list[Checkpoint]) -> RunSummary:
        """Return the summary of a run whose strict chain (see :func:`strict_chain`) was read."""
        return await self._summarize(chain[0], chain[-1])

    async def _summary_of(self, run_id: str, workflow_name: str | None) -> RunSummary | None:
        """Summarise one run (None: not a run yet, or another workflow's); never raise for it.

        A run whose records do not all verify is ``corrupt``, one that cannot be read
        ``unreadable``, each with its problem.
        """
        try:
            ends = await self.verified_ends(run_id)
        except CheckpointCorruptError as exc:
            wf = await self._root_workflow(run_id)
            return corrupt_summary(run_id, workflow_name, wf, exc)
        except OSError as exc:  # listed under any workflow filter: its own is unknown
            return unreadable_summary(run_id, exc)
        if not is_listed(ends, workflow_name):
            return None
        return await self._summarize(*ends)

    async def _summarize(self, root: Checkpoint, head: Checkpoint) -> RunSummary:
        locked = status_needs_lease(head) and await self.is_leased(root.run_id)
        return summarize(root, head, lambda: locked)

    async def delete_run(self, run_id: str) -> bool:
        """Remove a run whole (:meth:`delete` of its seq 0); False if it did not exist.

        Raises:
            InvalidIdError: ``run_id`` is malformed.
            RunLockedError: the run is leased.
        """
        return await self.delete(checkpoint_id_for(validate_run_id(run_id), 0))

    async def delete_runs(self, run_ids: Sequence[str]) -> tuple[list[str], list[RunLockedError]]:
        """Remove several runs: the ids removed, and the error of each run that is leased.

        Raises:
            InvalidIdError: a run id is malformed (nothing is removed).
        """
        return await delete_each(self.delete_run, run_ids)

    async def aclose(self) -> None:
        """Let go of what the store holds open (this default holds nothing)."""
        return  # deliberately empty: a store with connections or files overrides it

    async def claim_run(self, exclude: Collection[str] = ()) -> RunLease | None:
        """Lease the oldest run a worker may drive, or return None if there is none.

        A run may be driven when its head is a root, step or resume record (queued, or
        interrupted: its driver died) or a pause a stopping worker wrote to hand it over
        (:func:`~wfctl._records._payloads.handed_over`), nobody holds its lease and it is not in ``exclude``.
        Each poll reads only each run's last record (and the root of the candidates, for their
        age); the run taken is then verified whole under its lease, and one that does not
        verify (or that ended meanwhile) is given back and skipped: a corrupt run is never
        driven, and ``wfctl runs`` names its problem.
        """
        # Runs found ended, by the version of their records then: one stat skips them next
        # time, until they change (a resume appends). Kept on the storage object (a worker's).
        ended: dict[str, Hashable] = self.__dict__.setdefault("_claim_ended", {})
        candidates: list[tuple[str, str]] = []
        for run_id in await self.run_ids():
            version = await self.run_version(run_id)
            if run_id in exclude or (version is not None and ended.get(run_id) == version):
                continue
            if await self.is_leased(run_id):
                continue
            try:
                head = await self.load_head(run_id)
                root = head if head is None or head.seq == 0 else await self.load_root(run_id)
            except (CheckpointCorruptError, OSError):
                continue
            if head is None or root is None:
                continue
            if head.kind in ENDING_STATUS and not handed_over(head):
                if version is not None:
                    ended[run_id] = version
                continue
            candidates.append((root.timestamp, run_id))
        for _, run_id in sorted(candidates):
            try:
                lease = await self.lease_run(run_id)
            except (RunLockedError, CheckpointCorruptError):
                continue  # taken by another worker since it was looked at
            try:
                ends = await self.verified_ends(run_id)
            except (CheckpointCorruptError, OSError):
                ends = None
            if ends is not None and (ends[1].kind not in ENDING_STATUS or handed_over(ends[1])):
                return lease
            await lease.release()
        return None

    async def run_version(self, run_id: str) -> Hashable | None:
        """Return a token that changes whenever the run's records change (None: none known).

        :meth:`claim_run` skips a run it found ended while its token stays the same.
        """
        return None

    @abc.abstractmethod
    async def lease_run(self, run_id: str) -> RunLease:
        """Take the run's lease now (see :meth:`~._protocol.RunStore.lease_run`)."""

    async def _root_workflow(self, run_id: str) -> str | None:
        try:
            root = await self.load_root(run_id)
        except (CheckpointCorruptError, OSError):
            return None
        return None if root is None else root.workflow_name

    async def _chains(
        self, workflow_name: str | None, run_id: str | None
    ) -> list[list[Checkpoint]]:
        run_ids = [validate_run_id(run_id)] if run_id is not None else await self.run_ids()
        chains: list[list[Checkpoint]] = []
        for rid in run_ids:
            if workflow_name is not None:
                try:
                    root = await self.load_root(rid)
                except CheckpointCorruptError:
                    pass  # the strict read below reports it
                else:
                    if root is None or root.workflow_name != workflow_name:
                        continue
            try:
                chain = await self.load_chain(rid)
            except RunNotFoundError:
                continue
            if workflow_name is not None:
                chain = [cp for cp in chain if cp.workflow_name == workflow_name]
            if chain:
                chains.append(chain)
        chains.sort(key=lambda c: (c[0].timestamp, c[0].run_id))
        return chains


def summarize(root: Checkpoint, head: Checkpoint, locked: Callable[[], bool]) -> RunSummary:
    """Return the summary of a verified run from its root and head.

    ``locked`` says whether someone holds the run's lease; it is asked only when the head's
    kind does not end the run (a run whose head is a root/step/resume record, or a pause that
    hands the run over to another worker, is ``running``
    if held, else ``queued`` when it is a submitted run's root, else ``interrupted``).
    """
    status = None if handed_over(head) else ended_as(head)
    if status is None:
        if locked():
            status = RunStatus.RUNNING
        elif head.seq == 0 and RootPayload.of(root).submitted:
            status = RunStatus.QUEUED
        else:
            status = RunStatus.INTERRUPTED
    return RunSummary(
        run_id=root.run_id,
        workflow_name=root.workflow_name,
        status=status,
        head_checkpoint_id=head.checkpoint_id,
        head_seq=head.seq,
        created=root.timestamp,
        updated=head.timestamp,
        origin_run_id=root.origin_run_id,
        origin_checkpoint_id=root.origin_checkpoint_id,
        pending=pending_requests(head),
        waiting=waiting_on(head) if status == "running" else None,
    )


async def load_checkpoint(
    load_chain: Callable[[str], Awaitable[list[Checkpoint]]], checkpoint_id: str
) -> Checkpoint:
    """Return one checkpoint from its run's strict chain, as ``load_chain`` reads it.

    Raises:
        InvalidIdError: the id is malformed.
        CheckpointNotFoundError: no such run or seq.
        CheckpointCorruptError: the run does not verify.
    """
    run_id, seq = split_checkpoint_id(checkpoint_id)
    try:
        chain = await load_chain(run_id)
    except RunNotFoundError:
        raise CheckpointNotFoundError(checkpoint_id) from None
    if seq >= len(chain):
        raise CheckpointNotFoundError(checkpoint_id)
    return chain[seq]


def read_problem(exc: OSError) -> JournalProblem:
    """Say why a run could not be read: ``<file>: cannot read: <reason>``."""
    return JournalProblem(str(exc.filename or ""), f"cannot read: {exc.strerror or exc}")


def broken_summary(
    run_id: str,
    workflow_name: str | None,
    problem: JournalProblem,
    status: RunStatus = RunStatus.CORRUPT,
) -> RunSummary:
    return RunSummary(
        run_id=run_id,
        workflow_name=workflow_name or "",
        status=status,
        head_checkpoint_id="",
        head_seq=-1,
        created="",
        updated="",
        problem=str(problem),
    )


def status_needs_lease(head: Checkpoint) -> bool:
    """Return whether a run's status depends on its lease (its head does not end the run).

    Only then is it worth asking whether the run is leased (see :func:`summarize`): a head
    that is not an ending record, or a pause that hands the run over (``running`` while a
    worker holds it, as ``wfctl runs`` lists it).
    """
    return head.kind not in ENDING_STATUS or handed_over(head)


def is_listed(
    ends: tuple[Checkpoint, Checkpoint] | None, workflow_name: str | None
) -> TypeGuard[tuple[Checkpoint, Checkpoint]]:
    """Return whether a verified run (its root and head; None: no records yet) is listed.

    A run that never committed a root is not a run yet; with ``workflow_name``, a run of
    another workflow is left out.
    """
    return ends is not None and workflow_name in (None, ends[0].workflow_name)


def corrupt_summary(
    run_id: str,
    workflow_name: str | None,
    root_workflow: str | None,
    error: CheckpointCorruptError,
) -> RunSummary | None:
    """Return the listing of a run that does not verify (None: another workflow's).

    ``root_workflow`` is the workflow its root names, None if even the root cannot be read:
    such a run is listed under any ``workflow_name`` filter, its own being unknown.
    """
    if workflow_name is None or root_workflow in (None, workflow_name):
        return broken_summary(run_id, root_workflow, JournalProblem.from_error(error))
    return None


def unreadable_summary(run_id: str, error: OSError) -> RunSummary:
    """Return the listing of a run that cannot be read (listed under any workflow filter)."""
    return broken_summary(run_id, None, read_problem(error), RunStatus.UNREADABLE)


def oldest_first(summaries: list[RunSummary]) -> list[RunSummary]:
    """Return ``summaries`` in listing order: oldest first, ties by run id."""
    return sorted(summaries, key=lambda s: (s.created, s.run_id))


def summary_row(summary: RunSummary) -> list[Any]:
    """A summary as a JSON array: its fields in order (see :func:`summary_of_row`)."""
    return [
        summary.run_id,
        summary.workflow_name,
        summary.status.value,
        summary.head_checkpoint_id,
        summary.head_seq,
        summary.created,
        summary.updated,
        summary.origin_run_id,
        summary.origin_checkpoint_id,
        list(summary.pending),
        summary.problem,
        summary.waiting,
    ]


def summary_of_row(row: list[Any]) -> RunSummary:
    """The summary :func:`summary_row` wrote as ``row``.

    Raises:
        ValueError, TypeError: ``row`` is not such an array.
    """
    (rid, workflow, status, head_id, head_seq, created, updated, origin_run, origin_id,
     pending, problem, waiting) = row  # fmt: skip
    return RunSummary(
        rid, workflow, RunStatus(status), head_id, head_seq, created, updated, origin_run,
        origin_id, tuple(pending), problem, waiting,
    )  # fmt: skip


async def delete_each(
    delete_run: Callable[[str], Awaitable[bool]], run_ids: Sequence[str]
) -> tuple[list[str], list[RunLockedError]]:
    """Remove runs one by one with ``delete_run``: the ids removed, and each leased run's error.

    Every id is validated first, so a malformed one removes nothing.

    Raises:
        InvalidIdError: a run id is malformed.
    """
    for run_id in run_ids:
        validate_run_id(run_id)
    removed: list[str] = []
    locked: list[RunLockedError] = []
    for run_id in run_ids:
        try:
            if await delete_run(run_id):
                removed.append(run_id)
        except RunLockedError as exc:
            locked.append(exc)
    return removed, locked
