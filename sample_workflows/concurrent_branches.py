"""Report 000 in wfctl's words: two concurrent branches call one shared step, and a replay
changes the order in which they reach it, without trading their results.

Branch A runs ``predecessor`` and then ``shared``; branch B goes straight to ``shared``. On the
first run the gates (``asyncio.Event``s, no sleeps) force B's ``shared`` to start first and to
finish last. On a replay ``predecessor`` is served from the record, so A reaches ``shared``
first. An engine that keyed calls by ``(step name, call index)`` would hand A the result it
recorded for B; wfctl keys each call by its branch (``0/shared#0``, ``1/shared#0``) and by a
digest of its arguments, so every replay returns ``["result:A", "result:B"]``.

The gates are set in the branch code, not inside other steps' bodies: whichever steps a replay
serves from the record, every wait is eventually released.

Run it (the input is optional; it names the two branches)::

    wfctl run sample_workflows/concurrent_branches.py
    wfctl run sample_workflows/concurrent_branches.py --input '["left", "right"]'

then replay it from any checkpoint the run printed, with shuffled cache hits::

    wfctl replay --checkpoint RUN_ID.1 --shuffle 7
"""

from __future__ import annotations

import asyncio
import contextvars
from dataclasses import dataclass, field

from wfctl import step, workflow


@dataclass
class _Gates:
    """The events that order the first run; one set per run."""

    a_started: asyncio.Event = field(default_factory=asyncio.Event)
    b_at_shared: asyncio.Event = field(default_factory=asyncio.Event)
    a_shared_done: asyncio.Event = field(default_factory=asyncio.Event)


# Set by the workflow body; its branch tasks (and the steps they run) inherit it.
_gates: contextvars.ContextVar[_Gates] = contextvars.ContextVar("concurrent_branches_gates")

#: Values of the shared step's bodies, in the order they started (in this process).
shared_calls: list[str] = []


@step
async def predecessor(value: str) -> str:
    """Branch A's first step: held until branch B has reached the shared step."""
    await _gates.get().b_at_shared.wait()
    return value


@step
async def shared(value: str, hold: bool) -> str:
    """The step both branches call; B's call (``hold``) waits until A's has completed."""
    shared_calls.append(value)
    if hold:
        await _gates.get().a_shared_done.wait()
    return f"result:{value}"


async def branch_a(value: str) -> str:
    gates = _gates.get()
    gates.a_started.set()
    await predecessor(value)
    result = await shared(value, hold=False)
    gates.a_shared_done.set()
    return result


async def branch_b(value: str) -> str:
    gates = _gates.get()
    await gates.a_started.wait()
    gates.b_at_shared.set()
    return await shared(value, hold=True)


@workflow(name="concurrent_branches")
async def concurrent_branches(names: list[str] | None = None) -> list[str]:
    """Run two gated branches that share a step; return each branch's own result."""
    a, b = names or ["A", "B"]
    _gates.set(_Gates())
    return list(await asyncio.gather(branch_a(a), branch_b(b)))
