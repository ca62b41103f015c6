"""A checkout whose ``charge`` step fails until its code is fixed (the tour's failed run)."""

from __future__ import annotations

from typing import Any

from wfctl import step, workflow


@step
async def price(order: dict[str, Any]) -> int:
    """Three per item."""
    return 3 * int(order["qty"])


@step
async def charge(amount: int) -> str:
    """Charge the amount (the tour fixes this step between two commands)."""
    raise RuntimeError("payment service: bad amount")


@workflow(name="checkout")
async def checkout(order: dict[str, Any]) -> str:
    """Price the order, then charge it."""
    return await charge(await price(order))
