"""What every engine module shares: the workload, the job, the measurement and store inspection.

The workload is the same for every engine: one step whose argument is a distinct 100-character
string and whose result is another 100-character string. Each engine module wraps
:func:`run_step` in its own step decorator, so the work done inside a step is identical and the
benchmark measures only what the engine adds around it (bookkeeping, encoding, persistence).
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Awaitable, Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, TypeVar

__all__ = [
    "BIG_CHARS",
    "PAYLOAD_CHARS",
    "Job",
    "Measurement",
    "NotApplicable",
    "big_result",
    "disk_usage",
    "executed_steps",
    "expected_outputs",
    "lineage",
    "load_state",
    "payload",
    "run_step",
    "save_state",
    "timed",
]

T = TypeVar("T")

#: Length of every step argument and every step result.
PAYLOAD_CHARS = 100
#: Length of a step result in the big-payload scenario (1 MB of ASCII).
BIG_CHARS = 1_000_000
_FILLER = "abcdefghijklmnopqrstuvwxyz0123456789" * 3
_STATE_FILE = "bench-state.json"
_executed = 0
_BIG_FILLER = (_FILLER * (BIG_CHARS // len(_FILLER) + 1))[: BIG_CHARS - 14]


class NotApplicable(Exception):
    """Raised by an engine for a scenario it cannot express (e.g. an in-memory saver restored
    from another process); the row then says "n/a" with the reason instead of a number."""


@dataclass(frozen=True)
class Job:
    """One measurement to make: which engine variant, which scenario phase, how big, where.

    ``phase`` is ``"run"`` for single-process scenarios; cross-process scenarios use
    ``"setup"``/``"measure"`` (restore) and ``"pause"``/``"resume"`` (pause_resume).
    """

    engine: str
    variant: str
    scenario: str
    phase: str
    n: int
    store: Path
    options: Mapping[str, Any] = field(default_factory=dict)


@dataclass
class Measurement:
    """What one worker process reports: a time and what the engine left on disk.

    ``None`` means "not measured for this engine/scenario"; the table shows a dash.
    """

    seconds: float | None = None
    records: int | None = None
    files: int | None = None
    bytes: int | None = None
    largest_file: int | None = None
    roots: int | None = None
    unreachable: int | None = None
    executed: int | None = None
    run_status: str | None = None
    problems: list[str] = field(default_factory=list)
    detail: dict[str, Any] = field(default_factory=dict)

    def check(self, condition: bool, problem: str) -> None:
        """Record ``problem`` unless ``condition`` holds (a wrong result, not a slow one)."""
        if not condition:
            self.problems.append(problem)

    def check_output(self, actual: object, expected: object) -> None:
        """Record a wrong output, showing the start of what was returned."""
        self.check(actual == expected, f"wrong output: {repr(actual)[:160]}")

    def to_json(self) -> dict[str, Any]:
        """Return the measurement as a plain JSON object (problems are reported as the note)."""
        fields = asdict(self)
        del fields["problems"]
        return fields


def payload(i: int) -> str:
    """Return the distinct 100-character argument of call number ``i``."""
    return f"call-{i:09d}-{_FILLER}"[:PAYLOAD_CHARS]


def big_result(i: int) -> str:
    """Return the distinct 1 MB result of big-payload call number ``i`` (counted as run)."""
    global _executed
    _executed += 1
    return f"big-{i:09d}-" + _BIG_FILLER


def run_step(text: str) -> str:
    """Do the step's work (count it, return a 100-character string derived from ``text``)."""
    global _executed
    _executed += 1
    return text[::-1]


def executed_steps() -> int:
    """Return how many step bodies actually ran in this process (cache hits do not count)."""
    return _executed


def expected_outputs(n: int) -> list[str]:
    """Return what the ``n`` step calls of the workload must return, in call order."""
    return [payload(i)[::-1] for i in range(n)]


async def timed(awaitable: Awaitable[T]) -> tuple[T, float]:
    """Await ``awaitable`` and return its result with the wall time it took, in seconds."""
    start = time.perf_counter()
    result = await awaitable
    return result, time.perf_counter() - start


def disk_usage(root: Path) -> tuple[int, int, int]:
    """Return ``(files, total bytes, largest file bytes)`` of everything under ``root``."""
    sizes = [
        os.stat(os.path.join(folder, name)).st_size
        for folder, _, names in os.walk(root)
        for name in names
        if name != _STATE_FILE
    ]
    return len(sizes), sum(sizes), max(sizes, default=0)


def lineage(parents: Mapping[str, str | None], head: str | None) -> tuple[int, int]:
    """Return ``(roots, unreachable)`` for checkpoints given as ``id -> parent id``.

    A root is a checkpoint without a parent; unreachable checkpoints are those that walking the
    parent links back from ``head`` (the engine's latest checkpoint) never visits.
    """
    roots = sum(1 for parent in parents.values() if parent is None)
    reachable: set[str] = set()
    node = head
    while node is not None and node in parents and node not in reachable:
        reachable.add(node)
        node = parents[node]
    return roots, len(parents) - len(reachable)


def save_state(store: Path, **values: Any) -> None:
    """Leave values (checkpoint and request ids) for the next process of a scenario."""
    (store / _STATE_FILE).write_text(json.dumps(values), encoding="utf-8")


def load_state(store: Path) -> dict[str, Any]:
    """Read what the previous process of this scenario left with :func:`save_state`."""
    state: dict[str, Any] = json.loads((store / _STATE_FILE).read_text(encoding="utf-8"))
    return state
