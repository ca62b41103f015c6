"""``wfctl ui``: a local, read-only web inspector over any store wfctl reads."""

from __future__ import annotations

import sys
from typing import Annotated

import typer

from ._app import DebugOption, StoreOption, app, locate_store_option

__all__ = ["ui"]


@app.command()
def ui(
    host: Annotated[
        str,
        typer.Option(
            "--host",
            help="The address to serve on. Anything but the loopback address exposes the store "
            "to whoever can reach it and holds the URL.",
        ),
    ] = "127.0.0.1",
    port: Annotated[
        int,
        typer.Option("--port", min=0, max=65535, help="The port to serve on (0: a free one)."),
    ] = 8765,
    open_browser: Annotated[
        bool, typer.Option("--open", help="Open the URL in a web browser.")
    ] = False,
    store: StoreOption = None,
    debug: DebugOption = False,
) -> None:
    """Serve a read-only web inspector over the store until Ctrl-C.

    Pages: the runs (filters, order, pages; running runs followed), a run (its records as a
    timeline with values folded, its lineage drawn with the verify-lineage verdict, the
    commands that would resume, replay or export it), a replay beside its source run, and
    what each run takes. Nothing on a page changes the store. Works on every store kind wfctl
    reads. The first line on stdout is the URL to open: it holds an access token, and a
    request without it is refused. Needs the ui extra (pip install 'wfctl[ui]'); without it,
    exit 2. Ctrl-C stops it, exit 0.

    \b
    Example:
      wfctl ui --port 0 --open --store postgresql://db.internal/wfctl
    """
    from wfctl._ui import serve
    from wfctl._ui._address import is_loopback

    location = locate_store_option(store)
    if not is_loopback(host):
        print(
            f"wfctl: warning: serving on {host}, not the loopback address: the store is exposed "
            "to anyone who can reach this port and holds the URL",
            file=sys.stderr,
        )

    def ready(url: str) -> None:
        print(url, flush=True)
        if open_browser:
            import webbrowser

            webbrowser.open(url)

    serve(str(location.target), host=host, port=port, on_ready=ready)
