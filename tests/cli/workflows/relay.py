"""A workflow of three steps whose middle one waits on a file gate, counting what each did.

The input names a directory. Every step appends a line to ``<directory>/<run id>`` when it
executes; ``hold`` then writes ``started`` and polls until the test creates ``gate``. A test
that kills the driver while ``hold`` waits sees ``first`` served from the record afterwards
(one line) and ``hold`` executed again (two lines: at least once before its commit).
"""

from __future__ import annotations

import asyncio
from pathlib import Path

from wfctl import RunContext, step, workflow


def _note(directory: str, run_id: str, line: str) -> None:
    with (Path(directory) / run_id).open("a", encoding="utf-8") as file:
        file.write(line + "\n")


@step
async def first(directory: str, ctx: RunContext) -> int:
    """Count an execution."""
    _note(directory, ctx.run_id, "first")
    return 1


@step
async def hold(directory: str, ctx: RunContext) -> int:
    """Count an execution, announce it, then wait until the gate file exists."""
    _note(directory, ctx.run_id, "hold")
    folder = Path(directory)
    (folder / "started").write_text("started", encoding="utf-8")
    # Another process opens the gate: there is no event to wait on, so poll the file.
    while not (folder / "gate").exists():  # noqa: ASYNC110
        await asyncio.sleep(0.01)
    return 2


@step
async def last(directory: str, ctx: RunContext) -> int:
    """Count an execution."""
    _note(directory, ctx.run_id, "last")
    return 3


@workflow(name="relay")
async def relay(directory: str) -> int:
    """Run the three steps in order."""
    return await first(directory) + await hold(directory) + await last(directory)
