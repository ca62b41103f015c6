"""The runs page as data: the port's listing filtered, ordered and cut into pages.

The listing is read whole through :meth:`Source.runs` and kept (:class:`RunIndex`), so a
page of a 100,000-run store is a filter and a sort in memory, not a read of the store. The
kept listing is read again when it is older than five times what the last read took (at least
:data:`FRESH_SECONDS`): a small store's page shows running runs as they move, a big one is not
read over and over.
"""

from __future__ import annotations

import fnmatch
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Final

from wfctl._inspect._query import parse_time, summary_time
from wfctl._sources._protocol import RunInfo

__all__ = ["FRESH_SECONDS", "PAGE_SIZE", "SORTS", "RunFilter", "RunIndex", "RunsPage", "runs_page"]

#: Runs on one page.
PAGE_SIZE: Final = 50
#: The youngest a kept listing is read again at.
FRESH_SECONDS: Final = 2.0

_OLDEST: Final = ""


def _created(run: RunInfo) -> str:
    return run.created_at


#: The orders a page may ask for: the key, and whether it is newest (largest) first.
SORTS: Final[dict[str, tuple[Callable[[RunInfo], object], bool]]] = {
    "created": (_created, True),
    "updated": (lambda run: run.updated_at, True),
    "workflow": (lambda run: (run.workflow, run.run_id), False),
    "status": (lambda run: (run.status, run.run_id), False),
    "run": (lambda run: run.run_id, False),
    "records": (lambda run: run.record_count, True),
    "size": (lambda run: run.size_bytes or 0, True),
}


class RunIndex:
    """The store's runs as the port lists them, read again when the kept listing is stale."""

    def __init__(self, read: Callable[[], Sequence[RunInfo]]) -> None:
        self._read = read
        self._runs: Sequence[RunInfo] = ()
        self._read_at = -1e18
        self._took = 0.0

    def runs(self) -> Sequence[RunInfo]:
        """Return the listing, read again if it is older than its freshness allows."""
        now = time.monotonic()
        if now - self._read_at > max(FRESH_SECONDS, 5 * self._took):
            self._runs = tuple(self._read())
            self._took = time.monotonic() - now
            self._read_at = time.monotonic()
        return self._runs


@dataclass(frozen=True, slots=True)
class RunFilter:
    """What the runs page was asked to show: each field empty for no filter.

    ``since``/``until`` are ages (``2h``) or ISO 8601 times, as ``wfctl runs`` reads them;
    ``workflow`` a glob; ``text`` a part of the run id (any case).
    """

    status: str = ""
    workflow: str = ""
    since: str = ""
    until: str = ""
    text: str = ""
    sort: str = "created"
    reverse: bool = False
    page: int = 0


@dataclass(frozen=True, slots=True)
class RunsPage:
    """One page of the runs a filter selects: ``total`` of them match, ``runs`` are shown."""

    runs: tuple[RunInfo, ...]
    total: int
    page: int
    pages: int
    statuses: tuple[str, ...]


def runs_page(listing: Sequence[RunInfo], wanted: RunFilter) -> RunsPage:
    """Return the page of ``listing`` that ``wanted`` selects.

    Raises:
        WfctlError: ``since`` or ``until`` is neither an age nor an ISO 8601 time.
    """
    since = parse_time(wanted.since) if wanted.since else None
    until = parse_time(wanted.until) if wanted.until else None
    text = wanted.text.lower()
    selected = [
        run
        for run in listing
        if (not wanted.status or run.status == wanted.status)
        and (not wanted.workflow or fnmatch.fnmatchcase(run.workflow, wanted.workflow))
        and (not text or text in run.run_id.lower())
        and _within(run, since, until)
    ]
    key, newest_first = SORTS.get(wanted.sort, SORTS["created"])
    selected.sort(key=key, reverse=newest_first != wanted.reverse)  # type: ignore[arg-type]
    pages = max(1, -(-len(selected) // PAGE_SIZE))
    page = min(max(wanted.page, 0), pages - 1)
    shown = tuple(selected[page * PAGE_SIZE : (page + 1) * PAGE_SIZE])
    statuses = tuple(sorted({run.status for run in listing}))
    return RunsPage(shown, len(selected), page, pages, statuses)


def _within(run: RunInfo, since: datetime | None, until: datetime | None) -> bool:
    if since is None and until is None:
        return True
    created = summary_time(run.created_at or _OLDEST)
    if created is None:
        return False
    return (since is None or created >= since) and (until is None or created <= until)
