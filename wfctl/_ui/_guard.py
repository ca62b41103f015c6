"""The access token and the read-only rule, in front of every page and file the app serves.

The URL ``wfctl ui`` prints holds a random token (``?token=...``). A request carrying it is
answered with a redirect to the same page without it and a cookie holding it (HttpOnly,
SameSite=Strict, named for the port: two inspectors on one host keep their own); later
requests carry the cookie. A request with neither is refused (403): another local user cannot
read someone's store by guessing a port. Every method but GET and HEAD is refused (405): no
request changes a store. Every answer forbids inline scripts (Content-Security-Policy) and
sends no referrer (the token never leaves in a Referer header).
"""

from __future__ import annotations

import secrets
from collections.abc import Awaitable, Callable, MutableMapping
from http.cookies import SimpleCookie
from typing import Any, Final
from urllib.parse import parse_qsl, quote, urlencode

__all__ = ["SECURITY_HEADERS", "TokenGuard", "cookie_name", "new_token"]

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
App = Callable[[Scope, Receive, Send], Awaitable[None]]

#: Sent with every answer.
SECURITY_HEADERS: Final = (
    (
        b"content-security-policy",
        b"default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
        b"connect-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'",
    ),
    (b"referrer-policy", b"no-referrer"),
    (b"x-content-type-options", b"nosniff"),
    (b"cache-control", b"no-store"),
)
#: What a path keeps unquoted in a Location header: its own percent escapes and RFC 3986's
#: path characters.
_PATH_SAFE: Final = "/%:@!$&'()*+,;=-._~"
_REFUSED: Final = b"refused: open the URL wfctl ui printed (it holds the access token)\n"


def new_token() -> str:
    """Return a new access token (32 random bytes, URL-safe)."""
    return secrets.token_urlsafe(32)


def cookie_name(port: int) -> str:
    """Return the name of the cookie that holds the token of the inspector on ``port``."""
    return f"wfctl-ui-{port}"


class TokenGuard:
    """An ASGI middleware: only requests that hold the token reach ``app``, and only to read."""

    def __init__(self, app: App, token: str) -> None:
        self._app = app
        self._token = token

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self._app(scope, receive, send)
            return
        port = int((scope.get("server") or ("", 0))[1] or 0)
        query = parse_qsl(scope.get("query_string", b"").decode("latin-1"), keep_blank_values=True)
        given = dict(query).get("token")
        if scope["method"] not in ("GET", "HEAD"):
            await _plain(send, 405, b"refused: wfctl ui only reads\n", [(b"allow", b"GET, HEAD")])
        elif given is not None and _same(given, self._token):
            rest = urlencode([(key, value) for key, value in query if key != "token"])
            where = _path_as_sent(scope) + (f"?{rest}" if rest else "")
            cookie = (
                f"{cookie_name(port)}={self._token}; HttpOnly; SameSite=Strict; Path=/"
            ).encode()
            await _plain(send, 303, b"", [(b"location", where.encode()), (b"set-cookie", cookie)])
        elif self._held(scope, port):
            await self._app(scope, receive, _secured(send))
        else:
            await _plain(send, 403, _REFUSED)

    def _held(self, scope: Scope, port: int) -> bool:
        cookies = SimpleCookie()
        for name, value in scope.get("headers", ()):
            if name == b"cookie":
                try:
                    cookies.load(value.decode("latin-1"))
                except Exception:  # a malformed cookie header holds no token
                    continue
        held = cookies.get(cookie_name(port))
        return held is not None and _same(held.value, self._token)


def _same(given: str, token: str) -> bool:
    """Whether ``given`` is the token, in constant time (as bytes: ``compare_digest`` refuses a
    str holding a character beyond ASCII, which a request may send)."""
    return secrets.compare_digest(given.encode("utf-8", "surrogatepass"), token.encode())


def _path_as_sent(scope: Scope) -> str:
    """The request's path still percent-encoded, as it came (an encoded CR or LF stays
    ``%0D%0A``: the redirect's Location header holds no character the path was not sent as)."""
    raw = scope.get("raw_path")
    path = raw.decode("latin-1") if raw else scope.get("root_path", "") + scope["path"]
    return quote(path, safe=_PATH_SAFE)


def _secured(send: Send) -> Send:
    async def with_headers(message: Message) -> None:
        if message["type"] == "http.response.start":
            message["headers"] = [*message.get("headers", []), *SECURITY_HEADERS]
        await send(message)

    return with_headers


async def _plain(
    send: Send, status: int, body: bytes, headers: list[tuple[bytes, bytes]] | None = None
) -> None:
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [
                (b"content-type", b"text/plain; charset=utf-8"),
                (b"content-length", str(len(body)).encode()),
                *(headers or []),
                *SECURITY_HEADERS,
            ],
        }
    )
    await send({"type": "http.response.body", "body": body})
