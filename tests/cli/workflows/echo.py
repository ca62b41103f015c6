"""A workflow that returns its input unchanged: for tests about what inputs are accepted."""

from __future__ import annotations

from typing import Any

from wfctl import workflow


@workflow(name="echo")
async def echo(value: Any) -> Any:
    """Return the input."""
    return value
