"""Two workflows in one file: a target must name one."""

from __future__ import annotations

from wfctl import step, workflow


@step
async def one() -> int:
    """Return 1."""
    return 1


@workflow
async def alpha() -> int:
    """The first."""
    return await one()


@workflow
async def beta() -> int:
    """The second."""
    return await one() + 1


async def not_a_workflow() -> int:
    """A plain coroutine function."""
    return 0


NUMBER = 42
