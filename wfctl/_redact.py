"""Store locations as shown: every password in a URL or connection string masked.

A PostgreSQL store is named by a URL that may carry a password, in the user part
(``postgresql://user:pw@host/db``) or as a query parameter (``?password=pw``), either
percent-encoded; a ``key=value`` connection string may carry one too (``password='a b'``).
Everything wfctl shows of a store (titles, ``--json``, hints, errors) goes through
:func:`redact`. The URL is split as libpq splits it (the user part ends at the first ``@``
before any ``/``), so what is masked is what libpq would send as the password. A URL whose
password cannot be told apart that way (a second ``@``, a ``?`` before the ``@``, an unclosed
``[``, a query parameter without ``=``) is :func:`malformed`: it is refused before libpq sees it, since libpq's own
message would quote it, and shown with everything before its last ``@`` masked.

Standard library only: the error path imports it.
"""

from __future__ import annotations

import os
import re
from urllib.parse import unquote

__all__ = ["MASK", "malformed", "passwords", "redact", "reveals", "shown"]

MASK = "***"

_SCHEME = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://")
_BAD_PERCENT = re.compile(r"%(?![0-9A-Fa-f]{2})|%00")
#: A ``password`` keyword of a ``key=value`` connection string (libpq allows spaces around =).
_CONNINFO_PASSWORD = re.compile(r"(?:^|\s)password\s*=\s*")


def redact(location: str) -> str:
    """Return ``location`` (a path, a URL or a connection string) with every password masked.

    A path is returned as it is, unless it reads as a connection string naming a password.
    """
    scheme = _SCHEME.match(location)
    if scheme is None:
        return _redact_conninfo(location)
    parts = _split(location, scheme.end())
    if isinstance(parts, str):  # malformed: mask all that could be a password
        rest = location[scheme.end() :]
        at = rest.rfind("@")
        tail = rest[at + 1 :]
        query = tail.find("?")
        if query >= 0:
            tail = tail[:query] + "?" + MASK
        return location[: scheme.end()] + (MASK + "@" if at >= 0 else "") + tail
    user, password, hosts, query_params = parts
    shown = location[: scheme.end()]
    if user is not None:
        shown += user + (":" + MASK if password is not None else "") + "@"
    shown += hosts
    if query_params is not None:
        shown += "?" + "&".join(
            f"{key}={MASK}" if _is_password(key) else f"{key}={value}"
            for key, value in query_params
        )
    return shown


def shown(store: str | os.PathLike[str]) -> str:
    """Return a store (a path, or a URL as text) as wfctl shows it, passwords masked."""
    return redact(os.fspath(store))


def malformed(location: str) -> str | None:
    """Return why the URL ``location``'s password cannot be told apart, or None if it can."""
    scheme = _SCHEME.match(location)
    if scheme is None:
        return None
    parts = _split(location, scheme.end())
    return parts if isinstance(parts, str) else None


def passwords(location: str) -> tuple[str, ...]:
    """Return each password in ``location`` as written and as decoded (none for a path).

    A malformed URL's whole text after its scheme counts as one (it is never shown).
    """
    scheme = _SCHEME.match(location)
    if scheme is None:
        found = [value for key, value in _conninfo_pairs(location) if key == "password"]
    else:
        parts = _split(location, scheme.end())
        if isinstance(parts, str):
            found = [location[scheme.end() :]]
        else:
            found = [] if parts[1] is None else [parts[1]]
            found += [value for key, value in parts[3] or () if _is_password(key)]
    secrets: list[str] = []
    for value in found:
        for form in (value, unquote(value)):
            if form and form not in secrets:
                secrets.append(form)
    return tuple(secrets)


def reveals(text: str, location: str) -> bool:
    """Whether ``text`` (a library's message, say) holds a password of ``location``."""
    return any(secret in text for secret in passwords(location))


def _is_password(key: str) -> bool:
    return unquote(key).lower() == "password"


def _split(
    url: str, start: int
) -> tuple[str | None, str | None, str, list[tuple[str, str]] | None] | str:
    """Split a URL as libpq does: ``(user, password, hosts and path, query)``, or why not."""
    rest = url[start:]
    # libpq's look-ahead: the user part ends at the first "@" met before any "/".
    end = next((i for i, c in enumerate(rest) if c in "@/"), len(rest))
    user = password = None
    if end < len(rest) and rest[end] == "@":
        if "?" in rest[:end]:
            return "its user or password has a '?' (write it as %3F)"
        user, sep, secret = rest[:end].partition(":")
        password = secret if sep else None
        rest = rest[end + 1 :]
    where, sep, query = rest.partition("?")
    if "@" in where:
        return "it has an '@' besides the one ending its user and password (write it as %40)"
    hosts = where.split("/", 1)[0]
    for host in hosts.split(","):
        if host.startswith("[") and "]" not in host:
            return "an IPv6 host's '[' has no ']'"
    for piece in (user or "", password or "", where):
        if _BAD_PERCENT.search(piece):
            return "it has a '%' that is not a percent-encoded byte"
    params: list[tuple[str, str]] | None = None
    if sep:
        params = []
        for param in query.split("&") if query else ():
            key, eq, value = param.partition("=")
            if not eq or "=" in value or not key or _BAD_PERCENT.search(param):
                return "a query parameter is not one key=value"
            params.append((key, value))
    return user, password, where, params


def _conninfo_pairs(text: str) -> list[tuple[str, str]]:
    """The ``key=value`` pairs of a libpq connection string, as far as they parse.

    A value runs to the next space, or is quoted in ``'...'``; a backslash escapes the next
    character in either. An unterminated quote ends the value at the end of the text.
    """
    pairs: list[tuple[str, str]] = []
    i, n = 0, len(text)
    while i < n:
        while i < n and text[i].isspace():
            i += 1
        key_start = i
        while i < n and not text[i].isspace() and text[i] != "=":
            i += 1
        key = text[key_start:i]
        while i < n and text[i].isspace():
            i += 1
        if i >= n or text[i] != "=":
            return pairs
        i += 1
        while i < n and text[i].isspace():
            i += 1
        value: list[str] = []
        quoted = i < n and text[i] == "'"
        i += quoted
        while i < n and (text[i] != "'" if quoted else not text[i].isspace()):
            if text[i] == "\\" and i + 1 < n:
                i += 1
            value.append(text[i])
            i += 1
        i += quoted
        pairs.append((key, "".join(value)))
    return pairs


def _redact_conninfo(text: str) -> str:
    """Mask each ``password=`` value of a connection string (to its end if unterminated)."""
    found = _CONNINFO_PASSWORD.search(text)
    if found is None:
        return text
    start = found.end()
    i, n = start, len(text)
    quoted = i < n and text[i] == "'"
    i += quoted
    while i < n and (text[i] != "'" if quoted else not text[i].isspace()):
        i += 2 if text[i] == "\\" else 1
    if quoted and i >= n:  # unterminated: what follows may be the password too
        return text[:start] + MASK
    i = min(i + quoted, n)
    return text[:start] + MASK + _redact_conninfo(text[i:])
