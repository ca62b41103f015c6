"""Where the inspector listens: whether an address is the loopback, and the URL to open.

Imports the standard library only: the command reads it before it knows the extra is there.
"""

from __future__ import annotations

import ipaddress

__all__ = ["is_loopback", "url_of"]


def is_loopback(host: str) -> bool:
    """Whether ``host`` names this machine's loopback interface only."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def url_of(host: str, port: int, token: str) -> str:
    """Return the URL a browser opens, the token in its query."""
    shown = f"[{host}]" if ":" in host else host
    return f"http://{shown}:{port}/?token={token}"
