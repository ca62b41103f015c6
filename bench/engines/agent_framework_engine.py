"""agent-framework functional workflows with ``FileCheckpointStorage`` (one JSON file per checkpoint).

Each step completion saves a checkpoint holding the whole step cache, so a run of N steps writes
N+1 files of growing size. Restore is ``run(checkpoint_id=<latest>)`` on a completed run: every
step is served from the cache stored in that one checkpoint.
"""

from __future__ import annotations

import asyncio
import warnings

from agent_framework import (
    FileCheckpointStorage,
    RunContext,
    WorkflowRunResult,
    step,
    workflow,
)

from . import _common as common
from ._common import Job, Measurement

# The functional API is marked experimental; the warning is noise in a benchmark.
warnings.filterwarnings("ignore", message=r".*\bexperimental\b")

__all__ = ["fanout", "pause_resume", "restore", "sequential"]


@step
async def echo(text: str) -> str:
    return common.run_step(text)


@workflow(name="bench_sequential")
async def sequential_wf(n: int) -> str:
    result = ""
    for i in range(n):
        result = await echo(common.payload(i))
    return result


@workflow(name="bench_fanout")
async def fanout_wf(n: int) -> list[str]:
    return list(await asyncio.gather(*(echo(common.payload(i)) for i in range(n))))


@workflow(name="bench_review")
async def review_wf(n: int, ctx: RunContext) -> str:
    for i in range(n):
        await echo(common.payload(i))
    answer: str = await ctx.request_info("approve?", str)
    return answer


def _status(result: WorkflowRunResult) -> str:
    """Name the run's final state in wfctl's words (completed / paused / failed)."""
    state = str(result.get_final_state()).rsplit(".", 1)[-1]
    return {"IDLE": "completed", "IDLE_WITH_PENDING_REQUESTS": "paused"}.get(state, state.lower())


async def _latest_id(storage: FileCheckpointStorage, name: str) -> str:
    latest = await storage.get_latest(workflow_name=name)
    assert latest is not None, f"no checkpoint saved for {name}"
    return latest.checkpoint_id


def _measure(job: Job, seconds: float, result: WorkflowRunResult) -> Measurement:
    files, size, largest = common.disk_usage(job.store)
    return Measurement(
        seconds=seconds,
        records=files,
        files=files,
        bytes=size,
        largest_file=largest,
        executed=common.executed_steps(),
        run_status=_status(result),
    )


async def sequential(job: Job) -> Measurement:
    """Run N sequential steps with file checkpoints."""
    wf = sequential_wf.build(checkpoint_storage=FileCheckpointStorage(job.store))
    result, seconds = await common.timed(wf.run(job.n))
    m = _measure(job, seconds, result)
    m.check_output(result.get_outputs(), common.expected_outputs(job.n)[-1:])
    return m


async def fanout(job: Job) -> Measurement:
    """Gather N concurrent steps; report the checkpoint lineage the saves left behind."""
    storage = FileCheckpointStorage(job.store)
    wf = fanout_wf.build(checkpoint_storage=storage)
    result, seconds = await common.timed(wf.run(job.n))
    m = _measure(job, seconds, result)
    m.check_output(result.get_outputs(), [common.expected_outputs(job.n)])
    checkpoints = await storage.list_checkpoints(workflow_name="bench_fanout")
    latest = max(checkpoints, key=lambda c: c.timestamp)  # what storage.get_latest picks
    parents = {c.checkpoint_id: c.previous_checkpoint_id for c in checkpoints}
    m.roots, m.unreachable = common.lineage(parents, latest.checkpoint_id)
    return m


async def restore(job: Job) -> Measurement:
    """Setup: complete a run. Measure: restore its latest checkpoint; every step is cached."""
    storage = FileCheckpointStorage(job.store)
    wf = sequential_wf.build(checkpoint_storage=storage)
    if job.phase == "setup":
        result, seconds = await common.timed(wf.run(job.n))
        common.save_state(job.store, checkpoint_id=await _latest_id(storage, "bench_sequential"))
        return _measure(job, seconds, result)
    checkpoint_id = common.load_state(job.store)["checkpoint_id"]
    result, seconds = await common.timed(wf.run(checkpoint_id=checkpoint_id))
    m = _measure(job, seconds, result)
    m.check_output(result.get_outputs(), common.expected_outputs(job.n)[-1:])
    m.check(m.executed == 0, f"{m.executed} steps re-executed")
    return m


async def pause_resume(job: Job) -> Measurement:
    """Pause: N steps then ``request_info``. Resume (fresh process): answer from the checkpoint."""
    storage = FileCheckpointStorage(job.store)
    wf = review_wf.build(checkpoint_storage=storage)
    if job.phase == "pause":
        result, seconds = await common.timed(wf.run(job.n))
        m = _measure(job, seconds, result)
        m.check(m.run_status == "paused", f"status {m.run_status}, expected paused")
        requests = result.get_request_info_events()
        common.save_state(
            job.store,
            checkpoint_id=await _latest_id(storage, "bench_review"),
            request_id=requests[0].request_id,
        )
        return m
    state = common.load_state(job.store)
    result, seconds = await common.timed(
        wf.run(checkpoint_id=state["checkpoint_id"], responses={state["request_id"]: "yes"})
    )
    m = _measure(job, seconds, result)
    m.check_output(result.get_outputs(), ["yes"])
    m.check(m.executed == 0, f"{m.executed} steps re-executed")
    return m
