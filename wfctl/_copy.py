"""``wfctl copy``: copy runs between two stores, keeping ids, chains, times and checksums.

For each run (every run of the source by default, oldest first):

- the source is read strictly (every checksum and link): a corrupt or unreadable run is not
  copied, nor is a run being driven in the source (its lease is held: it is still moving);
- the run's lease is taken in the destination, so nobody drives it there while it is written;
- a run that already exists in the destination is copied only if what it holds is the source's
  chain or a prefix of it (an earlier copy, cut short or taken before the run went on): the
  missing records are appended; the same chain is skipped as already copied; anything else is
  a conflict and the destination's run is left alone;
- every record is saved in order, then the run is read back from the destination and each
  record must encode to the very bytes (so the same checksum) the source's does;
- a file destination syncs a run's records together (not one ``fdatasync`` a record), and
  everything before the report is made.

A run not copied is reported with its problem (the command exits 1); the others are copied.
Nothing in the source is written to: the copy takes no lease there.
"""

from __future__ import annotations

import asyncio
import itertools
import os
from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Any, Final

from ._checkpoint import Checkpoint, RunStatus, validate_run_id
from ._documents import document
from ._errors import CheckpointCorruptError, RunLockedError, RunNotFoundError, StoreLocationError
from ._storage._base import strict_chain
from ._storage._durability import Durability
from ._storage._journal import encode_record
from ._storage._open import is_url, open_storage
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
        chain = strict_chain(await src.read_run(run_id))
    except CheckpointCorruptError as exc:  # it changed since its summary was read
        return _refused(run_id, name, f"corrupt in the source: {exc}")
    except RunNotFoundError:
        return _refused(run_id, name, "no longer in the source")
    try:
        lease = await dst.lease_run(run_id)
    except RunLockedError as exc:
        return _refused(run_id, name, f"in the destination: {exc}", len(chain))
    try:
        return await _write_run(dst, chain, name)
    finally:
        await lease.release()


async def _write_run(dst: RunStore, chain: list[Checkpoint], name: str) -> CopiedRun:
    """Append what the destination lacks of ``chain`` (held under its lease), then verify it.

    ``chain`` is emptied once written: the copy read back is verified against the source's
    encoded records, so the source's decoded ones need not be held beside it (a long run's
    copy holds one decoded chain at a time, not two).
    """
    run_id, total = chain[0].run_id, len(chain)
    lines = [encode_record(checkpoint) for checkpoint in chain]
    try:
        held = strict_chain(await dst.read_run(run_id))
    except RunNotFoundError:
        held = []
    except CheckpointCorruptError as exc:
        return _refused(run_id, name, f"exists in the destination, corrupt there: {exc}", total)
    if len(held) > total or any(
        encode_record(cp) != line for cp, line in zip(held, lines, strict=False)
    ):
        return _refused(
            run_id,
            name,
            "another run with this id is in the destination (its records differ from the "
            "source's); it is left as it is",
            total,
        )
    if len(held) == total:
        return CopiedRun(run_id, CopyOutcome.ALREADY_COPIED, name, total)
    already = len(held)
    del held
    for checkpoint in itertools.islice(chain, already, None):
        try:
            await dst.save(checkpoint)
        except (CheckpointCorruptError, TypeError, ValueError) as exc:
            written = checkpoint.seq - already
            problem = (
                f"the destination refused {checkpoint.checkpoint_id}: {exc}; the "
                f"{checkpoint.seq} record(s) before it are there (copying again completes it)"
            )
            return _refused(run_id, name, problem, total, written)
    chain.clear()
    copied = strict_chain(await dst.read_run(run_id))
    written = total - already
    differs = [cp.checkpoint_id for cp, line in zip(copied, lines, strict=False)
               if encode_record(cp) != line]  # fmt: skip
    if differs or len(copied) != total:
        what = (
            f"{differs[0]} does not read back as the source's record (another encoding or checksum)"
            if differs
            else f"it holds {len(copied)} records, not {total}"
        )
        problem = f"the copy in the destination does not verify: {what}; it is left there"
        return _refused(run_id, name, problem, total, written)
    return CopiedRun(run_id, CopyOutcome.COPIED, name, total, written)


def _refused(run_id: str, name: str, problem: str, total: int = 0, written: int = 0) -> CopiedRun:
    return CopiedRun(run_id, CopyOutcome.REFUSED, name, total, written, problem)
