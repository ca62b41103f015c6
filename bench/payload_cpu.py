"""CPU time per 1 MB step: a result, an argument, an argument with ``record_args=False``.

Runs 50 sequential steps that each return (or receive) a distinct 1 MB string, in one
process, and prints the median ``time.process_time`` per step (CPU time, which a busy machine
disturbs less than wall time) and the whole ``asyncio.run`` per step, which adds what
happens after the body (the run's end, and asyncio.run's own handling of the result).
The step body's own work (building 1 MB) is included, as a user's would be.

Usage::

    python bench/payload_cpu.py [--durability full|batch|none] [--steps 50]
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import statistics
import tempfile
import time
from collections.abc import Awaitable, Callable

from wfctl import FileCheckpointStorage, step, workflow

_FILL = "x" * 1_000_000
_marks: list[float] = []


@step
async def make(i: int) -> str:
    return f"big-{i:09d}-" + _FILL[14:]


@step
async def take(text: str) -> int:
    return len(text)


@step(record_args=False)
async def take_unrecorded(text: str) -> int:
    return len(text)


def _tick() -> None:
    _marks.append(time.process_time())


async def _steps(n: int, call: Callable[[int], Awaitable[int]]) -> int:
    """Make ``n`` calls, marking the CPU clock before the first and after each."""
    total = 0
    _tick()
    for i in range(n):
        total += await call(i)
        _tick()
    return total


async def _result_len(i: int) -> int:
    return len(await make(i))


def _argument(i: int) -> str:
    return f"arg-{i:09d}-" + _FILL[14:]


@workflow(name="payload_result")
async def result_wf(n: int) -> int:
    return await _steps(n, _result_len)


@workflow(name="payload_argument")
async def argument_wf(n: int) -> int:
    return await _steps(n, lambda i: take(_argument(i)))


@workflow(name="payload_argument_unrecorded")
async def unrecorded_wf(n: int) -> int:
    return await _steps(n, lambda i: take_unrecorded(_argument(i)))


def main() -> None:
    """Run each scenario once and print its CPU per 1 MB step."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--durability", default="full", choices=("full", "batch", "none"))
    parser.add_argument("--steps", type=int, default=50)
    args = parser.parse_args()
    scenarios = {
        "result": result_wf,
        "argument": argument_wf,
        "argument, record_args=False": unrecorded_wf,
    }
    for label, wf in scenarios.items():
        _marks.clear()
        with tempfile.TemporaryDirectory() as store:
            storage = FileCheckpointStorage(store, durability=args.durability)
            start = time.process_time()
            result = asyncio.run(wf.build(checkpoint_storage=storage).run(args.steps))
            whole = time.process_time() - start
            storage.close()
        assert result.status == "completed", result.status
        steps = [b - a for a, b in itertools.pairwise(_marks)]
        print(
            f"{label:30s} median {statistics.median(steps) * 1e3:.3f} ms CPU per 1 MB step; "
            f"whole asyncio.run {whole / args.steps * 1e3:.3f} ms per step ({args.durability})"
        )


if __name__ == "__main__":
    main()
