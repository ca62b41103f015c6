"""A workflow whose records hold awkward text for ``wfctl log``: wide and combining characters,
controls, tabs, line feeds, trailing spaces, long words and long lines; a retried step, a pause
for an answer, and a failure after it when the input asks for one.
"""

from __future__ import annotations

import asyncio
from typing import Any

from wfctl import Retry, RunContext, get_run_context, step, workflow

TEXTS = [
    "plain",
    "wide 漢字漢字漢字 " * 8,
    "esc \x1b[2J, bell \x07, right-to-left \u202e, e\u0301 combined",
    "tab\there\tand\tthere",
    "line\nbreak\nthree",
    "trailing spaces   ",
    "long " + "word " * 60,
    "x" * 300,
    "emoji 🎉🎉 " * 20,
]

_FAILED: set[int] = set()


@step
async def echo(i: int, text: str) -> str:
    """Return ``text``."""
    return text


@step(retries=Retry(attempts=2, initial=0.001, jitter=False))
async def shaky(text: str) -> str:
    """Fail once, naming awkward text, then work."""
    if not _FAILED:
        _FAILED.add(1)
        raise RuntimeError(f"first try\twith {text}")
    return text


@step
async def boom(text: str) -> str:
    """Fail with a message of several lines."""
    raise ValueError("bad\tthing\nhappened " + text)


async def ask() -> Any:
    ctx = get_run_context()
    assert ctx is not None
    return await ctx.request_info({"q": "go?\ttab"}, str)


@workflow(name="awkward\tname")
async def awkward(fail: bool = False, *, ctx: RunContext) -> Any:
    """Store each text, four of them at once, retry one step, ask, then maybe fail."""
    out = [await echo(i, text) for i, text in enumerate(TEXTS)]
    await asyncio.gather(*(echo(100 + i, t) for i, t in enumerate(TEXTS[:4])))
    await shaky(TEXTS[2])
    answer = await ask()
    if fail:
        await boom(answer)
    return {"answer": answer, "n": len(out), "t": TEXTS[2] + " " + TEXTS[4]}
