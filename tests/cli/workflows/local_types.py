"""Workflows whose steps return classes defined inside functions (tests/cli/test_local_types.py).

``kept``'s class is in its step's closure: a process that loads this file resolves the step's
annotation there and reads the recorded result. ``unseen``'s class is made by a helper, out of
the closure: it is registered only when the step runs, so a resume in another process that
serves the recorded result has never seen it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from wfctl import RunContext, Workflow, step, workflow


def _kept() -> Workflow:
    @dataclass
    class Score:
        value: int

    @step
    async def score(text: str) -> Score:
        return Score(len(text))

    @workflow(name="kept")
    async def kept(text: str, ctx: RunContext) -> str:
        scored = await score(text)
        answer = await ctx.request_info("approve?", response_type=str, request_id="approve")
        return f"{scored.value}:{answer}"

    return kept


def _verdict(ok: bool) -> Any:
    @dataclass
    class Verdict:
        ok: bool

    return Verdict(ok)


@step
async def judge(text: str) -> Verdict:  # type: ignore[name-defined]  # noqa: F821  # _verdict's class
    return _verdict("ok" in text)


@workflow(name="unseen")
async def unseen(text: str, ctx: RunContext) -> str:
    verdict = await judge(text)
    answer = await ctx.request_info("approve?", response_type=str, request_id="approve")
    return f"{verdict.ok}:{answer}"


kept = _kept()
