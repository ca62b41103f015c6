"""``wfctl copy``: copy runs between two stores, keeping ids, chains, times and checksums.

For each run (every run of the source by default, oldest first):

- the source is verified first (every checksum and link, as ``runs`` verifies a run): a
  corrupt or unreadable run is not copied, nor is a run being driven in the source (its lease
  is held: it is still moving);
- the run's lease is taken in the destination, so nobody drives it there while it is written;
- a run that already exists in the destination is copied only if what it holds is the source's
  chain or a prefix of it (an earlier copy, cut short or taken before the run went on): the
  missing records are appended; the same chain is skipped as already copied; anything else is
  a conflict and the destination's run is left alone;
- every record is saved in order, then the run is read back from the destination and each
  record must encode to the very bytes (so the same checksum) the source's does;
- both runs are read a record at a time (a database's a page at a time), each record verified
  as it is read, so a long run is copied in memory that does not grow with it; a source that
  fails part way (it changed since it was verified) is reported with the records written;
- a file destination syncs a run's records together (not one ``fdatasync`` a record), and
  everything before the report is made.

A run not copied is reported with its problem (the command exits 1); the others are copied.
Nothing in the source is written to: the copy takes no lease there.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import os
from collections.abc import AsyncGenerator, Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Any, Final

from ._checkpoint import Checkpoint, RunStatus, validate_run_id
from ._documents import document
from ._errors import CheckpointCorruptError, RunLockedError, RunNotFoundError, StoreLocationError
from ._storage._capabilities import chain_records
from ._storage._durability import Durability
from ._storage._journal import encode_record
from ._storage._open import is_url, open_storage, within_store
from ._storage._protocol import RunStore

__all__ = ["CopiedRun", "CopyOutcome", "CopyReport", "copy_runs"]

#: How a file destination syncs: a run's step records when a record of another kind comes (the
#: journal's sync takes every record before it) and when the store is closed, before the report
#: is made, not one ``fdatasync`` a record. A copy cut short (an OS crash included) holds a
#: prefix of the run, or a torn tail the next writer cuts: copying again completes it.
_WRITE_THEN_SYNC: Final = Durability("batch", batch_steps=1_000_000, batch_ms=3_600_000)


class CopyOutcome(StrEnum):
    """What happened to one run."""

    #: Its records were written to the destination (all of them, or those an earlier copy
    #: had not written yet) and read back identical.
    COPIED = "copied"
    #: The destination already held the same chain, record for record: nothing written.
    ALREADY_COPIED = "already_copied"
    #: Not copied: see the problem (corrupt or running in the source, a conflict or a lease
    #: in the destination, a copy that did not read back identical).
    REFUSED = "refused"


@dataclass(frozen=True, slots=True)
class CopiedRun:
    """One run of a copy: what happened, how many records it has and how many were written."""

    run_id: str
    outcome: CopyOutcome
    workflow_name: str = ""
    checkpoint_count: int = 0
    written_count: int = 0
    problem: str | None = None

    def to_json(self) -> dict[str, Any]:
        """Return the run as an item of ``copy``'s ``runs``."""
        return {
            "run_id": self.run_id,
            "workflow": self.workflow_name or None,
            "outcome": self.outcome.value,
            "checkpoint_count": self.checkpoint_count,
            "written_count": self.written_count,
            "problem": self.problem,
        }


@dataclass(frozen=True, slots=True)
class CopyReport:
    """What ``copy`` did, run by run, from ``source`` to ``destination``."""

    source: str
    destination: str
    runs: tuple[CopiedRun, ...]

    @property
    def ok(self) -> bool:
        """Whether every run is in the destination now (none refused)."""
        return all(run.outcome != CopyOutcome.REFUSED for run in self.runs)

    def count(self, outcome: CopyOutcome) -> int:
        """Return how many runs had ``outcome``."""
        return sum(run.outcome == outcome for run in self.runs)

    def to_json(self) -> dict[str, Any]:
        """Return the ``wfctl/copy@1`` document (see docs/json.md)."""
        return document(
            "copy",
            {
                "source": self.source,
                "destination": self.destination,
                "run_count": len(self.runs),
                "copied_count": self.count(CopyOutcome.COPIED),
                "already_copied_count": self.count(CopyOutcome.ALREADY_COPIED),
                "refused_count": self.count(CopyOutcome.REFUSED),
                "runs": [run.to_json() for run in self.runs],
            },
        )


def copy_runs(
    source: str | os.PathLike[str],
    destination: str | os.PathLike[str],
    run_ids: Sequence[str] = (),
) -> CopyReport:
    """Copy ``run_ids`` (default: every run) from the store ``source`` to ``destination``.

    Both are a directory, a ``postgresql://`` URL or ``memory:``; the source must exist, the
    destination is created if needed.

    Raises:
        StoreLocationError: a store cannot be opened, or both name the same store.
        InvalidIdError: a run id is malformed (nothing is copied).
        RunNotFoundError: a named run is not in the source (nothing is copied).
        OSError, WfctlError: a store failed part way (the runs reported before it are copied;
            a run cut short is completed by copying it again).
    """
    wanted = list(dict.fromkeys(validate_run_id(run_id) for run_id in run_ids))
    if _same_store(source, destination):
        raise StoreLocationError(
            os.fspath(destination), "is the source store itself (copy to another store)"
        )
    if within_store(destination, source):  # the same store is refused above
        raise StoreLocationError(
            os.fspath(destination), "is inside the source store (copy to a directory outside it)"
        )
    src = open_storage(source, must_exist=True)
    dst = open_storage(destination, must_exist=False, durability=_WRITE_THEN_SYNC)
    runs = asyncio.run(_copy(src, dst, wanted))
    return CopyReport(src.location, dst.location, tuple(runs))


def _same_store(source: str | os.PathLike[str], destination: str | os.PathLike[str]) -> bool:
    src, dst = os.fspath(source), os.fspath(destination)
    if is_url(src) or is_url(dst):
        return src == dst and src != "memory:"
    return os.path.realpath(src) == os.path.realpath(dst)


async def _copy(src: RunStore, dst: RunStore, wanted: list[str]) -> list[CopiedRun]:
    try:
        if wanted:
            for run_id in wanted:
                await src.run_summary(run_id)  # raises RunNotFoundError before anything is copied
            run_ids = wanted
        else:
            run_ids = [summary.run_id for summary in await src.list_runs()]
        return [await _copy_run(src, dst, run_id) for run_id in run_ids]
    finally:
        try:
            await dst.aclose()
        finally:
            await src.aclose()


async def _copy_run(src: RunStore, dst: RunStore, run_id: str) -> CopiedRun:
    try:
        summary = await src.run_summary(run_id)
    except RunNotFoundError:  # removed since the source was listed
        return _refused(run_id, "", "no longer in the source")
    name = summary.workflow_name
    if summary.status == RunStatus.RUNNING:
        return _refused(run_id, name, "running in the source (pause it or let it end first)")
    if summary.problem is not None:
        return _refused(run_id, name, f"{summary.status} in the source: {summary.problem}")
    try:
        lease = await dst.lease_run(run_id)
    except RunLockedError as exc:
        return _refused(run_id, name, f"in the destination: {exc}", summary.head_seq + 1)
    except CheckpointCorruptError as exc:  # its entry there cannot hold a run (a file, a link)
        corrupt = f"exists in the destination, corrupt there: {exc}"
        return _refused(run_id, name, corrupt, summary.head_seq + 1)
    try:
        return await _write_run(src, dst, run_id, name, summary.head_seq + 1)
    finally:
        await lease.release()


async def _write_run(src: RunStore, dst: RunStore, run_id: str, name: str, total: int) -> CopiedRun:
    """Append what the destination lacks of the source's chain (held under its lease), then
    verify it. ``total``: the source's records, as its summary counted them (a refusal's
    count; a copy's is the records read).

    Both runs are read a record at a time (:func:`chain_records`), so a long run's copy holds a
    record and a page of each, not the run: the records the destination already holds must be
    the source's first ones, the rest are saved as the source's are read, and the copy read
    back must encode to the source's bytes, record for record (compared through a digest of
    each side's encoded records in order; only a copy that differs is read again, to name the
    first record that does).
    """
    copied = _Encoded()
    source = chain_records(src, run_id)
    async with contextlib.aclosing(source):
        try:
            held = await _held(dst, run_id, source, copied)
        except _SourceProblem as failed:
            return _refused(run_id, name, str(failed), total)
        except CheckpointCorruptError as exc:
            corrupt = f"exists in the destination, corrupt there: {exc}"
            return _refused(run_id, name, corrupt, total)
        if held is None:
            other = (
                "another run with this id is in the destination (its records differ from the "
                "source's); it is left as it is"
            )
            return _refused(run_id, name, other, total)
        already, pending = held
        if pending is None:
            return CopiedRun(run_id, CopyOutcome.ALREADY_COPIED, name, already)
        refused = await _append(dst, source, pending, copied, already, name, total)
        if refused is not None:
            return refused
    total, written = copied.count, copied.count - already  # what was read and written
    back = _Encoded()
    async for checkpoint in chain_records(dst, run_id):
        back.add(checkpoint)
    if back.count != total or back.digest.digest() != copied.digest.digest():
        what = (
            f"it holds {back.count} records, not {total}"
            if back.count != total
            else f"{await _first_difference(src, dst, run_id)} does not read back as the "
            "source's record (another encoding or checksum)"
        )
        problem = f"the copy in the destination does not verify: {what}; it is left there"
        return _refused(run_id, name, problem, total, written)
    return CopiedRun(run_id, CopyOutcome.COPIED, name, total, written)


class _Encoded:
    """The records of one side of a copy, counted and digested as encoded, in order."""

    def __init__(self) -> None:
        self.count = 0
        self.digest = hashlib.blake2b()

    def add(self, checkpoint: Checkpoint) -> bytes:
        line = encode_record(checkpoint)
        self.digest.update(line)
        self.count += 1
        return line


class _SourceProblem(Exception):
    """The source's run failed as it was read (it changed since its summary was read)."""


async def _next_of_source(
    source: AsyncGenerator[Checkpoint, None], written: int = 0
) -> Checkpoint | None:
    """The source's next record (None after its last), its failure a :class:`_SourceProblem`."""
    try:
        return await anext(source, None)
    except CheckpointCorruptError as exc:
        problem = f"corrupt in the source: {exc}"
    except RunNotFoundError:
        problem = "no longer in the source"
    if written:
        problem += f"; the {written} record(s) before it were written to the destination"
    raise _SourceProblem(problem)


async def _held(
    dst: RunStore, run_id: str, source: AsyncGenerator[Checkpoint, None], copied: _Encoded
) -> tuple[int, Checkpoint | None] | None:
    """Compare the records the destination holds with the source's first ones: how many it
    holds and the source's next record (None: it holds them all), or None if they differ.

    Raises:
        _SourceProblem: the source failed as it was read.
        CheckpointCorruptError: the destination's run does not verify.
    """
    held = 0
    records = chain_records(dst, run_id)
    try:
        async with contextlib.aclosing(records):
            async for checkpoint in records:
                mine = await _next_of_source(source)
                if mine is None or copied.add(mine) != encode_record(checkpoint):
                    return None  # it holds more records than the source, or others
                held += 1
    except RunNotFoundError:
        pass  # a new run in the destination
    return held, await _next_of_source(source)


async def _append(
    dst: RunStore,
    source: AsyncGenerator[Checkpoint, None],
    first: Checkpoint,
    copied: _Encoded,
    already: int,
    name: str,
    total: int,
) -> CopiedRun | None:
    """Save ``first`` and every later record of the source; None, or the refusal."""
    checkpoint: Checkpoint | None = first
    while checkpoint is not None:
        copied.add(checkpoint)
        try:
            await dst.save(checkpoint)
        except (CheckpointCorruptError, TypeError, ValueError) as exc:
            written = checkpoint.seq - already
            problem = (
                f"the destination refused {checkpoint.checkpoint_id}: {exc}; the "
                f"{checkpoint.seq} record(s) before it are there (copying again completes it)"
            )
            return _refused(checkpoint.run_id, name, problem, total, written)
        try:
            checkpoint = await _next_of_source(source, copied.count - already)
        except _SourceProblem as failed:
            return _refused(first.run_id, name, str(failed), total, copied.count - already)
    return None


async def _first_difference(src: RunStore, dst: RunStore, run_id: str) -> str:
    """The id of the first record of the copy that does not encode as the source's does."""
    source, copies = chain_records(src, run_id), chain_records(dst, run_id)
    async with contextlib.aclosing(source), contextlib.aclosing(copies):
        async for copy in copies:
            mine = await anext(source, None)
            if mine is None or encode_record(mine) != encode_record(copy):
                return copy.checkpoint_id
    return "a record"  # the same on a second read: the first read differed


def _refused(run_id: str, name: str, problem: str, total: int = 0, written: int = 0) -> CopiedRun:
    return CopiedRun(run_id, CopyOutcome.REFUSED, name, total, written, problem)
