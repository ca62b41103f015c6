"""The runs page as data: the port's listing filtered, ordered and cut into pages.

The listing is read whole through :meth:`Source.runs` and kept (:class:`RunIndex`), so a
page of a 100,000-run store is a filter and a sort in memory, not a read of the store. The
kept listing is read again when it is older than five times what the last read took (at least
:data:`FRESH_SECONDS`): a small store's page shows running runs as they move, a big one is not
read over and over.

Reading 100,000 runs whole takes seconds (each run is verified: 6 to 13 s here). Until the
first read ends, in a store of at least :data:`QUICK_FROM_RUNS` runs, a source that names its runs cheaply (``run_names`` and ``run_info``, as wfctl's stores
do) answers the plain first pages at once (:func:`quick_page`): the ids in reverse order (a
wfctl id starts with the second it was made in, so the newest come first), only the page's
runs read, and the page says so.
"""

from __future__ import annotations

import concurrent.futures
import fnmatch
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Final

from wfctl._errors import WfctlError
from wfctl._inspect._query import parse_time, summary_time
from wfctl._sources._protocol import RunInfo

__all__ = [
    "FRESH_SECONDS",
    "PAGE_SIZE",
    "QUICK_FROM_RUNS",
    "SORTS",
    "RunFilter",
    "RunIndex",
    "RunsPage",
    "quick_page",
    "runs_page",
]

#: Runs on one page.
PAGE_SIZE: Final = 50
#: The youngest a kept listing is read again at.
FRESH_SECONDS: Final = 2.0
#: From how many runs on a page is answered from the ids alone while the listing is read.
QUICK_FROM_RUNS: Final = 2000

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
    """The store's runs as the port lists them, read on a thread of their own.

    ``read`` opens its own source and lists every run (a source is not shared between
    threads), on a daemon thread: a read under way does not hold the process up when it
    stops. :meth:`kept` never waits: it returns the listing read last (None before the
    first read ends) and starts a new read when that one is stale; :meth:`whole` waits for a
    listing no staler than that.
    """

    def __init__(self, read: Callable[[], Sequence[RunInfo]]) -> None:
        self._read = read
        self._lock = threading.Lock()
        self._runs: Sequence[RunInfo] | None = None
        self._read_at = 0.0
        self._took = 0.0
        self._reading: concurrent.futures.Future[Sequence[RunInfo]] | None = None

    def _stale(self) -> bool:
        return time.monotonic() - self._read_at > max(FRESH_SECONDS, 5 * self._took)

    def _start(self) -> concurrent.futures.Future[Sequence[RunInfo]]:
        with self._lock:
            if self._reading is None:
                self._reading = concurrent.futures.Future()
                # a daemon: Ctrl-C does not wait for a read of 100,000 runs to end
                threading.Thread(
                    target=self._load, args=(self._reading,), name="wfctl-list", daemon=True
                ).start()
            return self._reading

    def _load(self, reading: concurrent.futures.Future[Sequence[RunInfo]]) -> None:
        start = time.monotonic()
        try:
            runs = tuple(self._read())
        except BaseException as error:  # handed to whoever waits for this read
            with self._lock:
                self._reading = None
            reading.set_exception(error)
            return
        with self._lock:
            self._runs, self._took, self._read_at = runs, time.monotonic() - start, time.monotonic()
            self._reading = None
        reading.set_result(runs)

    def kept(self) -> Sequence[RunInfo] | None:
        """Return the listing read last, or None; start a read if it is stale or missing."""
        if self._runs is None or self._stale():
            self._start()
        return self._runs

    def whole(self, timeout: float | None = None) -> Sequence[RunInfo]:
        """Return a listing no staler than the freshness allows, waiting for a read.

        Raises:
            TimeoutError: the read took more than ``timeout`` seconds (it goes on).
        """
        runs = self._runs
        if runs is not None and not self._stale():
            return runs
        return self._start().result(timeout)


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
    #: Shown by id while the whole listing is read (:func:`quick_page`).
    by_id: bool = False


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


def quick_page(source: object, wanted: RunFilter, from_runs: int = 0) -> RunsPage | None:
    """Return the page ``wanted`` asks for from the run ids alone, newest ids first, reading
    only that page's runs; None when the source cannot name its runs cheaply, the page asks
    for more than ids give (a filter but the id text, another order) or the store holds fewer
    than ``from_runs`` runs (its listing is read soon enough)."""
    names = getattr(source, "run_names", None)
    info = getattr(source, "run_info", None)
    plain = RunFilter(text=wanted.text, page=wanted.page) == wanted
    if names is None or info is None or not plain:
        return None
    named: list[str] = names()
    if len(named) < from_runs:
        return None
    text = wanted.text.lower()
    ids = sorted((name for name in named if text in name.lower()), reverse=True)
    pages = max(1, -(-len(ids) // PAGE_SIZE))
    page = min(max(wanted.page, 0), pages - 1)
    shown = []
    for run_id in ids[page * PAGE_SIZE : (page + 1) * PAGE_SIZE]:
        try:
            shown.append(info(run_id))
        except WfctlError:  # removed since it was named: the page shows the others
            continue
    return RunsPage(tuple(shown), len(ids), page, pages, (), by_id=True)


def _within(run: RunInfo, since: datetime | None, until: datetime | None) -> bool:
    if since is None and until is None:
        return True
    created = summary_time(run.created_at or _OLDEST)
    if created is None:
        return False
    return (since is None or created >= since) and (until is None or created <= until)
