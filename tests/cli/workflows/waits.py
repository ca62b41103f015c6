"""A workflow that waits an hour, for the ``wfctl runs``/pause tests of sleeps and backoff.

Input ``"sleep"``: a durable ``ctx.sleep(3600)``. Input ``"backoff"``: a step that always fails,
retried after an hour. Either way the run sits waiting until a test pauses or interrupts it.
Input ``"nap"``: a 10 ms sleep, then a step (for replay).
"""

from __future__ import annotations

from wfctl import Retry, RunContext, step, workflow


@step(retries=Retry(attempts=3, initial=3600.0, max_interval=7200.0, jitter=False))
async def unreachable() -> str:
    """A call that always fails: the service is down."""
    raise ConnectionError("service down")


@step
async def after_nap() -> str:
    """The step after a short sleep."""
    return "rested"


@workflow(name="waits")
async def waits(mode: str, ctx: RunContext) -> str:
    """Sleep an hour, or back off an hour."""
    if mode == "sleep":
        await ctx.sleep(3600)
        return "slept"
    if mode == "nap":
        await ctx.sleep(0.01)
        return await after_nap()
    return await unreachable()
