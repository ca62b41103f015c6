"""A workflow that catches its step's failure and goes on (the failure is recorded, no result)."""

from __future__ import annotations

from wfctl import step, workflow


@step
async def lookup(name: str) -> str:
    """Always fails: the service does not know the name."""
    raise LookupError(f"no such user: {name}")


@step
async def greet(name: str) -> str:
    """Always works."""
    return f"hello, {name}"


@workflow(name="caught")
async def caught(name: str = "ada") -> str:
    """Greet by the looked-up name, or by the given one when the lookup fails."""
    try:
        name = await lookup(name)
    except LookupError:
        name = name.title()
    return await greet(name)
