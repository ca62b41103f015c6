"""langgraph's functional API (``@entrypoint`` / ``@task``) with a SQLite or in-memory saver.

The async entrypoint needs an async saver: ``SqliteSaver`` raises ``NotImplementedError`` from
its ``a*`` methods, so the SQLite variant uses ``AsyncSqliteSaver`` (same tables, same file).
Invocation uses langgraph's defaults (``durability="async"``).

A whole entrypoint call is one superstep, so a run writes few checkpoints; each finished task
is stored as a pending *write* of the current checkpoint. Records are checkpoints plus writes;
lineage follows the checkpoints' parent configs.

langgraph serves tasks from their stored writes only when a run is resumed (after
``interrupt()``); replaying a completed thread from an earlier checkpoint re-executes every task.
So its restore scenario is the resume of a run that stopped at an ``interrupt()`` after N tasks,
the same cycle as pause_resume. The in-memory saver does not outlive its process, so it has no
fresh-process restore or resume.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any

from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.func import entrypoint, task
from langgraph.types import Command, interrupt

from . import _common as common
from ._common import Job, Measurement, NotApplicable

__all__ = ["big_payload", "fanout", "pause_resume", "restore", "sequential"]

_CONFIG: Any = {"configurable": {"thread_id": "bench"}}


@task
async def echo(text: str) -> str:
    return common.run_step(text)


async def bench_sequential(n: int) -> str:
    result = ""
    for i in range(n):
        result = await echo(common.payload(i))
    return result


@task
async def blob(i: int) -> str:
    return common.big_result(i)


async def bench_big(n: int) -> int:
    total = 0
    for i in range(n):
        total += len(await blob(i))
    return total


async def bench_fanout(n: int) -> list[str]:
    return list(await asyncio.gather(*(echo(common.payload(i)) for i in range(n))))


async def bench_review(n: int) -> str:
    for i in range(n):
        await echo(common.payload(i))
    answer: str = interrupt("approve?")
    return answer


@asynccontextmanager
async def _saver(job: Job) -> AsyncIterator[BaseCheckpointSaver[Any]]:
    """Open the job's saver; a SQLite file is closed (its WAL folded in) before sizes are read."""
    if job.variant == "memory":
        yield InMemorySaver()
        return
    from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver

    async with AsyncSqliteSaver.from_conn_string(str(job.store / "checkpoints.sqlite")) as saver:
        await saver.setup()  # table creation is set-up, not part of any measured run
        yield saver


async def _run(
    job: Job, body: Callable[..., Any], argument: Any, *, setup: bool = False
) -> tuple[Any, Measurement]:
    """Run ``body`` as an entrypoint on the job's saver and measure the run and the store."""
    m = Measurement()
    async with _saver(job) as saver:
        graph = entrypoint(checkpointer=saver)(body)
        result, m.seconds = await common.timed(graph.ainvoke(argument, _CONFIG))
        tuples = [t async for t in saver.alist(_CONFIG)]
        head = await saver.aget_tuple(_CONFIG)
    writes = sum(len(t.pending_writes or ()) for t in tuples)
    m.records = len(tuples) + writes
    m.detail = {"checkpoints": len(tuples), "writes": writes}
    parents = {
        t.config["configurable"]["checkpoint_id"]: (
            t.parent_config["configurable"]["checkpoint_id"] if t.parent_config else None
        )
        for t in tuples
    }
    m.roots, m.unreachable = common.lineage(
        parents, head.config["configurable"]["checkpoint_id"] if head else None
    )
    if job.variant != "memory":
        m.files, m.bytes, m.largest_file = common.disk_usage(job.store)
    m.executed = common.executed_steps()
    interrupted = isinstance(result, dict) and "__interrupt__" in result
    m.run_status = "paused" if interrupted else "completed"
    return result, m


async def sequential(job: Job) -> Measurement:
    """Run N sequential tasks."""
    result, m = await _run(job, bench_sequential, job.n)
    m.check_output(result, common.expected_outputs(job.n)[-1])
    return m


async def big_payload(job: Job) -> Measurement:
    """Run N sequential tasks that each return 1 MB."""
    result, m = await _run(job, bench_big, job.n)
    m.check_output(result, job.n * common.BIG_CHARS)
    return m


async def fanout(job: Job) -> Measurement:
    """Gather N concurrent tasks."""
    result, m = await _run(job, bench_fanout, job.n)
    m.check_output(result, common.expected_outputs(job.n))
    return m


async def pause_resume(job: Job) -> Measurement:
    """Pause: N tasks then ``interrupt()``. Resume (fresh process): ``Command(resume=...)``."""
    if job.phase in ("pause", "setup"):
        _, m = await _run(job, bench_review, job.n)
        m.check(m.run_status == "paused", f"status {m.run_status}, expected paused")
        return m
    if job.variant == "memory":
        raise NotApplicable("in-memory saver: nothing survives the pausing process")
    result, m = await _run(job, bench_review, Command(resume="yes"))
    m.check_output(result, "yes")
    m.check(m.executed == 0, f"{m.executed} tasks re-executed")
    return m


async def restore(job: Job) -> Measurement:
    """Resume, from a fresh process, a run interrupted after N tasks (see the module doc)."""
    if job.variant == "memory":
        raise NotApplicable("in-memory saver: nothing survives the setup process")
    return await pause_resume(job)
