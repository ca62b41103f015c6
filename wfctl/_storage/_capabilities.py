"""What the engine asks of any storage, with fallbacks for storages that are not ours.

The engine calls these with whatever object it was given: one of our storages (a
:class:`~._protocol.RunStore`), a user's own storage that implements only the seven methods of
:class:`~._protocol.CheckpointStorage`, or a wrapper that delegates to ours through
``__getattr__``. Each function uses the storage's own capability when it has one
(looked up with ``getattr``, so delegation works) and otherwise does the next best thing.
"""

from __future__ import annotations

import contextlib
import inspect
from collections.abc import AsyncGenerator, Hashable
from typing import Any, Final

from wfctl._errors import CheckpointCorruptError, RunNotFoundError, WfctlError
from wfctl._records._checkpoint import Checkpoint, validate_run_id
from wfctl._records._payloads import CancelRequest
from wfctl._records._refs import Resolver

from ._base import strict_chain
from ._journal import encode_record
from ._lock import HeldLease, LocalRunLock
from ._pages import PagedStore, paged_lines, paged_records
from ._protocol import RunJournal, RunLease

__all__ = [
    "all_run_ids",
    "cancel_request",
    "chain_records",
    "clear_pause",
    "has_run",
    "lease_run",
    "load_chain",
    "newest_run_id",
    "read_run",
    "request_cancel",
    "request_pause",
    "run_ids_starting",
    "stored_records",
]

#: Process-local locks for storages without ``lock_run``, keyed by ``(id(storage), run_id)``.
_LOCAL_LOCKS: Final[set[Hashable]] = set()


async def read_run(storage: Any, run_id: str) -> RunJournal:
    """Return everything ``storage`` holds for ``run_id``, with what could not be trusted.

    Falls back to ``list_checkpoints(run_id=...)`` (which cannot report problems) when the
    storage has no ``read_run``.

    Raises:
        InvalidIdError: ``run_id`` is malformed.
        RunNotFoundError: the run does not exist.
    """
    validate_run_id(run_id)
    method = getattr(storage, "read_run", None)
    if method is not None:
        result = method(run_id)
        journal: RunJournal = await result if inspect.isawaitable(result) else result
        return journal
    checkpoints = await storage.list_checkpoints(run_id=run_id)
    if not checkpoints:
        raise RunNotFoundError(run_id)
    return RunJournal(run_id, tuple(checkpoints), source=f"{type(storage).__name__}:{run_id}")


async def load_chain(storage: Any, run_id: str) -> list[Checkpoint]:
    """Return the run's checkpoints ``0..n-1``, verified as one chain, from any storage.

    The same strict checks apply whatever the storage is, so a custom storage cannot hand the
    engine a forked or gapped history. The references in step arguments are resolved (see
    :func:`~._base.strict_chain`).

    Raises:
        RunNotFoundError: the run does not exist.
        CheckpointCorruptError: a record is corrupt or the chain is broken.
    """
    return strict_chain(await read_run(storage, run_id))


async def chain_records(
    storage: Any, run_id: str, resolver: Resolver | None = None
) -> AsyncGenerator[Checkpoint, None]:
    """Yield the run's checkpoints ``0..n-1``, each once it and every record before it verified
    as :func:`load_chain` verifies the run: from any storage, in memory that does not grow with
    the run where the storage reads a record at a time (the file store, ``stream_checked_chain``;
    a database, a page at a time). Others are read whole first. ``resolver``: what resolves
    a database's records (one is made if None; the caller reads what it held after).

    Raises:
        RunNotFoundError: the run does not exist.
        CheckpointCorruptError: a record is corrupt or the chain is broken (the file and
            PostgreSQL stores: while iterating, after the records before it).
    """
    validate_run_id(run_id)
    stream = getattr(storage, "stream_checked_chain", None)
    if stream is not None:
        _, records = stream(run_id)
        for checkpoint in records:
            yield checkpoint
        return
    if isinstance(storage, PagedStore):
        try:
            _, _, paged = await paged_records(storage, run_id, resolver)
        except CheckpointCorruptError:
            pass  # its ends do not verify: the whole read below names what is wrong
        else:
            async with contextlib.aclosing(paged):
                async for checkpoint in paged:
                    yield checkpoint
            return
    for checkpoint in await load_chain(storage, run_id):
        yield checkpoint


async def stored_records(storage: Any, run_id: str) -> AsyncGenerator[tuple[bytes, Checkpoint]]:
    """Yield the run's checkpoints as :func:`chain_records` does, each with its record's bytes
    as the storage keeps them (a journal line without its newline): the file store's journal
    lines, a database's records. A storage that keeps checkpoints, not bytes (the memory store,
    a user's), gives each record as :func:`~._journal.encode_record` writes it.

    Raises:
        As :func:`chain_records`.
    """
    validate_run_id(run_id)
    stored = getattr(storage, "stored_chain", None)
    if stored is not None:
        for pair in stored(run_id):
            yield pair
        return
    if isinstance(storage, PagedStore):
        try:
            _, _, paged = await paged_lines(storage, run_id)
        except CheckpointCorruptError:
            pass  # its ends do not verify: the whole read below names what is wrong
        else:
            async with contextlib.aclosing(paged):
                async for pair in paged:
                    yield pair
            return
    records = chain_records(storage, run_id)
    async with contextlib.aclosing(records):
        async for checkpoint in records:
            yield encode_record(checkpoint)[:-1], checkpoint


async def lease_run(storage: Any, run_id: str) -> RunLease:
    """Take the run's lease: the storage's own, else a process-local one.

    A storage without ``lease_run`` is a plain :class:`CheckpointStorage` (agent-framework's
    seven methods). Such a storage is driven by one process: wfctl keeps a second driver out
    within this process, and cannot see others. Every storage wfctl ships is a
    :class:`RunStore`, whose leases exclude across processes and machines.

    Raises:
        RunLockedError: it is held.
    """
    validate_run_id(run_id)
    method = getattr(storage, "lease_run", None)
    if method is not None:
        lease: RunLease = await method(run_id)
        return lease
    lock = LocalRunLock(_LOCAL_LOCKS, (id(storage), run_id), run_id, storage)
    return HeldLease(lock, lambda: False)


async def clear_pause(storage: Any, run_id: str) -> None:
    """Withdraw a pause request, if the storage supports them."""
    method = getattr(storage, "clear_pause", None)
    if method is not None:
        await method(run_id)


async def request_pause(storage: Any, run_id: str) -> None:
    """Ask a running run to pause at its next step boundary.

    Raises:
        WfctlError: the storage does not support pause requests.
        RunNotFoundError: no such run.
    """
    method = getattr(storage, "request_pause", None)
    if method is None:
        raise WfctlError(f"{type(storage).__name__} does not support pause requests")
    await method(run_id)


async def request_cancel(storage: Any, run_id: str, request: CancelRequest) -> None:
    """Ask a running run to end ``cancelled`` at its next step boundary, naming who asked.

    Raises:
        WfctlError: the storage does not support cancel requests.
        RunNotFoundError: no such run.
    """
    method = getattr(storage, "request_cancel", None)
    if method is None:
        raise WfctlError(f"{type(storage).__name__} does not support cancel requests")
    try:
        await method(run_id, request)
    except NotImplementedError as exc:
        raise WfctlError(str(exc)) from None


async def cancel_request(storage: Any, run_id: str) -> CancelRequest | None:
    """Return the cancel request standing for ``run_id`` (None, if the storage has none)."""
    method = getattr(storage, "cancel_request", None)
    if method is None:
        return None
    request = await method(run_id)
    return request if isinstance(request, CancelRequest) else None


async def all_run_ids(storage: Any) -> list[str]:
    """Return the id of every run ``storage`` holds, in any order (names only where it can)."""
    for name in ("all_run_ids", "run_ids"):
        method = getattr(storage, name, None)
        if method is not None:
            ids: list[str] = await method()
            return ids
    return [s.run_id for s in await storage.list_runs()]


async def has_run(storage: Any, run_id: str) -> bool | None:
    """Return whether ``storage`` holds ``run_id``, from a look at that run alone, when the
    storage can tell so (None: it cannot; :func:`run_ids_starting` can)."""
    method = getattr(storage, "has_run", None)
    return None if method is None else bool(await method(run_id))


async def run_ids_starting(storage: Any, prefix: str, limit: int) -> tuple[list[str], int]:
    """Return the ids (sorted, at most ``limit``) of the runs whose id starts with ``prefix``,
    and how many there are: from the storage's own lookup (a database's index) when it has one,
    else from its list of run ids."""
    method = getattr(storage, "run_ids_starting", None)
    if method is not None:
        found: tuple[list[str], int] = await method(prefix, limit)
        return found
    matching = sorted(r for r in await all_run_ids(storage) if r.startswith(prefix))
    return matching[:limit], len(matching)


async def newest_run_id(storage: Any) -> str | None:
    """Return the id of the run created last (ties: the greater id), None if there is none.

    From the storage's own lookup when it has one, else from each run's root (a run whose
    root cannot be read is passed over), else from its listing.
    """
    method = getattr(storage, "newest_run_id", None)
    if method is not None:
        newest: str | None = await method()
        return newest
    load_root = getattr(storage, "load_root", None)
    if load_root is None:
        summaries = await storage.list_runs()
        return max(((s.created, s.run_id) for s in summaries), default=(None, None))[1]
    best: tuple[str, str] | None = None
    for run_id in await all_run_ids(storage):
        try:
            root = await load_root(run_id)
        except (WfctlError, OSError):  # corrupt, unreadable, or removed since it was listed
            continue
        if root is not None and (best is None or (root.timestamp, run_id) > best):
            best = (root.timestamp, run_id)
    return None if best is None else best[1]
