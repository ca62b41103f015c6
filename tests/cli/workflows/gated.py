"""A workflow whose first step waits on a file gate, for the Ctrl-C and ``wfctl pause`` tests.

The input names a directory. ``wait_for_gate`` writes ``started`` there, then polls (with
``asyncio.sleep``, so the event loop stays free to handle signals) until the test creates
``gate``. ``after_gate`` runs next: the step boundary where a requested pause takes effect;
unless the directory holds ``once``: the run then completes after the gated step, reaching no
step boundary after it.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

from wfctl import step, workflow


@step
async def wait_for_gate(directory: str) -> str:
    """Announce that the step runs, then wait until the gate file exists."""
    folder = Path(directory)
    (folder / "started").write_text("started", encoding="utf-8")
    # Another process opens the gate: there is no event to wait on, so poll the file.
    while not (folder / "gate").exists():  # noqa: ASYNC110
        await asyncio.sleep(0.01)
    return "through the gate"


@step
async def after_gate(text: str) -> str:
    """The step after the gate."""
    return text.upper()


@workflow(name="gated")
async def gated(directory: str) -> str:
    """Wait at the gate, then finish."""
    passed = await wait_for_gate(directory)
    if (Path(directory) / "once").exists():
        return passed
    return await after_gate(passed)
