"""A replay's memory: what it holds of its source run while the replay runs and is compared.

They import internals on purpose: ``wfctl._inspect._replay.replay`` is the library function behind
``wfctl replay``.
"""

from __future__ import annotations

from pathlib import Path

from tests.conftest import arun, traced_peak
from wfctl import FileCheckpointStorage, step, workflow
from wfctl._inspect._replay import ReplayReport, replay


@step
async def produce(i: int) -> str:
    return f"v{i}"


@workflow(name="replay_memory")
async def long_run(n: int) -> int:
    total = 0
    for i in range(n):
        total += len(await produce(i))
    return total


def _replay_peak(tmp_path: Path, steps: int) -> int:
    """Run ``steps`` steps, then return the traced peak of a replay from the run's head."""
    storage = FileCheckpointStorage(tmp_path / str(steps), durable=False)
    wf = long_run.build(checkpoint_storage=storage)
    arun(wf.run(steps, run_id="src"))
    reports: list[ReplayReport] = []
    peak = traced_peak(lambda: reports.append(arun(replay(wf, f"src.{steps + 1}"))))
    assert reports[0].identical and reports[0].counts["cached"] == steps
    return peak


def test_a_replay_holds_no_step_checkpoint_of_its_source(tmp_path: Path) -> None:
    # The replay read its source chain whole and held it to the end, every step's checkpoint
    # decoded, beside every event of the replay: 2.1 KB a step of this run (tracemalloc
    # counts bytes: deterministic). It now folds the chain as it reads it and keeps no event
    # history: 1.0 KB. Bound: 1.5 KB.
    small, large = _replay_peak(tmp_path, 500), _replay_peak(tmp_path, 3_000)
    assert (large - small) / 2_500 < 1_500, (small, large)
