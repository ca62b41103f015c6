"""A plain source run (never paused and resumed, never restored) is verified whole before its
replay starts, and its step records are read as the replay's calls ask for them.

Each replay is compared with the same replay of the same source read whole first (the store's
``plain_run`` taken away), which is how every other source is read. A step of the replay runs
only once every record was read; a record that cannot be read, or that is not the one read
before the replay started, refuses the replay as the whole read refuses it, and its run is
withdrawn. They import internals on purpose: ``read_source`` and ``start_replay`` are what
``wfctl replay`` uses, ``StepLines`` what the file store reads the keys with.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import arun
from tests.harness.hostile_cases import edit_record, sign
from tests.inspect.test_replay_live_rows import branches, produce, with_failure
from wfctl import FileCheckpointStorage, step, workflow
from wfctl._engine._restore import load_source
from wfctl._engine._run import RunOptions
from wfctl._engine._workflow import Workflow
from wfctl._errors import CheckpointCorruptError
from wfctl._inspect._diff import StepDiff
from wfctl._inspect._replay import ReplaySource, read_source, replay, start_replay
from wfctl._inspect._replay_report import ReplayReport
from wfctl._records._recorded import StepRecord
from wfctl._storage import _step_lines

#: Whether the source was read whole when each probe call ran (the replay's live step).
_read_whole_at_probe: list[bool] = []
#: The source being replayed, for the probe to look at.
_source_now: list[ReplaySource] = []


@step
async def keyed(i: int) -> dict[str, Any]:
    return {"key": f"k{i}", "data": {"steps": [{"key": "not a step"}]}}


@step
async def probe(n: int) -> int:
    if _source_now:
        feed = _source_now[0].feed
        _read_whole_at_probe.append(feed is not None and feed.done)
    return n


@workflow(name="plain_sequential")
async def sequential(n: int) -> int:
    total = 0
    for i in range(n):
        total += len(await produce(i))
    return await probe(total)


@workflow(name="plain_keyed")
async def keyed_results(n: int) -> int:
    return sum([len(await keyed(i)) for i in range(n)])


#: Gates that make the source run's identical calls end in reverse order (empty: no waiting).
_gates: list[asyncio.Event] = []
_called: list[int] = []


@step
async def stamp() -> int:
    i = len(_called)
    _called.append(i)
    if _gates:
        await _gates[i].wait()  # call i ends once call i + 1 did
        if i:
            _gates[i - 1].set()
    return i * 10


@workflow(name="plain_identical")
async def identical_calls(n: int) -> list[int]:
    return list(await asyncio.gather(*(stamp() for _ in range(n))))


class Sink:
    """Keeps the rows handed out while the replay runs, and whether the source was read whole
    when the first came."""

    def __init__(self, source: ReplaySource) -> None:
        self.rows: list[StepDiff] = []
        self.source = source
        self.read_whole_at_first: bool | None = None

    def start(self, source_run_id: str, source_checkpoint_id: str, widest_key: int) -> None:
        pass

    def row(self, row: StepDiff) -> None:
        if not self.rows:
            feed = self.source.feed
            self.read_whole_at_first = feed is None or feed.done
        self.rows.append(row)


def _storage(tmp_path: Path) -> FileCheckpointStorage:
    return FileCheckpointStorage(tmp_path / "store", durable=False)


def _whole(storage: FileCheckpointStorage) -> FileCheckpointStorage:
    """The same store, read as a store that cannot tell a plain run is read: whole first."""
    storage.plain_run = None  # type: ignore[assignment,method-assign]
    return storage


def _comparable(report: ReplayReport) -> dict[str, Any]:
    document = report.to_json()
    for varies in ("replay_run_id", "replay_checkpoint_id", "replay_head_checkpoint_id"):
        document.pop(varies, None)
    return document


async def _plain_replay(
    wf: Workflow, checkpoint: str, options: RunOptions
) -> tuple[ReplaySource, Sink, ReplayReport]:
    source = await read_source(wf.storage, checkpoint)
    sink = Sink(source)
    _source_now[:] = [source]
    try:
        rows = await start_replay(wf, checkpoint, source, options, rows_to=sink)
        rest = [row async for row in rows]
    finally:
        _source_now.clear()
    return source, sink, rows.finished((*sink.rows, *rest))


CASES = [
    ("sequential", sequential, 30, "head"),
    ("sequential-mid", sequential, 30, "src.12"),
    ("sequential-root", sequential, 3, "src.0"),
    ("branches", branches, 12, "head"),
    ("failure", with_failure, 8, "head"),
    ("failure-mid", with_failure, 8, "src.2"),
    ("keyed", keyed_results, 6, "head"),
]


@pytest.mark.parametrize("execute", [True, False])
@pytest.mark.parametrize("seed", [None, 1])
@pytest.mark.parametrize(("name", "flow", "n", "at"), CASES, ids=[case[0] for case in CASES])
def test_a_plain_source_gives_the_report_of_the_whole_read(
    tmp_path: Path, name: str, flow: Any, n: int, at: str, seed: int | None, execute: bool
) -> None:
    storage = _storage(tmp_path)
    wf = flow.build(checkpoint_storage=storage)
    head = arun(wf.run(n, run_id="src")).checkpoint_id
    checkpoint = head if at == "head" else at
    options = RunOptions(execute=execute, shuffle_seed=seed)

    source, _, plain = arun(_plain_replay(wf, checkpoint, options))

    assert source.feed is not None and source.feed.done
    whole_wf = flow.build(checkpoint_storage=_whole(_storage(tmp_path)))
    whole = arun(replay(whole_wf, checkpoint, execute=execute, shuffle_seed=seed))
    assert _comparable(plain) == _comparable(whole)


def test_the_first_rows_come_while_most_of_the_source_is_unread(tmp_path: Path) -> None:
    wf = sequential.build(checkpoint_storage=_storage(tmp_path))
    arun(wf.run(200, run_id="src"))
    _read_whole_at_probe.clear()

    _, sink, report = arun(_plain_replay(wf, "src.200", RunOptions()))

    assert sink.read_whole_at_first is False
    assert len(sink.rows) == 200 and report.identical
    # probe's record is past the checkpoint: it ran live, once every record had been read.
    assert _read_whole_at_probe == [True]


def test_step_lines_read_the_keys_and_failures_the_whole_read_reads(tmp_path: Path) -> None:
    storage = _storage(tmp_path)
    heads = {
        "seq": arun(sequential.build(checkpoint_storage=storage).run(20, run_id="seq")),
        "branches": arun(branches.build(checkpoint_storage=storage).run(9, run_id="branches")),
        "failure": arun(with_failure.build(checkpoint_storage=storage).run(7, run_id="failure")),
        "keyed": arun(keyed_results.build(checkpoint_storage=storage).run(4, run_id="keyed")),
    }
    for run_id, done in heads.items():
        plain = storage.plain_run(run_id, 0)
        assert plain is not None, run_id
        records: list[StepRecord] = []
        _, _, whole, _ = arun(load_source(storage, done.checkpoint_id, records.append))
        keys = [record.key for record in records]
        assert list(plain.lines.keys) == keys, run_id
        assert plain.lines.widest == max(map(len, keys))
        assert plain.lines.failures == whole.failures, run_id
        plain.records.close()  # type: ignore[attr-defined]


def _journal(tmp_path: Path, run_id: str = "src") -> Path:
    return tmp_path / "store" / "runs" / run_id / "journal.jsonl"


def _edit_line(journal: Path, index: int, change: Any) -> None:
    lines = journal.read_bytes().split(b"\n")
    lines[index] = edit_record(lines[index], change)
    journal.write_bytes(b"\n".join(lines))


def test_runs_that_are_not_plain_are_read_whole(tmp_path: Path) -> None:
    storage = _storage(tmp_path)
    wf = sequential.build(checkpoint_storage=storage)
    head = arun(wf.run(4, run_id="src")).checkpoint_id
    again = arun(replay(wf, head))  # restored from src: its root names its origin
    assert storage.plain_run(again.replay_run_id, 0) is None

    # A key recorded twice (written by hand: wfctl never does in a plain run).
    def repeat_first_key(raw: dict[str, Any]) -> None:
        raw["data"]["steps"][0]["key"] = "produce#0"

    _edit_line(_journal(tmp_path), 2, repeat_first_key)
    assert storage.plain_run("src", 0) is None
    source = arun(read_source(storage, head))
    assert source.feed is None and source.index.last  # read whole: the key's last record


def test_too_many_lines_to_decode_read_the_run_whole(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    storage = _storage(tmp_path)
    arun(keyed_results.build(checkpoint_storage=storage).run(4, run_id="keyed"))
    monkeypatch.setattr(_step_lines, "DECODED_AT_MOST", 3)  # each result holds "key" members
    assert storage.plain_run("keyed", 0) is None
    monkeypatch.setattr(_step_lines, "DECODED_AT_MOST", 4)
    assert storage.plain_run("keyed", 0) is not None


def _runs(storage: FileCheckpointStorage) -> list[str]:
    return sorted(run.run_id for run in arun(storage.list_runs()))


@pytest.mark.parametrize(("at", "line"), [("src.12", 5), ("src.12", 20), ("head", 30)])
def test_a_record_that_cannot_be_read_refuses_the_replay_and_withdraws_its_run(
    tmp_path: Path, at: str, line: int
) -> None:
    # A step record whose checksum holds and whose timing is not a number: read while the
    # replay is served (before the checkpoint, near its start or its end), or after the
    # checkpoint (once a call must run: probe never does).
    storage = _storage(tmp_path)
    wf = sequential.build(checkpoint_storage=storage)
    head = arun(wf.run(30, run_id="src")).checkpoint_id
    checkpoint = head if at == "head" else at
    _edit_line(_journal(tmp_path), line - 1, lambda raw: raw["data"]["steps"][0].update(dt="x"))
    _read_whole_at_probe.clear()

    async def refused() -> None:
        await _plain_replay(wf, checkpoint, RunOptions())

    with pytest.raises(CheckpointCorruptError, match=rf"src\.{line - 1}: step .*invalid timing"):
        arun(refused())
    assert _runs(storage) == ["src"]  # the replay's run was withdrawn
    assert _read_whole_at_probe == []  # no step ran


def test_a_source_replaced_once_its_keys_were_read_is_refused(tmp_path: Path) -> None:
    storage = _storage(tmp_path)
    wf = sequential.build(checkpoint_storage=storage)
    head = arun(wf.run(5, run_id="src")).checkpoint_id

    async def replaced() -> None:
        source = await read_source(storage, head)
        assert await storage.delete_run("src")
        await branches.build(checkpoint_storage=storage).run(6, run_id="src")
        await start_replay(wf, head, source, RunOptions())

    with pytest.raises(CheckpointCorruptError, match="not the record read before the replay"):
        arun(replaced())
    assert _runs(storage) == ["src"]


def test_step_lines_read_a_key_with_escapes_or_other_characters(tmp_path: Path) -> None:
    storage = _storage(tmp_path)
    arun(sequential.build(checkpoint_storage=storage).run(3, run_id="src"))
    journal = _journal(tmp_path)
    keys = ['produce#0 "quoted"', "produce#1 ünï", "produce#2", "probe#0"]
    for index, key in enumerate(keys[:2], start=1):
        _edit_line(journal, index, lambda raw, key=key: raw["data"]["steps"][0].update(key=key))
    plain = storage.plain_run("src", 0)
    assert plain is not None
    assert list(plain.lines.keys) == keys
    assert plain.lines.widest == max(map(len, keys))
    plain.records.close()  # type: ignore[attr-defined]


def test_a_line_that_is_not_json_is_refused_when_it_is_read(tmp_path: Path) -> None:
    # Its checksum holds and its start reads as a step record's: the keys are read from its
    # bytes, and decoding it says what is wrong, before any step runs.
    storage = _storage(tmp_path)
    wf = sequential.build(checkpoint_storage=storage)
    head = arun(wf.run(6, run_id="src")).checkpoint_id
    journal = _journal(tmp_path)
    lines = journal.read_bytes().split(b"\n")
    raw = json.loads(lines[3])
    raw["data"]["steps"][0]["result"] = "@BROKEN@"
    lines[3] = sign(raw, replace=('"@BROKEN@"', "[1,,2]"))
    journal.write_bytes(b"\n".join(lines))

    with pytest.raises(CheckpointCorruptError, match=r"journal\.jsonl:4: invalid JSON"):
        arun(_plain_replay(wf, head, RunOptions()))
    assert _runs(storage) == ["src"]


def test_identical_calls_recorded_in_reverse_are_each_served_their_own_record(
    tmp_path: Path,
) -> None:
    # Six calls of one step with the same arguments (one digest), recorded last first: each
    # call is served the record of its own key, so the record read first (the last call's)
    # waits for its call, and the first call for its own record.
    wf = identical_calls.build(checkpoint_storage=_storage(tmp_path))

    async def source() -> str:
        _called.clear()
        _gates[:] = [asyncio.Event() for _ in range(6)]
        _gates[-1].set()
        try:
            return (await wf.run(6, run_id="src")).checkpoint_id
        finally:
            _gates.clear()

    head = arun(source())
    _, _, plain = arun(_plain_replay(wf, head, RunOptions()))

    assert plain.outputs_replay == [[0, 10, 20, 30, 40, 50]] and plain.identical
    whole = arun(replay(identical_calls.build(checkpoint_storage=_whole(_storage(tmp_path))), head))
    assert _comparable(plain) == _comparable(whole)
