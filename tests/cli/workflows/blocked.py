"""A workflow whose only step never finishes, for the drain-timeout tests.

The input names a directory. ``block`` writes ``started`` there and then waits on an event
that nothing ever sets, so only the drain timeout can end it: a broken timeout shows as a test
that times out, never as a slow pass.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

from wfctl import step, workflow


@step
async def block(directory: str) -> str:
    """Announce that the step runs, then wait forever."""
    (Path(directory) / "started").write_text("started", encoding="utf-8")
    await asyncio.Event().wait()
    return "never"


@workflow(name="blocked")
async def blocked(directory: str) -> str:
    """Run the one step that never ends."""
    return await block(directory)
