"""A child process for the backoff crash test: a step that fails until its third attempt.

Usage: python policy_child.py STORE RUN_ID MODE [NOW]

MODE:
  run     start run RUN_ID; once the first failed attempt is durable (its ``step_retrying``
          event), write STORE/ready and back off for an hour (the parent SIGKILLs it there)
  resume  continue RUN_ID with a clock that reads NOW and does not wait; print the result, the
          waits and the ledger count as JSON
  nap     start run RUN_ID of ``napper``: once its hour-long ``ctx.sleep`` is durable (its
          ``sleeping`` event), write STORE/ready (the parent SIGKILLs it there)
  wake    continue RUN_ID of ``napper`` like ``resume``
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
from pathlib import Path
from typing import Any

from wfctl import FileCheckpointStorage, Retry, RunContext, WorkflowEvent, step, workflow
from wfctl._engine._policies import clock_var  # internal: the test clock seam

STORE, RUN_ID, MODE = Path(sys.argv[1]), sys.argv[2], sys.argv[3]
LEDGER = STORE / "ledger.txt"


def attempts_so_far() -> int:
    with open(LEDGER, "a") as f:
        f.write("call\n")
        f.flush()
        os.fsync(f.fileno())
    return len(LEDGER.read_text().split())


@step(retries=Retry(attempts=5, initial=3600.0, max_interval=7200.0, jitter=False))
async def call() -> str:
    if attempts_so_far() <= 2:
        raise ConnectionError("service unavailable")
    return "ok"


@workflow(name="flaky", checkpoint_storage=FileCheckpointStorage(STORE))
async def flaky() -> str:
    return await call()


@workflow(name="napper", checkpoint_storage=FileCheckpointStorage(STORE))
async def napper(ctx: RunContext) -> str:
    await ctx.sleep(3600)
    attempts_so_far()
    return "woke"


class NoWait:
    def __init__(self, now: float) -> None:
        self.t = now
        self.slept: list[float] = []

    def now(self) -> float:
        return self.t

    async def sleep(self, seconds: float) -> None:
        self.slept.append(seconds)
        self.t += seconds


def ready(event: WorkflowEvent) -> None:
    if event.kind in ("step_retrying", "sleeping"):
        (STORE / "ready").write_text("ready")


def main() -> None:
    wf = napper if MODE in ("nap", "wake") else flaky
    if MODE in ("run", "nap"):
        asyncio.run(wf.run(run_id=RUN_ID, on_event=ready))
        return
    clock = NoWait(float(sys.argv[4]))
    clock_var.set(clock)
    result: Any = asyncio.run(wf.resume(RUN_ID))
    calls = len(LEDGER.read_text().split())
    print(json.dumps({"result": result.result, "slept": clock.slept, "calls": calls}))


main()
