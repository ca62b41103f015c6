"""A workflow with two concurrent branches that each ask a question, for pause/resume tests.

Branch 0 asks for a verdict (``0/request#0``, expects ``str``); branch 1 asks for a score
(``1/request#0``, expects ``int``). The run pauses with both pending.
"""

from __future__ import annotations

import asyncio
from typing import Any

from wfctl import RunContext, get_run_context, step, workflow


@step
async def prepare(topic: str) -> str:
    """Make the draft both reviewers see."""
    return f"draft about {topic}"


async def ask_verdict(text: str) -> Any:
    ctx = get_run_context()
    assert ctx is not None
    return await ctx.request_info({"text": text, "question": "publish?"}, str)


async def ask_score(text: str) -> Any:
    ctx = get_run_context()
    assert ctx is not None
    return await ctx.request_info({"text": text, "question": "score 1-5?"}, int)


@workflow(name="review")
async def review(topic: str | None = None, *, ctx: RunContext) -> dict[str, Any]:
    """Prepare a draft, then ask for a verdict and a score at once."""
    text = await prepare(topic or "cats")
    verdict, score = await asyncio.gather(ask_verdict(text), ask_score(text))
    return {"verdict": verdict, "score": score}
