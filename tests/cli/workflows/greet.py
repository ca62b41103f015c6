"""A workflow that completes: one step, one yielded output, a dict result."""

from __future__ import annotations

from typing import Any

from wfctl import RunContext, step, workflow


@step
async def shout(name: str) -> str:
    """Upper-case a name."""
    return name.upper()


@workflow(name="greet")
async def greet(name: str | None = None, *, ctx: RunContext) -> dict[str, Any]:
    """Greet ``name`` (default ``world``)."""
    loud = await shout(name or "world")
    await ctx.yield_output(f"hello {loud}")
    return {"greeted": loud, "length": len(loud)}
