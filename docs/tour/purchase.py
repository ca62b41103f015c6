"""A purchase that waits for an approval (``bool``) and a quantity (``int``), asked at once."""

from __future__ import annotations

import asyncio
from typing import Any

from wfctl import RunContext, step, workflow


@step
async def order(item: str, quantity: int) -> str:
    """Place the order."""
    return f"ordered {quantity} x {item}"


@workflow(name="purchase")
async def purchase(item: str = "laptop", *, ctx: RunContext) -> dict[str, Any]:
    """Ask whether to buy ``item`` and how many; order them if approved."""
    approve, quantity = await asyncio.gather(
        ctx.request_info({"item": item, "question": "approve?"}, bool, request_id="approve"),
        ctx.request_info({"item": item, "question": "how many?"}, int, request_id="qty"),
    )
    if approve:
        return {"status": await order(item, quantity)}
    return {"status": "rejected", "item": item}
