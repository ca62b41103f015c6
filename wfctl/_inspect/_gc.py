"""``wfctl gc``: remove whole finished runs that nothing needs any more.

Only whole runs are removed, never part of a chain, and only finished ones: ``completed`` and
``cancelled`` runs, and ``failed`` ones when asked. A paused, running, interrupted, corrupt or unreadable run is
never removed, and neither is a run that is the origin of a run that stays (a restored run reads
its cache from its origin's chain, transitively). Every run is verified before it is judged
finished: the listing checks every record's checksum and chain link (``list_runs``), so a run
with an edited record anywhere is ``corrupt`` and kept, whatever its last record says.

Which finished runs go: those last updated longer ago than ``older_than``, except the ``keep``
newest of each workflow. With neither given, ``older_than`` is 7 days.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any, Final

from wfctl._config import StoreRef
from wfctl._errors import WfctlError
from wfctl._storage import RunSummary
from wfctl._storage._open import on_store
from wfctl._storage._protocol import RunStore

from ._documents import document, utc_time
from ._query import RunQuery, parse_age, summary_time

__all__ = ["DEFAULT_AGE", "GcItem", "GcReport", "collect_garbage", "parse_age"]

DEFAULT_AGE: Final = "7d"
#: Why a run that is not finished is kept, by status (other statuses are their own reason).
_KEPT_BECAUSE: Final = {
    "failed": "failed (use --include-failed)",
    "corrupt": "corrupt (failed verification; see wfctl verify-lineage)",
    "unreadable": "unreadable (its journal cannot be read)",
}


@dataclass(frozen=True, slots=True)
class GcItem:
    """A run gc removed (or would remove), or kept and why."""

    run_id: str
    workflow_name: str
    status: str
    updated: str
    reason: str

    def to_json(self) -> dict[str, Any]:
        """Return the item as an entry of the gc document's ``removed`` or ``kept``."""
        return {
            "run_id": self.run_id,
            "workflow": self.workflow_name,
            "status": self.status,
            "updated_at": utc_time(self.updated),
            "reason": self.reason,
        }


@dataclass(frozen=True, slots=True)
class GcReport:
    """What ``gc`` removed (or, with ``dry_run``, would remove) and what it kept."""

    dry_run: bool
    older_than: str | None
    keep: int | None
    removed: tuple[GcItem, ...]
    kept: tuple[GcItem, ...]
    #: How many runs the filters selected (``kept`` and ``removed`` are among them; a run
    #: another process removed between this gc's listing and its removal is in neither).
    matching_count: int = 0
    #: How many runs the store held.
    total_count: int = 0

    def to_json(self) -> dict[str, Any]:
        """Return the ``wfctl/gc@1`` document (see docs/json.md)."""
        return document(
            "gc",
            {
                "dry_run": self.dry_run,
                "older_than": self.older_than,
                "keep": self.keep,
                "removed_count": len(self.removed),
                "kept_count": len(self.kept),
                "matching_run_count": self.matching_count,
                "total_run_count": self.total_count,
                "removed": [i.to_json() for i in self.removed],
                "kept": [i.to_json() for i in self.kept],
            },
        )


def _select(
    runs: list[RunSummary],
    age: timedelta | None,
    keep: int | None,
    include_failed: bool,
    now: datetime,
    query: RunQuery,
) -> tuple[dict[str, str], dict[str, str]]:
    """Return (removable run id -> reason, kept run id -> reason), both among the runs ``query``
    matches. ``keep`` ranks every finished run, matching or not, and a run that stays protects
    its origin whether it matches or not: a filter only narrows what may go."""
    finished = (
        ("completed", "cancelled", "failed") if include_failed else ("completed", "cancelled")
    )
    kept: dict[str, str] = {}
    chosen: dict[str, str] = {}
    newest: dict[str, int] = {}
    for summary in sorted(runs, key=lambda r: (r.updated, r.run_id), reverse=True):
        rid, moment = summary.run_id, summary_time(summary.updated)
        matches = query.matches(summary)
        if summary.status not in finished:
            if matches:
                kept[rid] = _KEPT_BECAUSE.get(summary.status, summary.status)
            continue
        rank = newest.get(summary.workflow_name, 0)
        newest[summary.workflow_name] = rank + 1
        if not matches:
            continue
        if keep is not None and rank < keep:
            kept[rid] = f"among the {keep} newest of workflow {summary.workflow_name}"
        elif moment is None:
            kept[rid] = "unreadable timestamp"
        elif age is not None and now - moment < age:
            kept[rid] = "newer than the age limit"
        else:
            chosen[rid] = "finished" if age is None else "finished and older than the age limit"
    # Never remove the origin of a run that stays; repeat, as keeping one may protect its origin.
    origins = {r.run_id: r.origin_run_id for r in runs}
    changed = True
    while changed:
        changed = False
        for rid, origin in origins.items():
            if rid not in chosen and origin in chosen:
                del chosen[origin]
                kept[origin] = f"origin of run {rid}"
                changed = True
    return chosen, kept


def collect_garbage(
    store: StoreRef,
    *,
    older_than: str | None = None,
    keep: int | None = None,
    include_failed: bool = False,
    dry_run: bool = False,
    now: datetime | None = None,
    must_exist: bool = True,
    query: RunQuery | None = None,
    only: Collection[str] | None = None,
) -> GcReport:
    """Remove (or with ``dry_run`` list) whole finished runs nothing needs any more.

    Args:
        older_than: remove only runs last updated at least this long ago (``7d``); defaults
            to 7 days when ``keep`` is not given either.
        keep: keep this many of the newest finished runs of each workflow.
        include_failed: failed runs count as finished too.
        now: the current time (for tests).
        must_exist: refuse a store that does not exist (else it has nothing to remove).
        query: consider only the runs it matches (its sort and limit are not used); runs
            outside it are neither removed nor reported.
        only: remove none but these runs (what a dry run listed and a person confirmed):
            one that no longer qualifies is kept, one that qualifies now but was not listed
            is kept with the reason "not in the list confirmed".

    Raises:
        WfctlError: ``older_than`` or ``keep`` is invalid.
        StoreLocationError: the store is missing (with ``must_exist``) or is not one.
    """
    if keep is not None and keep < 0:
        raise WfctlError(f"--keep must be 0 or more, not {keep}")
    if older_than is None and keep is None:
        older_than = DEFAULT_AGE
    try:
        age = parse_age(older_than) if older_than is not None else None
    except WfctlError as exc:
        raise WfctlError(f"--older-than: {exc}") from None
    query = query or RunQuery()
    chosen: dict[str, str] = {}
    kept: dict[str, str] = {}

    async def collect(storage: RunStore) -> list[RunSummary]:
        runs = await storage.list_runs()
        picked, held = _select(runs, age, keep, include_failed, now or datetime.now(UTC), query)
        if only is not None:
            for run_id in [r for r in picked if r not in only]:
                held[run_id] = "not in the list confirmed"
                del picked[run_id]
        chosen.update(picked)
        kept.update(held)
        if not dry_run:
            gone, locked = await storage.delete_runs([r.run_id for r in runs if r.run_id in chosen])
            for error in locked:
                del chosen[error.run_id]
                kept[error.run_id] = "locked by a running process"
            for run_id in set(chosen) - set(gone):
                del chosen[run_id]  # removed meanwhile by another process: not by this gc
        return runs

    runs = on_store(store, collect, must_exist=must_exist)
    doomed = [r for r in runs if r.run_id in chosen]
    removed = [_item(r, chosen[r.run_id]) for r in doomed if r.run_id in chosen]
    return GcReport(
        dry_run=dry_run,
        older_than=older_than,
        keep=keep,
        removed=tuple(removed),
        kept=tuple(_item(r, kept[r.run_id]) for r in runs if r.run_id in kept),
        matching_count=sum(1 for r in runs if query.matches(r)),
        total_count=len(runs),
    )


def _item(summary: RunSummary, reason: str) -> GcItem:
    return GcItem(summary.run_id, summary.workflow_name, summary.status, summary.updated, reason)
