"""A replay's first rows come while it runs: those of the records it is served, in the source's
order, each handed out once every record before it has had its row.

Each case compares the rows handed out while the replay ran, followed by those iterated after
it, with the rows of the library's whole report (``replay``) of the same checkpoint. They import
internals on purpose: ``start_replay`` and its ``rows_to`` are what ``wfctl replay`` uses.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import arun
from wfctl import FileCheckpointStorage, step, workflow
from wfctl._engine._run import RunOptions
from wfctl._engine._workflow import Workflow
from wfctl._errors import CheckpointCorruptError
from wfctl._inspect import _replay_rows
from wfctl._inspect._diff import StepDiff
from wfctl._inspect._pairing import SourceIndex
from wfctl._inspect._replay import read_source, replay, start_replay
from wfctl._records._recorded import StepRecord

#: The rows the sink of the replay under way had when ``probe`` ran in it (None: not yet).
_seen_by_probe: list[list[str]] = []


class Sink:
    """Keeps the rows handed out while the replay runs, and what it was told first."""

    def __init__(self, fail_at: int | None = None) -> None:
        self.rows: list[StepDiff] = []
        self.started: tuple[str, str, int] | None = None
        self.fail_at = fail_at

    def start(self, source_run_id: str, source_checkpoint_id: str, widest_key: int) -> None:
        assert not self.rows
        self.started = (source_run_id, source_checkpoint_id, widest_key)

    def row(self, row: StepDiff) -> None:
        if self.fail_at is not None and len(self.rows) == self.fail_at:
            raise BrokenPipeError("stdout is gone")
        self.rows.append(row)


@step
async def produce(i: int) -> str:
    return f"v{i}"


@step
async def probe(n: int) -> int:
    # Runs live in the replay (its record is past the checkpoint): what came out before it?
    if _sink_now:
        _seen_by_probe.append([row.key for row in _sink_now[0].rows])
    return n


@step
async def boom(i: int) -> str:
    raise ValueError(f"boom {i}")


_sink_now: list[Sink] = []

#: Gates that make the source run's branches end in reverse order (empty: no waiting).
_gates: list[asyncio.Event] = []


@step
async def last_first(i: int) -> str:
    if _gates:
        await _gates[i].wait()  # branch i ends once branch i + 1 did
        if i:
            _gates[i - 1].set()
    return f"r{i}"


@workflow(name="live_rows_reversed")
async def reversed_branches(n: int) -> list[str]:
    return list(await asyncio.gather(*(last_first(i) for i in range(n))))


@workflow(name="live_rows_sequential")
async def sequential(n: int) -> int:
    total = 0
    for i in range(n):
        total += len(await produce(i))
    return await probe(total)


@workflow(name="live_rows_branches")
async def branches(n: int) -> list[str]:
    first = await asyncio.gather(*(produce(i) for i in range(n)))
    return [*first, await produce(n)]


@workflow(name="live_rows_failure")
async def with_failure(n: int) -> int:
    total = len(await produce(0))
    try:
        await boom(1)
    except ValueError:
        total += 1
    for i in range(2, n):
        total += len(await produce(i))
    return total


def _storage(tmp_path: Path) -> FileCheckpointStorage:
    return FileCheckpointStorage(tmp_path / "store", durable=False)


async def _live_then_rest(
    wf: Workflow, checkpoint: str, sink: Sink, seed: int | None = None
) -> tuple[list[StepDiff], Any]:
    """Replay ``checkpoint`` with ``sink`` for the rows it decides while it runs; return the
    rows iterated after it, and the finished report."""
    source = await read_source(wf.storage, checkpoint)
    rows = await start_replay(wf, checkpoint, source, RunOptions(shuffle_seed=seed), rows_to=sink)
    rest = [row async for row in rows]
    return rest, rows.finished()


def _as_json(rows: list[StepDiff]) -> list[dict[str, Any]]:
    return [row.to_json() for row in rows]


def test_the_rows_of_served_records_come_before_the_first_call_that_runs(tmp_path: Path) -> None:
    wf = sequential.build(checkpoint_storage=_storage(tmp_path))
    arun(wf.run(5, run_id="src"))
    sink = Sink()
    _sink_now[:] = [sink]
    _seen_by_probe.clear()
    try:
        # From the fifth step's checkpoint: five records serve the replay, then probe runs.
        rest, report = arun(_live_then_rest(wf, "src.5", sink))
    finally:
        _sink_now.clear()

    assert sink.started == ("src", "src.5", len("produce#0"))
    assert _seen_by_probe == [[f"produce#{i}" for i in range(5)]]  # all out before probe ran
    assert [(row.key, row.status) for row in sink.rows] == [
        (f"produce#{i}", "cached") for i in range(5)
    ]
    assert [(row.key, row.status) for row in rest] == [("probe#0", "same")]
    whole = arun(replay(wf, "src.5"))
    assert _as_json(sink.rows + rest) == _as_json(list(whole.steps))
    assert report.counts == whole.counts and report.identical


@pytest.mark.parametrize("seed", [None, 0, 1, 2, 3])
def test_branches_served_out_of_the_source_s_order_give_the_same_rows(
    tmp_path: Path, seed: int | None
) -> None:
    wf = branches.build(checkpoint_storage=_storage(tmp_path))
    done = arun(wf.run(12, run_id="src"))
    head = done.checkpoint_id
    sink = Sink()

    rest, report = arun(_live_then_rest(wf, head, sink, seed))

    whole = arun(replay(wf, head, shuffle_seed=seed))
    assert _as_json(sink.rows + rest) == _as_json(list(whole.steps))
    assert len(sink.rows) == 13 and not rest  # every record served: every row came live
    assert report.identical and report.counts == whole.counts


def _reversed_source(tmp_path: Path, n: int) -> tuple[Workflow, str]:
    """A run whose ``n`` branches were called in order and ended (were recorded) in reverse."""
    wf = reversed_branches.build(checkpoint_storage=_storage(tmp_path))

    async def source() -> str:
        _gates[:] = [asyncio.Event() for _ in range(n)]
        _gates[-1].set()
        try:
            return (await wf.run(n, run_id="src")).checkpoint_id
        finally:
            _gates.clear()

    return wf, arun(source())


@pytest.mark.parametrize("ahead", [None, 1])
def test_records_served_ahead_of_the_source_s_order_wait_for_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, ahead: int | None
) -> None:
    # The replay calls the branches in order and is served each at once: the first record of
    # the source serves its last call. Held until then, or (room for one record ahead) let go:
    # then every row comes after the replay.
    if ahead is not None:
        monkeypatch.setattr(_replay_rows, "_HELD_AHEAD", ahead)
    wf, head = _reversed_source(tmp_path, 6)
    sink = Sink()

    rest, report = arun(_live_then_rest(wf, head, sink))

    whole = arun(replay(wf, head))
    assert [row.key for row in whole.steps] == [f"last_first#{i}" for i in reversed(range(6))]
    assert _as_json(sink.rows + rest) == _as_json(list(whole.steps))
    assert len(sink.rows) == (6 if ahead is None else 0)
    assert report.identical


def test_the_live_rows_stop_where_a_source_failure_stands(tmp_path: Path) -> None:
    wf = with_failure.build(checkpoint_storage=_storage(tmp_path))
    head = arun(wf.run(6, run_id="src")).checkpoint_id
    sink = Sink()

    rest, report = arun(_live_then_rest(wf, head, sink))

    whole = arun(replay(wf, head))
    assert _as_json(sink.rows + rest) == _as_json(list(whole.steps))
    # produce#0, then boom#0's failure row, which the replay decides once it ran again.
    assert [row.key for row in sink.rows] == ["produce#0"]
    assert [row.key for row in rest][:2] == ["boom#0", "produce#1"]
    assert report.counts == whole.counts


def test_a_sink_that_fails_is_raised_once_the_replay_ended(tmp_path: Path) -> None:
    storage = _storage(tmp_path)
    wf = sequential.build(checkpoint_storage=storage)
    arun(wf.run(5, run_id="src"))
    sink = Sink(fail_at=2)

    with pytest.raises(BrokenPipeError, match="stdout is gone"):
        arun(_live_then_rest(wf, "src.5", sink))

    assert [row.key for row in sink.rows] == ["produce#0", "produce#1"]  # none after it
    replays = [run for run in arun(storage.list_runs()) if run.run_id != "src"]
    assert [run.status for run in replays] == ["completed"]  # the replay itself went on


def _record(key: str) -> StepRecord:
    return StepRecord(key, "", key.partition("#")[0], f"d-{key}", f"result of {key}")


def _index(keys: list[str], **fields: Any) -> SourceIndex:
    return SourceIndex(keys=dict.fromkeys(keys), widest_key=max(map(len, keys)), **fields)


def test_the_live_rows_stop_at_a_key_recorded_more_than_once() -> None:
    # b#0 was recorded twice: its row is its last record's, compared once every record is
    # read, so no row is handed out from it on, even for records served in order after it.
    sink = Sink()
    live = _replay_rows.LiveRows(_index(["a#0", "b#0", "c#0"], last={"b#0": _record("b#0")}), sink)
    for key in ("a#0", "b#0", "c#0"):
        live.served(key, _record(key))
    assert [(row.key, row.status, row.source_key) for row in sink.rows] == [
        ("a#0", "cached", "a#0")
    ]
    assert live.given == 1 and not live.open


def test_a_record_that_served_a_call_of_another_key_is_that_call_s_row() -> None:
    sink = Sink()
    live = _replay_rows.LiveRows(_index(["a#0", "b#0"]), sink)
    live.served("b#0", _record("b#0"))  # ahead: held
    assert not sink.rows
    live.served("x#0", _record("a#0"))  # the call x#0, served from a#0's record
    assert [(row.key, row.source_key) for row in sink.rows] == [("x#0", "a#0"), ("b#0", "b#0")]
    assert live.given == 2 and not live.open  # no key left


def test_a_source_changed_before_the_rest_of_the_rows_is_refused(tmp_path: Path) -> None:
    # The rows handed out while the replay ran are not compared again, but each record read
    # after it must be the one that served the call: here the run was replaced in between.
    storage = _storage(tmp_path)
    wf = sequential.build(checkpoint_storage=storage)
    head = arun(wf.run(5, run_id="src")).checkpoint_id
    sink = Sink()

    async def replaced_then_rest() -> None:
        source = await read_source(storage, head)
        rows = await start_replay(wf, head, source, RunOptions(), rows_to=sink)
        assert await storage.delete_run("src")
        await reversed_branches.build(checkpoint_storage=storage).run(7, run_id="src")
        async for _ in rows:
            pass

    with pytest.raises(CheckpointCorruptError, match="'last_first#0' is not the one that served"):
        arun(replaced_then_rest())
    assert len(sink.rows) == 6  # every row had come while the replay ran
