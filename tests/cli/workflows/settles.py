"""N small steps, then a failure until a ``fixed`` file exists in a directory (a run to resume)."""

from __future__ import annotations

from pathlib import Path

from wfctl import step, workflow


@step
async def item(index: int) -> int:
    """Return ``index``."""
    return index


@workflow(name="settles")
async def settles(job: tuple[str, int]) -> int:
    """Run ``count`` steps, then fail unless ``directory/fixed`` exists."""
    directory, count = job
    total = sum([await item(index) for index in range(count)])
    if not (Path(directory) / "fixed").exists():
        raise RuntimeError("the fix is not in yet")
    return total
