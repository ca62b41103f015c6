"""A workflow of N small steps, one after the other (a long timeline for ``wfctl log``)."""

from __future__ import annotations

from wfctl import step, workflow


@step
async def item(index: int) -> int:
    """Return ``index``."""
    return index


@workflow(name="many")
async def many(count: int) -> int:
    """Run ``count`` steps."""
    return sum([await item(index) for index in range(count)])
