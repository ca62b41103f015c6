"""``wfctl runs`` as data: the runs of a store a query shows (``RunsReport``)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from wfctl._config import StoreRef
from wfctl._redact import shown
from wfctl._storage import FileCheckpointStorage, RunSummary
from wfctl._storage._open import on_store, open_storage

from ._documents import document, summary_json
from ._query import RunQuery

__all__ = ["RunsReport", "list_runs"]


@dataclass(frozen=True, slots=True)
class RunsReport:
    """The runs of a store a query selected, in its order, and how many there were."""

    store: StoreRef
    runs: tuple[RunSummary, ...]
    #: How many runs matched the query's filters (``runs`` holds at most ``limit`` of them).
    matching_count: int
    #: How many runs the store holds.
    total_count: int
    query: RunQuery

    def to_json(self) -> dict[str, Any]:
        """Return the ``wfctl/runs@1`` document (see docs/json.md)."""
        return document(
            "runs",
            {
                "store": shown(self.store),
                "run_count": len(self.runs),
                "matching_run_count": self.matching_count,
                "total_run_count": self.total_count,
                "runs": [summary_json(r) for r in self.runs],
            },
        )


def list_runs(
    store: StoreRef,
    query: RunQuery | None = None,
    *,
    workflow_name: str | None = None,
    status: str | None = None,
    must_exist: bool = True,
) -> RunsReport:
    """List the store's runs that ``query`` selects (every run, newest first, by default).

    Every run's records are verified (checksums and chain links, see
    :func:`~wfctl._storage._journal.check_journal`). A run that fails is listed with status
    ``corrupt`` and its problem, one that cannot be read as ``unreadable``; neither is raised.
    ``workflow_name`` and ``status`` (exact) are kept for callers that predate the query.

    Raises:
        StoreLocationError: the store is missing (with ``must_exist``) or is not one.
    """
    storage = open_storage(store, must_exist=must_exist)
    if isinstance(storage, FileCheckpointStorage):
        runs = storage.run_summaries(workflow_name=workflow_name)  # no event loop: start-up
    else:
        runs = on_store(
            store, lambda s: s.list_runs(workflow_name=workflow_name), must_exist=must_exist
        )
    if status is not None:
        runs = [r for r in runs if r.status == status]
    query = query or RunQuery()
    shown, matching = query.apply(runs)
    return RunsReport(store, tuple(shown), matching, len(runs), query)
