"""Report 004 in wfctl's words: steps completing in parallel keep one checkpoint chain.

``asyncio.gather(left(value), right(value))`` finishes two steps at once. Every checkpoint
save goes through one serialized read-head, write, advance-head section (with group commit), so
the run stays one chain: one root, contiguous seq, everything reachable from the head. Raise
``fan_out`` to finish more steps at once.

Run it (input: a number, or ``{"value": N, "fan_out": K}``; default ``1``)::

    wfctl run sample_workflows/parallel_steps.py --input 1
    wfctl run sample_workflows/parallel_steps.py --input '{"value": 1, "fan_out": 8}'
    wfctl verify-lineage

``--input 1`` returns ``[2, 3]``; with ``fan_out: K`` it returns ``[2, 3]`` followed by
``value * 10 + i`` for ``i`` in ``0..K-1``.
"""

from __future__ import annotations

import asyncio
from typing import Any

from wfctl import step, workflow


@step
async def left(value: int) -> int:
    """Report 004's first step."""
    return value + 1


@step
async def right(value: int) -> int:
    """Report 004's second step."""
    return value + 2


@step
async def extra(value: int, i: int) -> int:
    """One of the ``fan_out`` additional parallel steps."""
    return value * 10 + i


@workflow(name="parallel_steps")
async def parallel_steps(message: int | dict[str, Any] | None = None) -> list[int]:
    """Gather ``left``, ``right`` and ``fan_out`` more steps; return their results in order."""
    options = message if isinstance(message, dict) else {"value": message}
    value = int(options.get("value") or 1)
    fan_out = int(options.get("fan_out") or 0)
    results = await asyncio.gather(
        left(value), right(value), *(extra(value, i) for i in range(fan_out))
    )
    return list(results)
