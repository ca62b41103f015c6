"""A workflow whose code calls ``sys.exit``: in a step, in the body or in a branch task.

The input says where (``"step"``, ``"body"`` or ``"branch"``) and with which status.
"""

from __future__ import annotations

import asyncio
import sys

from wfctl import step, workflow


@step
async def record(value: str) -> str:
    """A step that completes, so the run has something committed before it exits."""
    return value.upper()


@step
async def leave(status: int) -> str:
    """A step that calls sys.exit."""
    sys.exit(status)


async def branch(where: str, status: int) -> str:
    """A branch task whose own code calls sys.exit (outside any step)."""
    await asyncio.sleep(0)
    if where == "branch":
        sys.exit(status)
    return "calm"


@workflow(name="exits")
async def exits(where: str) -> str:
    """Record one step, then exit from where the input says (status 0)."""
    await record("before")
    if where == "step":
        await leave(0)
    if where == "body":
        sys.exit(0)
    results = await asyncio.gather(branch(where, 0), branch("nowhere", 0))
    return " ".join(results)
