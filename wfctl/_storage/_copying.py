"""Writing a run copied from another store: what a destination does, and a fallback.

A copy writes a run's records into a destination through a :class:`RunCopy`, which holds the
destination's run (no one drives it there meanwhile) and decides when the records become
visible. wfctl's own stores make a copy visible only once it is whole and read back
(:attr:`RunCopy.atomic`): the file store writes it under a name no listing reads and renames
it into place (:mod:`._staging`), PostgreSQL writes it under its row's copy mark, unseen, and
moves the run's head to it in one statement (its ``_copying``). Until then nothing of it is listed, claimed, resumed or replayed, and a copy
killed part way leaves nothing that any of them sees.

A storage that is neither (the memory store, a user's) gets the records saved one by one
under its lease, as the engine saves them (:class:`SavedCopy`): a copy cut short there holds
the records before the cut.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncGenerator
from typing import Any, Protocol

from wfctl._errors import RunNotFoundError
from wfctl._records._checkpoint import Checkpoint

from ._capabilities import lease_run, stored_records

__all__ = ["RunCopy", "SavedCopy", "open_copy"]


class RunCopy(Protocol):
    """One run being copied into a destination, held there until :meth:`close`.

    The copy calls :meth:`held` first (the records the destination holds now), then
    :meth:`keep` for each of the source's records the destination already holds and
    :meth:`add` for each later one, in order, then :meth:`staged` to read back what it wrote,
    and :meth:`publish` if that is the source's run.
    """

    #: Whether nothing of the copy is seen by anyone before :meth:`publish` (and after a
    #: crash before it).
    atomic: bool

    def held(self) -> AsyncGenerator[bytes, None]:
        """The destination's records of the run as it holds them now (none: a new run).

        Raises:
            CheckpointCorruptError: the destination's run does not verify.
        """
        ...

    async def keep(self, line: bytes, checkpoint: Checkpoint) -> None:
        """Keep a record the destination holds already (one :meth:`held` gave)."""
        ...

    async def add(self, line: bytes, checkpoint: Checkpoint) -> None:
        """Write the next record, ``line`` being its bytes as the source stores them.

        Raises:
            CheckpointCorruptError, TypeError, ValueError: the destination refused it.
        """
        ...

    def staged(self) -> AsyncGenerator[bytes, None]:
        """Every record of the copy (kept and added), read back as the destination stores it."""
        ...

    async def publish(self) -> None:
        """Make the copy the destination's run."""
        ...

    async def close(self) -> None:
        """Give the run back; a copy not published is dropped where it can be (idempotent)."""
        ...


async def open_copy(storage: Any, run_id: str) -> RunCopy:
    """Hold ``run_id`` in ``storage`` to copy it there: the storage's own way, or the fallback.

    Raises:
        RunLockedError: the run is held there (driven, or copied by another process).
        CheckpointCorruptError: its place there cannot hold a run (a file, a link).
    """
    method = getattr(storage, "copy_in", None)
    if method is not None:
        copy: RunCopy = await method(run_id)
        return copy
    return SavedCopy(storage, run_id, await lease_run(storage, run_id))


class SavedCopy:
    """A copy into a storage that is not wfctl's: each record saved as it comes, under the
    run's lease; records read back as :func:`~._capabilities.stored_records` gives them."""

    atomic = False

    def __init__(self, storage: Any, run_id: str, lease: Any) -> None:
        self._storage, self._run_id, self._lease = storage, run_id, lease

    async def held(self) -> AsyncGenerator[bytes, None]:
        records = stored_records(self._storage, self._run_id)
        async with contextlib.aclosing(records):
            try:
                async for line, _ in records:
                    yield line
            except RunNotFoundError:
                return

    async def keep(self, line: bytes, checkpoint: Checkpoint) -> None:
        pass  # the storage holds it

    async def add(self, line: bytes, checkpoint: Checkpoint) -> None:
        await self._storage.save(checkpoint)

    async def staged(self) -> AsyncGenerator[bytes, None]:
        records = stored_records(self._storage, self._run_id)
        async with contextlib.aclosing(records):
            async for line, _ in records:
                yield line

    async def publish(self) -> None:
        pass  # saved as it came

    async def close(self) -> None:
        await self._lease.release()
