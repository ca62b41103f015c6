"""A workflow whose every step appends one line to a file named after its run.

The input names a directory. Step ``mark`` appends ``step <i>`` to ``<directory>/<run id>``, so
a test counts how many times each step of each run executed (a step runs again only if its
process died before its commit).
"""

from __future__ import annotations

from pathlib import Path

from wfctl import RunContext, step, workflow


@step
async def mark(directory: str, index: int, ctx: RunContext) -> int:
    """Append ``step <index>`` to the run's file."""
    with (Path(directory) / ctx.run_id).open("a", encoding="utf-8") as file:
        file.write(f"step {index}\n")
    return index


@workflow(name="tally")
async def tally(directory: str) -> int:
    """Mark three steps, one after the other."""
    total = 0
    for index in range(3):
        total += await mark(directory, index)
    return total
