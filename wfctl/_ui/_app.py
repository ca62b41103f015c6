"""The Starlette app: the runs, run, replay and sizes pages, and the files they use.

Every page is HTML rendered on the server by Jinja2 with autoescaping: whatever a store holds
(run ids, workflow names, values, error texts) reaches the page as text. The port is read on
one thread of its own (a source keeps its own event loop and is not shared between threads);
the pages wait for it without holding up the server. :class:`~._guard.TokenGuard` stands in
front of all of it.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import functools
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from typing import Any, Final, TypeVar
from urllib.parse import urlencode

from jinja2 import Environment, PackageLoader, select_autoescape
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import HTMLResponse, Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles

from wfctl._errors import WfctlError
from wfctl._inspect._query import summary_time
from wfctl._sources._open import open_source
from wfctl._sources._protocol import RunInfo, Source

from ._guard import App, TokenGuard
from ._listing import (
    QUICK_FROM_RUNS,
    SORTS,
    RunFilter,
    RunIndex,
    quick_page,
    runs_page,
)
from ._replay_view import replay_view
from ._run_view import run_view
from ._sizes import sizes_view

__all__ = ["LISTING_WAIT_SECONDS", "build_app"]

#: The longest a page waits for the listing before it says it is being read.
LISTING_WAIT_SECONDS: Final = 3.0

T = TypeVar("T")


def _ago(stamp: str, now: datetime) -> str:
    moment = summary_time(stamp) if stamp else None
    if moment is None:
        return ""
    seconds = int((now - moment).total_seconds())
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if abs(seconds) >= size:
            return f"{seconds // size}{unit} ago"
    return f"{seconds}s ago"


def _bytes(size: int | None) -> str:
    if size is None:
        return ""
    amount = float(size)
    for unit in ("B", "KiB", "MiB", "GiB"):
        if amount < 1024 or unit == "GiB":
            return f"{amount:.0f} {unit}" if unit == "B" else f"{amount:.1f} {unit}"
        amount /= 1024
    return f"{size} B"  # pragma: no cover - the loop returns


def _listing(location: str) -> tuple[RunInfo, ...]:
    """Every run of the store at ``location``, read through a source of its own."""
    with open_source(location) as source:
        return tuple(source.runs())


def _templates() -> Environment:
    env = Environment(
        loader=PackageLoader("wfctl._ui", "templates"),
        autoescape=select_autoescape(default=True, default_for_string=True),
    )
    env.filters["bytes"] = _bytes
    return env


class _Pages:
    """The pages over one source, read on one thread of their own."""

    def __init__(
        self, source: Source, read_listing: Callable[[], Sequence[RunInfo]], wait: float
    ) -> None:
        self._source = source
        self._reader = concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="wfctl-ui")
        self._index = RunIndex(read_listing)
        self._wait = wait
        self._env = _templates()

    async def _read(self, work: Callable[[], T]) -> T:
        """Run ``work`` on the source's thread."""
        return await asyncio.get_running_loop().run_in_executor(self._reader, work)

    async def _listing(self) -> Sequence[RunInfo] | None:
        """Wait for the listing, at most the app's wait (None: it is still being read).

        The wait is off the source's thread (it stays free for other pages), and short: a
        page that needs a long listing says it is being read and reloads itself, so no
        request stays open for long (a stop does not wait for one).
        """
        wait = functools.partial(self._index.whole, self._wait)
        try:
            return await asyncio.get_running_loop().run_in_executor(None, wait)
        except TimeoutError:
            return None

    def _page(self, name: str, status: int = 200, **values: Any) -> HTMLResponse:
        now = datetime.now(UTC)
        html = self._env.get_template(name).render(
            store=self._source.location,
            kind=self._source.kind,
            ago=functools.partial(_ago, now=now),
            **values,
        )
        return HTMLResponse(html, status_code=status)

    def _refusal(self, error: WfctlError, status: int = 404) -> HTMLResponse:
        return self._page("error.html", status=status, error=str(error))

    def _info(self, run_id: str) -> RunInfo | None:
        """The run as listed (read alone when the source can, the listing not waited for)."""
        runs = self._index.kept()
        one = getattr(self._source, "run_info", None)
        if runs is None and one is not None:
            try:
                info: RunInfo = one(run_id)
            except WfctlError:
                return None
            return info
        return next((run for run in runs or self._index.whole() if run.run_id == run_id), None)

    async def runs(self, request: Request) -> Response:
        args = request.query_params
        try:
            page_number = int(args.get("page", "0") or 0)
        except ValueError:
            page_number = 0
        wanted = RunFilter(
            status=args.get("status", ""),
            workflow=args.get("workflow", ""),
            since=args.get("since", ""),
            until=args.get("until", ""),
            text=args.get("q", ""),
            sort=args.get("sort", "created") if args.get("sort") in SORTS else "created",
            reverse=args.get("reverse") == "1",
            page=page_number,
        )

        try:
            runs = self._index.kept()
            quick = None
            if runs is None:
                quick = await self._read(lambda: quick_page(self._source, wanted, QUICK_FROM_RUNS))
                if quick is None:
                    runs = await self._listing()
            if quick is None and runs is None:
                return self._page("reading.html", what="the runs")
            page = quick or runs_page(runs or (), wanted)
        except WfctlError as error:
            return self._refusal(error, 400)
        kept = [(key, value) for key, value in args.multi_items() if key != "page"]

        def page_url(number: int) -> str:
            return "/?" + urlencode([*kept, ("page", str(number))])

        return self._page(
            "runs.html", page=page, wanted=wanted, sorts=list(SORTS), page_url=page_url
        )

    async def run(self, request: Request) -> Response:
        run_id = request.query_params.get("id", "")
        try:
            view = await self._read(lambda: run_view(self._source, run_id, self._info(run_id)))
        except WfctlError as error:
            return self._refusal(error)
        return self._page("run.html", view=view)

    async def replay(self, request: Request) -> Response:
        run_id = request.query_params.get("id", "")

        def read() -> Any:
            info = self._info(run_id)
            if info is None or not info.origin:
                raise WfctlError(f"run {run_id!r} is no replay: its root names no origin")
            return replay_view(self._source, run_id, info.origin)

        try:
            view = await self._read(read)
        except WfctlError as error:
            return self._refusal(error)
        return self._page("replay.html", view=view)

    async def sizes(self, request: Request) -> Response:
        try:
            runs = await self._listing()
            if runs is None:
                return self._page("reading.html", what="the sizes")
            view = await self._read(lambda: sizes_view(self._source, runs))
        except WfctlError as error:
            return self._refusal(error, 400)
        top = max([size.size_bytes for size in view.runs] + [1])
        return self._page("sizes.html", view=view, top=top)

    def close(self) -> None:
        self._reader.shutdown(wait=True)


def build_app(
    source: Source,
    location: str,
    token: str,
    *,
    read_listing: Callable[[], Sequence[RunInfo]] | None = None,
    listing_wait: float = LISTING_WAIT_SECONDS,
) -> tuple[App, Callable[[], None]]:
    """Return the inspector's ASGI app over ``source``, guarded by ``token``, and what closes it.

    The listing is read on its own thread by ``read_listing`` (by default: a source of its
    own, opened from ``location``); a page waits for it at most ``listing_wait`` seconds.
    """
    pages = _Pages(source, read_listing or functools.partial(_listing, location), listing_wait)
    static = StaticFiles(packages=[("wfctl._ui", "static")])
    app = Starlette(
        routes=[
            Route("/", pages.runs),
            Route("/run", pages.run),
            Route("/replay", pages.replay),
            Route("/sizes", pages.sizes),
            Mount("/static", app=static, name="static"),
        ]
    )
    return TokenGuard(app, token), pages.close
