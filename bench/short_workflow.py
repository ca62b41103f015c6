"""The short workflow ``bench/workers.py`` queues by the thousand: 3 steps of small strings.

Each step body appends one line, ``<token> <step>``, to the file named by
``$WFCTL_BENCH_STEP_LOG`` (when set) with a single ``O_APPEND`` write, so the benchmark can
check that every step of every run ran exactly once across all the workers.
"""

from __future__ import annotations

import os

from wfctl import step, workflow

#: Steps per run.
STEPS = 3


def _record(token: str, index: int) -> None:
    path = os.environ.get("WFCTL_BENCH_STEP_LOG")
    if path:
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            os.write(fd, f"{token} {index}\n".encode())
        finally:
            os.close(fd)


@step
async def stage(text: str) -> str:
    """Step ``k`` of a run turns ``token|0|...|k-1`` into ``token|0|...|k``."""
    token, *done = text.split("|")
    _record(token, len(done))
    return f"{text}|{len(done)}"


@workflow(name="bench_short")
async def short(token: str) -> str:
    """Three steps in turn, each on the previous one's result."""
    text = token
    for _ in range(STEPS):
        text = await stage(text)
    return text
