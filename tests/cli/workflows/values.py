"""A workflow whose step results are JSON values encoders write differently: floats in
exponent form and not finite, integers beyond 64 bits, a lone surrogate, controls and line
separators, nesting deeper than orjson goes, empty containers (``wfctl export``'s text)."""

from __future__ import annotations

from typing import Any

from wfctl import step, workflow


def _nested(depth: int) -> Any:
    value: Any = [1.5]
    for _ in range(depth):
        value = [value]
    return value


VALUES: list[Any] = [
    0.1,
    1e-05,
    1e16,
    -0.0,
    5e-324,
    1.5e300,
    float("nan"),
    float("-inf"),
    2**70,
    -(2**65),
    2**64 - 1,
    "\ud800 lone",
    '\u2028\u2029\x7f\x00\x1f\t"\\ é 🎉',
    {},
    [],
    {"a": [{"b": 2.5e-07}, (1, 0.5)]},
    _nested(299),  # 300 lists deep: the codec's limit, past orjson's 255
]


@step
async def give(i: int) -> Any:
    """Return value ``i``."""
    return VALUES[i]


@workflow(name="values")
async def values(count: int = len(VALUES)) -> int:
    """Record the first ``count`` values (all by default), one step each."""
    for i in range(count):
        await give(i)
    return count
