"""``wfctl copy``: copy runs between two stores, keeping ids, chains, times, bytes and checksums.

For each run (every run of the source by default, oldest first):

- the source is verified first (every checksum and link, as ``runs`` verifies a run): a
  corrupt or unreadable run is not copied, nor is a run being driven in the source (its lease
  is held: it is still moving);
- the run is held in the destination (:func:`~wfctl._storage._copying.open_copy`), so nobody drives
  it or copies it there meanwhile;
- a run that already exists in the destination is copied only if what it holds is the source's
  chain or a prefix of it, byte for byte (an earlier copy taken before the run went on): the
  missing records are added; the same chain is skipped as already copied; anything else is a
  conflict and the destination's run is left alone;
- every record is written as the source stores it (its bytes, so its checksum), then the copy
  is read back from the destination and must be the source's bytes, record for record; only
  then is it published: a file or PostgreSQL destination shows the run whole or not at all, and
  a copy killed part way leaves no run there (see :mod:`wfctl._storage._copying`);
- both runs are read a record at a time (a database's a page at a time), each record verified
  as it is read, so a long run is copied in memory that does not grow with it; a source that
  fails part way (it changed since it was verified) is reported, and nothing of it published.

A run not copied is reported with its problem (the command exits 1); the others are copied.
Nothing in the source is written to: the copy takes no lease there.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import os
from array import array
from collections.abc import AsyncGenerator, Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from wfctl._errors import (
    CheckpointCorruptError,
    RunLockedError,
    RunNotFoundError,
    StoreLocationError,
)
from wfctl._records._checkpoint import Checkpoint, RunStatus, validate_run_id
from wfctl._storage._capabilities import stored_records
from wfctl._storage._copying import RunCopy, open_copy
from wfctl._storage._open import is_url, open_storage, within_store
from wfctl._storage._protocol import RunStore

from ._documents import document
from ._names import LATEST, resolve_run_id

__all__ = ["CopiedRun", "CopyOutcome", "CopyReport", "copy_runs"]


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
        RunNotFoundError, AmbiguousRunError: a named run is not in the source, or the start
            of an id given names several (nothing is copied).
        OSError, WfctlError: a store failed part way (the runs reported before it are copied;
            a run cut short is completed by copying it again).
    """
    for name in run_ids:  # malformed: refused before a store is opened
        if name != LATEST:
            validate_run_id(name)
    if _same_store(source, destination):
        raise StoreLocationError(
            os.fspath(destination), "is the source store itself (copy to another store)"
        )
    if within_store(destination, source):  # the same store is refused above
        raise StoreLocationError(
            os.fspath(destination), "is inside the source store (copy to a directory outside it)"
        )
    src = open_storage(source, must_exist=True)
    dst = open_storage(destination, must_exist=False)
    runs = asyncio.run(_copy(src, dst, list(run_ids)))
    return CopyReport(src.location, dst.location, tuple(runs))


def _same_store(source: str | os.PathLike[str], destination: str | os.PathLike[str]) -> bool:
    src, dst = os.fspath(source), os.fspath(destination)
    if is_url(src) or is_url(dst):
        return src == dst and src != "memory:"
    return os.path.realpath(src) == os.path.realpath(dst)


async def _copy(src: RunStore, dst: RunStore, names: list[str]) -> list[CopiedRun]:
    try:
        if names:  # each a run's id, a unique start of one or @latest, as every command reads it
            wanted = [await resolve_run_id(src, name) for name in names]
            run_ids = list(dict.fromkeys(wanted))
            for run_id in run_ids:
                await src.run_summary(run_id)  # raises RunNotFoundError before anything is copied
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
        target = await open_copy(dst, run_id)
    except RunLockedError as exc:
        return _refused(run_id, name, f"in the destination: {exc}", summary.head_seq + 1)
    except CheckpointCorruptError as exc:  # its entry there cannot hold a run (a file, a link)
        corrupt = f"exists in the destination, corrupt there: {exc}"
        return _refused(run_id, name, corrupt, summary.head_seq + 1)
    try:
        return await _write_run(src, target, run_id, name, summary.head_seq + 1)
    finally:
        await target.close()


async def _write_run(
    src: RunStore, target: RunCopy, run_id: str, name: str, total: int
) -> CopiedRun:
    """Write the source's chain through ``target`` (held until closed), verify it, publish it.
    ``total``: the source's records, as its summary counted them (a refusal's count; a copy's
    is the records read).

    Both runs are read a record at a time (:func:`stored_records`), so a long run's copy holds
    a record and a page of each, not the run: the records the destination already holds must be
    the source's first ones, byte for byte; the rest are written as the source's are read; the
    copy read back must be the source's bytes, record for record (compared through a short
    digest of each), before it is published.
    """
    copied = _Lines(target.atomic)
    source = stored_records(src, run_id)
    async with contextlib.aclosing(source):
        try:
            held = await _held(target, source, copied)
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
        refused = await _append(target, source, pending, copied, already, name, total)
        if refused is not None:
            return refused
    total, written = copied.count, copied.count - already  # what was read and written
    problem = await _verified(target, copied, run_id)
    if problem is None:
        try:
            await target.publish()
        except CheckpointCorruptError as exc:
            problem = f"{exc}; it is not made visible"
    if problem is not None:
        gone = "it is not made visible there" if target.atomic else "it is left there"
        problem = f"the copy in the destination does not verify: {problem}; {gone}"
        return _refused(run_id, name, problem, total, 0 if target.atomic else written)
    return CopiedRun(run_id, CopyOutcome.COPIED, name, total, written)


class _Lines:
    """The source's records of one copy as stored, counted, each with a short digest."""

    def __init__(self, atomic: bool) -> None:
        self.atomic = atomic
        self.count = 0
        self.digests = array("Q")

    def add(self, line: bytes) -> None:
        self.digests.append(_digest(line))
        self.count += 1

    def written(self, already: int) -> str:
        """What a copy stopped now left in the destination."""
        if self.atomic:
            return "nothing of it was made visible in the destination"
        return f"the {self.count - already} record(s) before it were written to the destination"


def _digest(line: bytes) -> int:
    return int.from_bytes(hashlib.blake2b(line, digest_size=8).digest(), "little")


class _SourceProblem(Exception):
    """The source's run failed as it was read (it changed since its summary was read)."""


async def _next_of_source(
    source: AsyncGenerator[tuple[bytes, Checkpoint], None], left: str = ""
) -> tuple[bytes, Checkpoint] | None:
    """The source's next record (None after its last), its failure a :class:`_SourceProblem`
    (``left``: what the copy left in the destination, said after it)."""
    try:
        return await anext(source, None)
    except CheckpointCorruptError as exc:
        problem = f"corrupt in the source: {exc}"
    except RunNotFoundError:
        problem = "no longer in the source"
    raise _SourceProblem(f"{problem}; {left}" if left else problem)


async def _held(
    target: RunCopy, source: AsyncGenerator[tuple[bytes, Checkpoint], None], copied: _Lines
) -> tuple[int, tuple[bytes, Checkpoint] | None] | None:
    """Compare the records the destination holds with the source's first ones, byte for byte:
    how many it holds and the source's next record (None: it holds them all), or None if they
    differ.

    Raises:
        _SourceProblem: the source failed as it was read.
        CheckpointCorruptError: the destination's run does not verify.
    """
    held = 0
    records = target.held()
    async with contextlib.aclosing(records):
        async for line in records:
            mine = await _next_of_source(source)
            if mine is None or mine[0] != line:
                return None  # it holds more records than the source, or others
            copied.add(line)
            await target.keep(*mine)
            held += 1
    return held, await _next_of_source(source)


async def _append(
    target: RunCopy,
    source: AsyncGenerator[tuple[bytes, Checkpoint], None],
    first: tuple[bytes, Checkpoint],
    copied: _Lines,
    already: int,
    name: str,
    total: int,
) -> CopiedRun | None:
    """Write ``first`` and every later record of the source; None, or the refusal."""
    pair: tuple[bytes, Checkpoint] | None = first
    run_id = first[1].run_id
    while pair is not None:
        line, checkpoint = pair
        copied.add(line)
        try:
            await target.add(line, checkpoint)
        except (CheckpointCorruptError, TypeError, ValueError) as exc:
            if target.atomic:
                left, written = "nothing of the run was made visible there", 0
            else:
                written = checkpoint.seq - already
                left = f"the {checkpoint.seq} record(s) before it are there (copying again completes it)"
            problem = f"the destination refused {checkpoint.checkpoint_id}: {exc}; {left}"
            return _refused(run_id, name, problem, total, written)
        try:
            pair = await _next_of_source(source, copied.written(already))
        except _SourceProblem as failed:
            written = 0 if target.atomic else copied.count - already
            return _refused(run_id, name, str(failed), total, written)
    return None


async def _verified(target: RunCopy, copied: _Lines, run_id: str) -> str | None:
    """Read the copy back: None if it holds the source's records byte for byte, else what
    differs (the first record that does, or the count)."""
    count = 0
    records = target.staged()
    async with contextlib.aclosing(records):
        async for line in records:
            if count < copied.count and _digest(line) != copied.digests[count]:
                return (
                    f"{run_id}.{count} does not read back as the source's record (other bytes, "
                    "another checksum)"
                )
            count += 1
    if count != copied.count:
        return f"it holds {count} records, not {copied.count}"
    return None


def _refused(run_id: str, name: str, problem: str, total: int = 0, written: int = 0) -> CopiedRun:
    return CopiedRun(run_id, CopyOutcome.REFUSED, name, total, written, problem)
