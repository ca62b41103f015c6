"""Serving the inspector: the port bound first (so ``--port 0`` can say which it got), the
URL with its token handed to the caller, then uvicorn until Ctrl-C or SIGTERM.

uvicorn stops on SIGINT or SIGTERM (open requests finished, then the source is closed) and
raises the signal again when it returns; that second signal is the end asked for, not an
error, and so is one that comes after the URL is printed but before uvicorn has taken the
signal: both end in a clean return (exit 0). Around uvicorn's own handlers, wfctl's handle
both signals by asking the server to exit, never by raising: an exception raised by a signal
handler is lost when it lands in a weak reference's callback ("Exception ignored in ..."),
and the server then went on serving after a Ctrl-C.
"""

from __future__ import annotations

import signal
import socket
from collections.abc import Callable
from types import FrameType

from wfctl._errors import WfctlError
from wfctl._sources._open import open_source

from ._address import url_of
from ._app import build_app
from ._guard import new_token

__all__ = ["serve_store"]

#: How long a stop waits for open requests: longer than a page waits for the listing.
_GRACE_SECONDS = 5


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
                uvicorn.Config(
                    app,
                    log_level="warning",
                    access_log=False,
                    lifespan="off",
                    timeout_graceful_shutdown=_GRACE_SECONDS,
                )
            )
            # Ctrl-C or SIGTERM from here on is the end asked for, before uvicorn takes the
            # signal too, and when it raises it again after its shutdown

            def stop(signum: int, frame: FrameType | None) -> None:
                server.should_exit = True  # uvicorn's loop looks at it: it then stops at once

            previous = {number: signal.signal(number, stop) for number in _STOPS}
            try:
                on_ready(url_of(host, sock.getsockname()[1], token))
                server.run(sockets=[sock])
            finally:
                for number, handler in previous.items():
                    signal.signal(number, handler)
        finally:
            close()
            sock.close()


#: The signals that stop the server.
_STOPS = (signal.SIGINT, signal.SIGTERM)
