"""New run ids: sortable by the second they were made in, then random.

Two ids made in the same second differ in 32 random bits, so a collision needs tens of thousands
of runs started within one second. The engine still treats a fresh id as a promise of a new run:
one that is taken already is replaced by another (:func:`wfctl._engine._admission.lease_new_run`).
"""

from __future__ import annotations

import secrets
from datetime import UTC, datetime

__all__ = ["new_run_id"]


def new_run_id() -> str:
    """Return a fresh run id such as ``20261129-121400-3f9a2c71``."""
    return f"{datetime.now(UTC):%Y%m%d-%H%M%S}-{secrets.token_hex(4)}"
