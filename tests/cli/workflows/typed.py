"""A workflow whose steps return values JSON cannot say, for the --json value and display tests.

``stamp`` returns a datetime, ``mixed`` a dict holding a tuple, bytes, a set, a Decimal, a UUID
and a dict with int keys. The run returns both, so its outputs hold every kind of tagged value.
"""

from __future__ import annotations

from datetime import UTC, datetime
from decimal import Decimal
from typing import Any
from uuid import UUID

from wfctl import step, workflow


@step
async def stamp(label: str) -> datetime:
    """A fixed moment."""
    return datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)


@step
async def mixed(label: str) -> dict[str, Any]:
    """One of each non-JSON value the codec stores."""
    return {
        "pair": (label, 2),
        "raw": b"hi",
        "tags": {"b", "a"},
        "price": Decimal("1.10"),
        "id": UUID(int=1),
        "by_number": {1: "one"},
    }


@workflow(name="typed")
async def typed(label: str = "x") -> dict[str, Any]:
    """Return the moment and the mixed values."""
    return {"when": await stamp(label), "mixed": await mixed(label)}
