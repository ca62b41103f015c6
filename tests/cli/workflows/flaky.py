"""A workflow whose second step fails until a ``fixed`` file exists in the input directory."""

from __future__ import annotations

from pathlib import Path

from wfctl import step, workflow


@step
async def first(directory: str) -> str:
    """Always works."""
    return f"first in {Path(directory).name}"


@step
async def second(directory: str) -> str:
    """Fail unless the fix is in."""
    if not (Path(directory) / "fixed").exists():
        raise RuntimeError("the fix is not in yet")
    return "second ok"


@workflow(name="flaky")
async def flaky(directory: str) -> list[str]:
    """Run both steps."""
    return [await first(directory), await second(directory)]
