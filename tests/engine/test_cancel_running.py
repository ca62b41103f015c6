"""A run its driver was asked to cancel: the ``cancelled`` record, the error, the sentence.

The request comes from inside a step (as another process's would, through the storage), so
where the run stops is decided by its step boundaries, never by a time.
"""

from __future__ import annotations

import asyncio
from collections import Counter
from typing import Any

import pytest

from tests.conftest import arun, assert_one_chain
from wfctl import RunCancelledError, RunContext, RunStateError, step, workflow
from wfctl._records._payloads import CancelledPayload, CancelRequest
from wfctl._storage._capabilities import request_cancel

ASKED = CancelRequest("ann@host (pid 7)", "2026-12-06T06:00:00+00:00", "superseded")


def test_a_cancel_request_ends_the_run_at_its_next_step_boundary(storage: Any) -> None:
    async def main() -> None:
        runs: Counter[int] = Counter()

        @step
        async def tick(i: int, ctx: RunContext) -> int:
            runs[i] += 1
            if i == 1:
                await request_cancel(storage, ctx.run_id, ASKED)
            return i

        @workflow
        async def ticker(ctx: RunContext) -> int:
            return sum([await tick(i, ctx) for i in range(4)])

        wf = ticker.build(checkpoint_storage=storage)
        with pytest.raises(RunCancelledError) as raised:
            await wf.run()
        error = raised.value
        assert (error.by, error.asked_at, error.reason) == (ASKED.by, ASKED.at, ASKED.reason)
        assert str(error) == (
            f"run {error.run_id!r} was cancelled by ann@host (pid 7) at "
            "2026-12-06T06:00:00+00:00: superseded"
        )
        assert not getattr(error, "__notes__", None)  # no retry to suggest: it ended for good
        assert dict(runs) == {0: 1, 1: 1}  # step 1 finished; step 2 never started
        result = error.wfctl_result  # type: ignore[attr-defined]
        assert result.status == "cancelled" and result.get_final_state().value == "CANCELLED"
        chain = await storage.list_checkpoints(run_id=error.run_id)
        assert_one_chain(chain)
        assert [c.kind for c in chain] == ["root", "step", "step", "cancelled"]
        assert CancelledPayload.of(chain[-1]) == CancelledPayload(
            "running", "superseded", ASKED.by, ASKED.at
        )
        assert not storage.pause_requested(error.run_id)  # the request is withdrawn
        assert await storage.cancel_request(error.run_id) is None
        with pytest.raises(RunStateError, match="cancelled"):
            await wf.resume(error.run_id)

    arun(main())


def test_a_run_paused_for_an_answer_is_cancelled_not_paused(storage: Any) -> None:
    async def main() -> None:
        @step
        async def ask_to_cancel(ctx: RunContext) -> None:
            await request_cancel(storage, ctx.run_id, ASKED)

        @workflow
        async def asking(ctx: RunContext) -> Any:
            await ask_to_cancel(ctx)
            return await asyncio.gather(ctx.request_info("q"), asyncio.sleep(0))

        with pytest.raises(RunCancelledError):
            await asking.build(checkpoint_storage=storage).run()
        [run] = await storage.list_runs()
        assert run.status == "cancelled"

    arun(main())
