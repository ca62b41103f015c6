"""A workflow whose name, values and error texts hold HTML and script, and one whose huge
output a replay changes (tests/ui/)."""

from __future__ import annotations

import time

from wfctl import step, workflow

HOSTILE = (
    '<script>window.__wfctl_pwned = 1</script>"><img src=x onerror="window.__wfctl_pwned = 2">'
)


@step
async def echo(text: str) -> str:
    """Give the text back."""
    return text


@step
async def huge(size: int) -> str:
    """A value far past what a page shows."""
    return "x" * size


@step
async def fails(text: str) -> str:
    """Fail with the text as the error."""
    raise ValueError(text)


@workflow(
    name='hostile<script>window.__wfctl_pwned = 3</script>"><img src=x onerror="window.__wfctl_pwned = 4">'
)
async def hostile(text: str) -> str:
    """Echo, make a huge value, then fail with the text."""
    await echo(text)
    await huge(200_000)
    return await fails(text)


@step
async def stamped(size: int) -> str:
    """A value far past what a page shows, different at each call."""
    return "y" * size + str(time.time_ns())


@workflow(name="large")
async def large(size: int) -> str:
    """Return a huge output that a replay changes."""
    return await stamped(size)
