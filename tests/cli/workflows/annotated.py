"""Workflows whose message parameter is annotated, for the check of ``--input`` against it."""

from __future__ import annotations

from dataclasses import dataclass

from wfctl import step, workflow


@dataclass
class Order:
    """What ``place`` takes: an order of some items."""

    item: str
    count: int


@step
async def twice(n: int) -> int:
    """Return ``2 * n``."""
    return 2 * n


@workflow(name="doubled")
async def doubled(n: int) -> int:
    """Double a whole number."""
    return await twice(n)


@workflow(name="place")
async def place(order: Order) -> str:
    """Say what was ordered (the message arrives as an ``Order``, not a dict)."""
    return f"{type(order).__name__}: {order.count} x {order.item}"
