"""wfctl with ``FileCheckpointStorage``: one append-only journal per run.

The durability mode is ``full`` unless the job's ``durability`` option names another
(``batch``, ``none``: the durability scenario runs all three side by side).

A store holds ``runs/<run_id>/journal.jsonl``, one checksummed JSON line per checkpoint; records
are counted as journal lines and lineage follows each line's ``prev``. Restore is
``run(checkpoint_id=<head>)`` on a completed run, which starts a new run (its root records the
origin) with every step served from the source run's records.
"""

from __future__ import annotations

import asyncio
import json
import statistics
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TYPE_CHECKING

from wfctl import FileCheckpointStorage, RunContext, step, workflow

from . import _common as common
from ._common import Job, Measurement

if TYPE_CHECKING:
    from wfctl import WorkflowRunResult

__all__ = ["big_payload", "fanout", "pause_resume", "populate", "restore", "sequential"]


@step
async def echo(text: str) -> str:
    return common.run_step(text)


@workflow(name="bench_sequential")
async def sequential_wf(n: int) -> str:
    result = ""
    for i in range(n):
        result = await echo(common.payload(i))
    return result


@step
async def blob(i: int) -> str:
    return common.big_result(i)


@step
async def little(i: int) -> str:
    return common.payload(i)


async def _lengths(call: Callable[[int], Awaitable[str]], n: int) -> int:
    """Call ``call(i)`` for i in 0..n-1, each awaited in turn; the total of their lengths."""
    total = 0
    for i in range(n):
        total += len(await call(i))
    return total


@workflow(name="bench_big")
async def big_wf(n: int) -> int:
    return await _lengths(blob, n)


@workflow(name="bench_little")
async def little_wf(n: int) -> int:
    return await _lengths(little, n)


@workflow(name="bench_fanout")
async def fanout_wf(n: int) -> list[str]:
    return list(await asyncio.gather(*(echo(common.payload(i)) for i in range(n))))


@workflow(name="bench_review")
async def review_wf(n: int, ctx: RunContext) -> str:
    for i in range(n):
        await echo(common.payload(i))
    answer: str = await ctx.request_info("approve?")
    return answer


def _storage(job: Job) -> FileCheckpointStorage:
    return FileCheckpointStorage(job.store, durability=job.options.get("durability", "full"))


def _read_journals(store: Path) -> tuple[dict[str, str | None], list[int]]:
    """Return ``id -> prev`` for every journal line under ``store`` (``prev`` as stored, or as
    format version 3's id says it), and the step lines' sizes."""
    parents: dict[str, str | None] = {}
    step_sizes: list[int] = []
    for journal in store.glob("runs/*/journal.jsonl"):
        with journal.open("rb") as lines:
            for line in lines:
                if line.endswith(b"\n"):  # a torn tail is not a record
                    record = json.loads(line)
                    parents[record["id"]] = record["prev"] if "prev" in record else _parent(record)
                    if record.get("kind") == "step":
                        step_sizes.append(len(line))
    return parents, step_sizes


def _parent(record: dict[str, object]) -> str | None:
    """The parent a record of format version 3 names by its id: the seq before (none for 0)."""
    run, _, seq = str(record["id"]).rpartition(".")
    return None if seq == "0" else f"{run}.{int(seq) - 1}"


def _measure(job: Job, seconds: float, result: WorkflowRunResult) -> Measurement:
    files, size, largest = common.disk_usage(job.store)
    parents, step_sizes = _read_journals(job.store)
    roots, unreachable = common.lineage(parents, result.checkpoint_id)
    return Measurement(
        seconds=seconds,
        records=len(parents),
        files=files,
        bytes=size,
        largest_file=largest,
        roots=roots,
        unreachable=unreachable,
        executed=common.executed_steps(),
        run_status=result.status,
        detail={"step_record_bytes": round(statistics.mean(step_sizes)) if step_sizes else None},
    )


async def sequential(job: Job) -> Measurement:
    """Run N sequential steps, each committed durably before its ``await`` returns."""
    result, seconds = await common.timed(
        sequential_wf.build(checkpoint_storage=_storage(job)).run(job.n)
    )
    m = _measure(job, seconds, result)
    m.check_output(result.get_outputs(), common.expected_outputs(job.n)[-1:])
    return m


async def big_payload(job: Job) -> Measurement:
    """Run N sequential steps that each return 1 MB; report CPU seconds besides wall time.

    Then, in the same process and on a store beside it, the CPU of the megabytes alone: the
    same N steps again (``cpu_seconds_warm``) and N steps of the same shape that each return
    100 characters (``cpu_seconds_small``). Neither is the process's first run, which alone
    computes what a process does once (the code signature), so their difference leaves out
    every fixed cost of a run and of a step.
    """
    cpu = time.process_time()
    result, seconds = await common.timed(big_wf.build(checkpoint_storage=_storage(job)).run(job.n))
    cpu = time.process_time() - cpu
    m = _measure(job, seconds, result)
    m.detail["cpu_seconds"] = cpu
    m.check_output(result.get_outputs(), [job.n * common.BIG_CHARS])
    with tempfile.TemporaryDirectory(dir=job.store.parent) as beside:
        storage = FileCheckpointStorage(beside, durability=job.options.get("durability", "full"))
        for name, wf, chars in (
            ("cpu_seconds_warm", big_wf, common.BIG_CHARS),
            ("cpu_seconds_small", little_wf, common.PAYLOAD_CHARS),
        ):
            cpu = time.process_time()
            again = await wf.build(checkpoint_storage=storage).run(job.n)
            m.detail[name] = time.process_time() - cpu
            m.check_output(again.get_outputs(), [job.n * chars])
        await storage.aclose()
    return m


async def fanout(job: Job) -> Measurement:
    """Gather N concurrent steps; group commit should keep the chain short and linear."""
    result, seconds = await common.timed(
        fanout_wf.build(checkpoint_storage=_storage(job)).run(job.n)
    )
    m = _measure(job, seconds, result)
    m.check_output(result.get_outputs(), [common.expected_outputs(job.n)])
    return m


async def restore(job: Job) -> Measurement:
    """Setup: complete a run. Measure: restore from its head; every step is cached."""
    wf = sequential_wf.build(checkpoint_storage=_storage(job))
    if job.phase == "setup":
        result, seconds = await common.timed(wf.run(job.n))
        common.save_state(job.store, checkpoint_id=result.checkpoint_id)
        return _measure(job, seconds, result)
    checkpoint_id = common.load_state(job.store)["checkpoint_id"]
    result, seconds = await common.timed(wf.run(checkpoint_id=checkpoint_id))
    m = _measure(job, seconds, result)
    m.check_output(result.get_outputs(), common.expected_outputs(job.n)[-1:])
    m.check(m.executed == 0, f"{m.executed} steps re-executed")
    return m


async def pause_resume(job: Job) -> Measurement:
    """Pause: N steps then ``request_info``. Resume (fresh process): answer it from the head."""
    wf = review_wf.build(checkpoint_storage=_storage(job))
    if job.phase == "pause":
        result, seconds = await common.timed(wf.run(job.n))
        m = _measure(job, seconds, result)
        m.check(m.run_status == "paused", f"status {m.run_status}, expected paused")
        request_id = result.get_request_info_events()[0].request_id
        common.save_state(job.store, checkpoint_id=result.checkpoint_id, request_id=request_id)
        return m
    state = common.load_state(job.store)
    result, seconds = await common.timed(
        wf.run(checkpoint_id=state["checkpoint_id"], responses={state["request_id"]: "yes"})
    )
    m = _measure(job, seconds, result)
    m.check_output(result.get_outputs(), ["yes"])
    m.check(m.executed == 0, f"{m.executed} steps re-executed")
    return m


async def populate(job: Job) -> Measurement:
    """Fill the store with ``runs`` completed runs of N steps (for ``wfctl verify-lineage``)."""
    wf = sequential_wf.build(checkpoint_storage=_storage(job))
    runs = int(job.options.get("runs", 100))
    m = Measurement(seconds=0.0)
    for _ in range(runs):
        result, seconds = await common.timed(wf.run(job.n))
        m.seconds = (m.seconds or 0.0) + seconds
        m.check(result.status == "completed", f"run {result.run_id} {result.status}")
    m.files, m.bytes, m.largest_file = common.disk_usage(job.store)
    m.records = len(_read_journals(job.store)[0])
    return m
