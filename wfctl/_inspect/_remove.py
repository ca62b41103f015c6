"""``wfctl rm``: delete whole runs, refusing what would break another run unless forced.

The runs go through the same batch removal as ``gc`` (``delete_runs``: each under its lock, one
rename out of the store, then the deletions, with two directory syncs in all), so a kill part
way leaves each run whole or gone.
Refused, and nothing removed, when any named run:

- does not exist (``RunNotFoundError``);
- is running (``RunLockedError`` naming the holder), even with ``force``: its lock is what
  keeps a writer's journal from being deleted under it; cancel it first (``wfctl cancel``,
  which the message names), or wait for it to end;
- is the origin of a run that stays (``RunStateError``): that run's cache and lineage read its
  origin's chain. ``force`` removes it anyway, and the report names every run whose origin
  now dangles (``verify-lineage`` reports each; restoring from one fails where it needs the
  origin's history).

Removing a run together with every run restored from it breaks nothing and needs no force.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from wfctl._config import StoreRef
from wfctl._errors import RunLockedError, RunNotFoundError, RunStateError, WfctlError
from wfctl._records._checkpoint import RunStatus, validate_run_id
from wfctl._storage import RunSummary
from wfctl._storage._open import on_store
from wfctl._storage._protocol import RunStore

from ._documents import document, summary_json

__all__ = ["DanglingOrigin", "RemoveReport", "remove_runs"]


@dataclass(frozen=True, slots=True)
class DanglingOrigin:
    """A run that stays whose origin checkpoint was in a removed run."""

    run_id: str
    origin_run_id: str
    origin_checkpoint_id: str

    def to_json(self) -> dict[str, Any]:
        """Return the run and its origin as an item of ``rm``'s ``dangling_origins``."""
        return {
            "run_id": self.run_id,
            "origin_run_id": self.origin_run_id,
            "origin_checkpoint_id": self.origin_checkpoint_id or None,
        }


@dataclass(frozen=True, slots=True)
class RemoveReport:
    """The runs ``rm`` removed, and the runs whose origin it left dangling (only when forced)."""

    removed: tuple[RunSummary, ...]
    dangling: tuple[DanglingOrigin, ...]

    def to_json(self) -> dict[str, Any]:
        """Return the ``wfctl/rm@1`` document (see docs/json.md)."""
        return document(
            "rm",
            {
                "run_count": len(self.removed),
                "runs": [summary_json(r) for r in self.removed],
                "dangling_origins": [d.to_json() for d in self.dangling],
            },
        )


def remove_runs(
    store: StoreRef,
    run_ids: Sequence[str],
    *,
    force: bool = False,
    must_exist: bool = True,
    check_only: bool = False,
) -> RemoveReport:
    """Delete the runs ``run_ids`` whole; all of them, or (when one is refused) none.

    Args:
        force: remove a run even when a run that stays names it as its origin.
        check_only: refuse as a removal would, but delete nothing; the report names the runs
            that would go (what a person is asked about before several runs are deleted).

    Raises:
        StoreLocationError: the store is missing (with ``must_exist``) or is not one.
        InvalidIdError, RunNotFoundError: a run id is malformed or names no run.
        RunLockedError: a named run is running.
        RunStateError: a named run is the origin of a run that stays (without ``force``).
        WfctlError: a removal failed part way (the message names the runs already removed).
    """
    doomed = list(dict.fromkeys(validate_run_id(r) for r in run_ids))
    return on_store(
        store, lambda storage: _remove(storage, doomed, force, check_only), must_exist=must_exist
    )


async def _remove(
    storage: RunStore, doomed: list[str], force: bool, check_only: bool = False
) -> RemoveReport:
    runs = await storage.list_runs()
    by_id = {r.run_id: r for r in runs}
    for rid in doomed:
        if rid not in by_id:
            raise RunNotFoundError(rid)
        if by_id[rid].status == RunStatus.RUNNING:
            try:
                await (await storage.lease_run(rid)).release()  # raises, naming the holder
            except RunLockedError as exc:
                raise _running(exc) from None
    gone = set(doomed)
    dangling = tuple(
        DanglingOrigin(r.run_id, r.origin_run_id, r.origin_checkpoint_id or "")
        for r in runs
        if r.run_id not in gone and r.origin_run_id is not None and r.origin_run_id in gone
    )
    if dangling and not force:
        first = dangling[0]
        also = f" and {len(dangling) - 1} more" if len(dangling) > 1 else ""
        raise RunStateError(
            first.origin_run_id,
            f"is the origin of run {first.run_id!r} ({first.origin_checkpoint_id}){also}; "
            "removing it would leave that origin dangling (remove those runs too, or use "
            "--force)",
        )
    if check_only:
        return RemoveReport(tuple(by_id[rid] for rid in doomed), dangling)
    try:
        removed_ids, locked = await storage.delete_runs(doomed)
    except OSError as exc:  # part way: say which of the named runs are gone already
        left = {r.run_id for r in await storage.list_runs()}
        done = ", ".join(rid for rid in doomed if rid not in left) or "none"
        raise WfctlError(f"{exc} (removed before it: {done})") from exc
    removed = [by_id[rid] for rid in removed_ids]
    if locked:  # started since the check above: the others are gone, this one stays
        if not removed:
            raise _running(locked[0])
        done = ", ".join(r.run_id for r in removed)
        raise WfctlError(f"{_running(locked[0])} (removed before it: {done})") from locked[0]
    return RemoveReport(tuple(removed), dangling)


def _running(error: RunLockedError) -> RunLockedError:
    """``error``, saying what ``rm`` needs first: the run cancelled, or ended."""
    return error.with_remedy(f"cancel it first (wfctl cancel {error.run_id}), or let it end")
