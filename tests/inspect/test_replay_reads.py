"""A replay reads its source twice and its own chain never: before it runs, and for its table.

The source chain used to be read three times per ``wfctl replay`` and then held whole. It is now
read once before the replay runs (for what the replay may be served) and once as the step table
is written (a row as soon as the records before it decide it), each time streamed: its journal
verified whole, then decoded a record at a time, two opens of it, nothing held whole. An origin
run is read whole once each time.

(Before that: by the command, by the replay, and by the restore, and the history gathered
three times; the replay's own chain was read back from storage although the run had just
committed it.) These tests count the journal
opens of a real ``FileCheckpointStorage`` through its I/O seam (``fs=``): every read of a run's
journal (whole, head or root) opens it with ``READ_FLAGS``.

They import internals on purpose: ``wfctl._inspect._replay.replay`` is the library function behind
``wfctl replay``, ``wfctl._drive._runner.replay_checkpoint`` the command's driver.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from tests.conftest import arun
from wfctl import FileCheckpointStorage, step, workflow
from wfctl._inspect._replay import replay
from wfctl._storage._appender import READ_FLAGS
from wfctl._storage._fs import OsFileSystem


class CountingFS(OsFileSystem):
    """The real file system, counting journal reads per run id.

    An empty journal is not counted: a new run's admission looks for a checkpoint under its
    run id (one that is taken is refused or replaced) once it holds the run's lease, whose
    journal has nothing in it yet.
    """

    def __init__(self) -> None:
        self.reads: Counter[str] = Counter()

    def open(self, path: str, flags: int, mode: int = 0o777) -> int:
        fd = super().open(path, flags, mode)
        if path.endswith("journal.jsonl") and flags == READ_FLAGS and self.fstat(fd).st_size:
            self.reads[Path(path).parent.name] += 1
        return fd


@step
async def double(n: int) -> int:
    return n * 2


@step
async def add_one(n: int) -> int:
    return n + 1


@workflow(name="reads")
async def reads(n: int = 1) -> int:
    return await add_one(await double(n))


def _storage(path: Path, fs: CountingFS) -> FileCheckpointStorage:
    return FileCheckpointStorage(path, durable=False, fs=fs)


def test_a_replay_reads_each_source_journal_once_and_its_own_never(tmp_path: Path) -> None:
    fs = CountingFS()
    wf = reads.build(checkpoint_storage=_storage(tmp_path, fs))
    source = arun(wf.run(5, run_id="src"))
    fs.reads.clear()

    first = arun(replay(wf, "src.1"))

    assert first.identical and first.replay_run_id != "src"
    # Twice, streamed (two opens each); the replay's own chain came back from its run.
    assert fs.reads == {"src": 4}
    assert [row.status for row in first.steps] == ["cached", "same"]

    fs.reads.clear()
    second = arun(replay(wf, first.replay_checkpoint_id))  # a replay of a replay

    assert second.identical
    # Each run of the lineage twice; the replayed run's first line once more, which says it
    # is not plain (it has an origin), so it is read whole before the replay.
    assert fs.reads == {first.replay_run_id: 5, "src": 2}
    assert source.get_outputs() == second.outputs_replay == [11]


FLOW = """
from wfctl import step, workflow


@step
async def double(n: int) -> int:
    return n * 2


@workflow(name="flow")
async def flow(n: int = 1) -> int:
    return await double(n)
"""


def test_the_replay_command_reads_the_source_twice(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from wfctl._drive import _runner
    from wfctl._drive._loader import load_workflow

    code, store = tmp_path / "code", tmp_path / "store"
    code.mkdir()
    (code / "reads_flow.py").write_text(FLOW, encoding="utf-8")
    fs = CountingFS()
    loaded = load_workflow(str(code / "reads_flow.py"))  # records its target, as `wfctl run`
    arun(loaded.build(checkpoint_storage=_storage(store, fs)).run(5, run_id="src"))
    fs.reads.clear()
    # The command opens its own storage from the store path: give it the counting seam.
    monkeypatch.setattr(_runner, "open_storage", lambda path, **_: _storage(path, fs))

    rows = _runner.replay_checkpoint("src.1", store=store)
    steps = list(rows)
    report = rows.finished()

    assert report.identical and report.target_recorded
    assert [row.status for row in steps] == ["cached"]
    assert fs.reads == {"src": 4}  # twice, streamed: verified, then decoded as read
