"""Serving the inspector: the port bound first (so ``--port 0`` can say which it got), the
URL with its token handed to the caller, then uvicorn until Ctrl-C or SIGTERM.

uvicorn stops on the signal (open requests finished, the source closed) and raises it again
when it returns; that second KeyboardInterrupt is the end asked for, not an error, and so is
one that comes after the URL is printed but before uvicorn has taken the signal.
"""

from __future__ import annotations

import contextlib
import socket
from collections.abc import Callable

from wfctl._errors import WfctlError
from wfctl._sources._open import open_source

from ._address import url_of
from ._app import build_app
from ._guard import new_token

__all__ = ["serve_store"]


def _bound(host: str, port: int) -> socket.socket:
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    except socket.gaierror as exc:
        raise WfctlError(f"cannot serve on {host!r}: {exc.strerror}") from None
    family, kind, proto, _, address = infos[0]
    sock = socket.socket(family, kind, proto)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind(address)
    except OSError as exc:
        sock.close()
        raise WfctlError(f"cannot serve on {host}:{port}: {exc.strerror}") from None
    sock.listen(128)
    sock.set_inheritable(True)
    return sock


def serve_store(location: str, *, host: str, port: int, on_ready: Callable[[str], None]) -> None:
    """Open the store, bind ``host:port`` (0: a free port), call ``on_ready(url)``, serve."""
    import uvicorn

    token = new_token()
    with open_source(location) as source:
        app, close = build_app(source, location, token)
        sock = _bound(host, port)
        try:
            server = uvicorn.Server(
                uvicorn.Config(app, log_level="warning", access_log=False, lifespan="off")
            )
            # Ctrl-C from here on is the end asked for, before uvicorn takes the signal too
            with contextlib.suppress(KeyboardInterrupt):
                on_ready(url_of(host, sock.getsockname()[1], token))
                server.run(sockets=[sock])
        finally:
            close()
            sock.close()
