"""New run ids: sortable by creation time, unique enough to never collide in one store."""

from __future__ import annotations

import secrets
from datetime import UTC, datetime

__all__ = ["new_run_id"]


def new_run_id() -> str:
    """Return a fresh run id such as ``20261129-121400-3f9a2c``."""
    return f"{datetime.now(UTC):%Y%m%d-%H%M%S}-{secrets.token_hex(3)}"
