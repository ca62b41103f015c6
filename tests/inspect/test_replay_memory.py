"""A replay's memory and its rows as they come: what it holds of its source run while the replay
runs and is compared, and how much of the source it has read when its first row comes.

They import internals on purpose: ``wfctl._inspect._replay`` holds the library functions behind
``wfctl replay`` (``read_source``, ``start_replay``: the rows one at a time).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

from tests.conftest import arun, traced_peak
from wfctl import FileCheckpointStorage, step, workflow
from wfctl._engine._run import RunOptions
from wfctl._inspect._replay import read_source, replay, start_replay
from wfctl._records._checkpoint import Checkpoint
from wfctl._storage import RunSummary


@step
async def produce(i: int) -> str:
    return f"v{i}"


@workflow(name="replay_memory")
async def long_run(n: int) -> int:
    total = 0
    for i in range(n):
        total += len(await produce(i))
    return total


class CountingStorage(FileCheckpointStorage):
    """A file store that counts the checkpoints its streamed reads have decoded."""

    decoded = 0

    def stream_chain(self, run_id: str) -> tuple[RunSummary, Iterator[Checkpoint]]:
        summary, records = super().stream_chain(run_id)

        def counted() -> Iterator[Checkpoint]:
            for checkpoint in records:
                self.decoded += 1
                yield checkpoint

        return summary, counted()


async def _streamed(storage: FileCheckpointStorage, head: str) -> tuple[int, dict[str, int]]:
    """Replay ``head`` from the source run ``src``, iterating its rows without keeping them;
    return how many rows came and their counts."""
    wf = long_run.build(checkpoint_storage=storage)
    source = await read_source(storage, head)
    rows = await start_replay(wf, head, source, RunOptions())
    count = 0
    async for _ in rows:
        count += 1
    report = rows.finished()
    assert report.identical
    return count, dict(report.counts)


def _replay_peak(tmp_path: Path, steps: int) -> int:
    """Run ``steps`` steps, then return the traced peak of a replay from the run's head."""
    storage = FileCheckpointStorage(tmp_path / str(steps), durable=False)
    arun(long_run.build(checkpoint_storage=storage).run(steps, run_id="src"))
    counted: list[tuple[int, dict[str, int]]] = []
    peak = traced_peak(lambda: counted.append(arun(_streamed(storage, f"src.{steps + 1}"))))
    assert counted[0][0] == steps and counted[0][1]["cached"] == steps
    return peak


def test_a_replay_holds_no_step_checkpoint_of_its_source(tmp_path: Path) -> None:
    # The replay read its source chain whole and held it to the end, every step's checkpoint
    # decoded, beside every event of the replay and every row: 2.3 KB a step of this run
    # (tracemalloc counts bytes: deterministic). It now folds the chain as it reads it, hands
    # the engine only what it may serve (packed), keeps no event history and gives each row
    # as it is compared: 0.5 KB, at the source's read (its journal verified in one read, the
    # keys gathered for the table, the records packed for the engine). Bound: 0.8 KB.
    small, large = _replay_peak(tmp_path, 2_000), _replay_peak(tmp_path, 8_000)
    assert (large - small) / 6_000 < 800, (small, large)


def test_the_first_row_comes_before_the_source_is_read_again(tmp_path: Path) -> None:
    storage = CountingStorage(tmp_path, durable=False)
    wf = long_run.build(checkpoint_storage=storage)
    arun(wf.run(200, run_id="src"))

    async def first_row() -> tuple[int, int]:
        source = await read_source(storage, "src.201")
        rows = await start_replay(wf, "src.201", source, RunOptions())
        storage.decoded = 0
        async for row in rows:
            assert (row.key, row.status) == ("produce#0", "cached")
            at_first = storage.decoded
            break
        return at_first, storage.decoded

    at_first, after = arun(first_row())
    # The root and the first step's checkpoint (202 in the run), then nothing more: the rows
    # stopped there.
    assert at_first == 2 and after == 2
    whole = arun(replay(wf, "src.201"))
    assert len(whole.steps) == 200 and whole.identical
