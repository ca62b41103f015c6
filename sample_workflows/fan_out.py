"""A fan-out of many parallel steps, then a reduce step.

``asyncio.gather`` runs ``count`` calls of ``square`` at once; each call has its own durable
key (``square#0`` ... ``square#99``) and its result is committed before it returns (steps that
finish together share one checkpoint: group commit). ``total`` then reduces the results.
Replaying from a checkpoint taken half-way re-runs only the squares not yet recorded.

Run it (input: a count, or ``{"count": N}``; default ``100``)::

    wfctl run sample_workflows/fan_out.py
    wfctl run sample_workflows/fan_out.py --input 1000

The default returns ``{"count": 100, "sum_of_squares": 328350}``.
"""

from __future__ import annotations

import asyncio
from typing import Any

from wfctl import step, workflow


@step
async def square(i: int) -> int:
    """One parallel unit of work."""
    return i * i


@step
async def total(values: list[int]) -> int:
    """Reduce the parallel results."""
    return sum(values)


@workflow(name="fan_out")
async def fan_out(message: int | dict[str, Any] | None = None) -> dict[str, int]:
    """Square ``count`` numbers in parallel and sum the squares."""
    count = message.get("count") if isinstance(message, dict) else message
    n = 100 if count is None else int(count)
    values = await asyncio.gather(*(square(i) for i in range(n)))
    return {"count": n, "sum_of_squares": await total(list(values))}
