"""CPU time per 1 MB step: a result, an argument, an argument with ``record_args=False``.

Runs 50 sequential steps that each return (or receive) a distinct 1 MB string, in one
process, and prints the median ``time.process_time`` per step (CPU time, which a busy machine
disturbs less than wall time, and which includes the kernel's time for the process's own
``write`` and ``fdatasync``) and the whole ``asyncio.run`` per step, which adds what happens
after the body (the run's end, and asyncio.run's own handling of the result).
The step body's own work (building 1 MB) is included, as a user's would be; the ``body``
column gives its median alone.

Each row is run twice: with 1 MB payloads and with ``--small``-byte payloads. The difference
of the two medians is the CPU a megabyte adds to a step (the ``per MB`` column), which leaves
out the per-step cost every step pays whatever its size. Its ``wall`` is the same difference
in ``time.perf_counter``. The ``floor`` line is the kernel's share measured the same way: one
``os.write`` of 1 MB to a journal in the same directory, with the ``fdatasync`` the
durability mode pays (every write for ``full``, every 16th for ``batch``, none for ``none``).

The run's result keeps the most recent events holding up to 4 MiB of values (the library's
default), so the last 4 or so results stay alive; before that bound existed every result
did, and every 1 MB was fresh memory whose page faults landed on whoever first wrote into
it (usually the record's encoder). ``--event-history 0`` keeps no event at all.

Usage::

    python bench/payload_cpu.py [--durability full|batch|none] [--steps 50]
        [--event-history N] [--small 100]
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import os
import statistics
import tempfile
import time
from collections.abc import Awaitable, Callable
from typing import Any

from wfctl import FileCheckpointStorage, step, workflow

_MB = 1_000_000
_fill = "x" * _MB
_marks: list[tuple[float, float]] = []
_body: list[float] = []


def _payload(prefix: str, i: int) -> str:
    return f"{prefix}-{i:09d}-" + _fill[14:]


@step
async def make(i: int) -> str:
    start = time.process_time()
    value = _payload("big", i)
    _body.append(time.process_time() - start)
    return value


@step
async def take(text: str) -> int:
    return len(text)


@step(record_args=False)
async def take_unrecorded(text: str) -> int:
    return len(text)


def _tick() -> None:
    _marks.append((time.process_time(), time.perf_counter()))


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
    start = time.process_time()
    value = _payload("arg", i)
    _body.append(time.process_time() - start)
    return value


@workflow(name="payload_result")
async def result_wf(n: int) -> int:
    return await _steps(n, _result_len)


@workflow(name="payload_argument")
async def argument_wf(n: int) -> int:
    return await _steps(n, lambda i: take(_argument(i)))


@workflow(name="payload_argument_unrecorded")
async def unrecorded_wf(n: int) -> int:
    return await _steps(n, lambda i: take_unrecorded(_argument(i)))


def _scenario(wf: Any, size: int, args: argparse.Namespace) -> tuple[float, float, float, float]:
    """Return the median CPU and wall per step, the whole run's CPU per step, the body's CPU."""
    global _fill
    _fill = "x" * size
    _marks.clear()
    _body.clear()
    options: dict[str, Any] = {}
    if args.event_history is not None:
        options["event_history"] = args.event_history
    with tempfile.TemporaryDirectory(dir=args.dir) as store:
        storage = FileCheckpointStorage(store, durability=args.durability)
        start = time.process_time()
        result = asyncio.run(wf.build(checkpoint_storage=storage).run(args.steps, **options))
        whole = time.process_time() - start
        storage.close()
    assert result.status == "completed", result.status
    cpu = statistics.median(b[0] - a[0] for a, b in itertools.pairwise(_marks))
    wall = statistics.median(b[1] - a[1] for a, b in itertools.pairwise(_marks))
    return cpu, wall, whole / args.steps, statistics.median(_body)


def _floor(args: argparse.Namespace) -> tuple[float, float]:
    """Return the median CPU and wall of appending 1 MB with the mode's ``fdatasync``."""
    every = {"full": 1, "batch": 16, "none": 0}[args.durability]
    cpu: list[float] = []
    wall: list[float] = []
    with tempfile.TemporaryDirectory(dir=args.dir) as store:
        fd = os.open(os.path.join(store, "journal"), os.O_WRONLY | os.O_CREAT | os.O_APPEND)
        try:
            for i in range(args.steps):
                data = f"flr-{i:09d}-".encode() + b"x" * (_MB - 14)
                start, clock = time.process_time(), time.perf_counter()
                os.write(fd, data)
                if every and (i + 1) % every == 0:
                    os.fdatasync(fd)
                cpu.append(time.process_time() - start)
                wall.append(time.perf_counter() - clock)
        finally:
            os.close(fd)
    return statistics.median(cpu), statistics.median(wall)


def main() -> None:
    """Run each scenario at 1 MB and at the small size and print its CPU per 1 MB step."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--durability", default="full", choices=("full", "batch", "none"))
    parser.add_argument("--steps", type=int, default=50)
    parser.add_argument("--event-history", type=int, default=None)
    parser.add_argument("--small", type=int, default=100, help="bytes of the small payloads")
    parser.add_argument("--dir", default=None, help="where the temporary stores go")
    args = parser.parse_args()
    scenarios = {
        "result": result_wf,
        "argument": argument_wf,
        "argument, record_args=False": unrecorded_wf,
    }
    ms = 1e3
    for label, wf in scenarios.items():
        cpu, wall, whole, body = _scenario(wf, _MB, args)
        small_cpu, small_wall, _, _ = _scenario(wf, args.small, args)
        print(
            f"{label:30s} median {cpu * ms:.3f} ms CPU per 1 MB step; "
            f"whole asyncio.run {whole * ms:.3f} ms per step ({args.durability}); "
            f"per MB {(cpu - small_cpu) * ms:.3f} ms CPU, {(wall - small_wall) * ms:.3f} ms wall; "
            f"{args.small}-byte step {small_cpu * ms:.3f} ms; body {body * ms:.3f} ms"
        )
    cpu, wall = _floor(args)
    print(
        f"{'floor (os.write of 1 MB)':30s} median {cpu * ms:.3f} ms CPU, {wall * ms:.3f} ms wall "
        f"({args.durability}: fdatasync "
        f"{ {'full': 'every write', 'batch': 'every 16th', 'none': 'never'}[args.durability] })"
    )


if __name__ == "__main__":
    main()
