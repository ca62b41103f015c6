"""A long listing spread across forked processes gives what one process gives, whatever happens.

``wfctl._storage._spread.spread`` forks children for all parts of a long list but the first;
each child sends its results back as JSON. These tests fork for real, with the threshold
lowered; the processes are ordered by pipes (a child writes its pid, the parent blocks reading
it), never by sleeping.
"""

from __future__ import annotations

import os
import signal
import threading
from collections.abc import Sequence
from pathlib import Path

import pytest

from tests.cli.conftest import WORKFLOWS, invoke, run_id_of
from tests.conftest import arun
from tests.inspect.helpers import copy_fixture
from wfctl._inspect._lineage import verify_lineage
from wfctl._storage import FileCheckpointStorage, _spread
from wfctl._storage._base import summary_of_row, summary_row

ITEMS = list(range(40))


@pytest.fixture(autouse=True)
def _spread_small_lists(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_spread, "SPREAD_FROM", 4)  # a part of 2 items at least
    monkeypatch.setattr(os, "sched_getaffinity", lambda _pid: {0, 1, 2, 3}, raising=False)


def _tagged(part: Sequence[int]) -> list[tuple[int, int]]:
    """Each item with the pid of the process that handled it."""
    return [(item * 3, os.getpid()) for item in part]


def _spread_tagged(work: object = _tagged) -> list[tuple[int, int]]:
    return _spread.spread(work, ITEMS, list, tuple)  # type: ignore[arg-type]


def test_the_parts_are_done_by_children_and_come_back_in_order() -> None:
    results = _spread_tagged()
    assert [value for value, _ in results] == [item * 3 for item in ITEMS]
    pids = [pid for _, pid in results]
    assert pids[:10] == [os.getpid()] * 10  # four parts of ten: the first is this process's
    assert len(set(pids[10:])) == 3 and os.getpid() not in pids[10:]


@pytest.mark.parametrize("how", ["raises", "killed", "undecodable"])
def test_a_child_that_fails_has_its_part_done_here(how: str) -> None:
    parent = os.getpid()

    def work(part: Sequence[int]) -> list[tuple[object, int]]:
        if os.getpid() != parent and 20 in part:
            if how == "raises":
                raise RuntimeError("a child's error")
            if how == "killed":
                os.kill(os.getpid(), signal.SIGKILL)
            return [("\udc80", os.getpid()) for _ in part]  # JSON cannot hold it
        return _tagged(part)  # type: ignore[return-value]

    results = _spread_tagged(work)
    assert [value for value, _ in results] == [item * 3 for item in ITEMS]
    pids = [pid for _, pid in results]
    assert pids[20:30] == [parent] * 10  # done again here
    assert parent not in pids[10:20] + pids[30:]


def test_short_lists_and_threaded_processes_are_not_spread() -> None:
    assert {pid for _, pid in _spread.spread(_tagged, ITEMS[:3], list, tuple)} == {os.getpid()}
    release = threading.Event()
    thread = threading.Thread(target=release.wait)
    thread.start()
    try:
        assert {pid for _, pid in _spread_tagged()} == {os.getpid()}
    finally:
        release.set()
        thread.join()


def test_an_interruption_here_kills_and_reaps_every_child() -> None:
    ready_read, ready_write = os.pipe()
    block_read, block_write = os.pipe()  # never written: a child reading it waits for good
    parent = os.getpid()

    def work(part: Sequence[int]) -> list[tuple[int, int]]:
        if os.getpid() != parent:
            os.write(ready_write, os.getpid().to_bytes(4, "little"))
            os.read(block_read, 1)
            return _tagged(part)
        children = [int.from_bytes(os.read(ready_read, 4), "little") for _ in range(3)]
        started.extend(children)
        raise KeyboardInterrupt

    started: list[int] = []
    try:
        with pytest.raises(KeyboardInterrupt):
            _spread_tagged(work)
    finally:
        for fd in (ready_read, ready_write, block_read, block_write):
            os.close(fd)
    assert len(started) == 3
    for pid in started:
        with pytest.raises(ChildProcessError):
            os.waitpid(pid, os.WNOHANG)  # reaped already: no such child


def test_a_store_listed_by_several_processes_is_listed_as_by_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = tmp_path / "store"
    ids = [run_id_of(invoke("run", WORKFLOWS / "greet.py", "--store", store, "--json"))]
    ids += [run_id_of(invoke("run", WORKFLOWS / "many.py", "--input", str(n), "--store", store,
                             "--json")) for n in range(6)]  # fmt: skip
    paused = invoke("run", WORKFLOWS / "review.py", "--store", store, "--json")
    assert paused.code == 3  # a run waiting for answers: pending requests
    restored = invoke("replay", "-c", f"{ids[0]}.1", "--store", store, "--json")
    assert restored.code == 0  # a run with an origin
    journal = store / "runs" / ids[3] / "journal.jsonl"
    journal.write_bytes(journal.read_bytes().replace(b'"step"', b'"stap"', 1))  # corrupt
    (store / "runs" / "20261202-000000-0000link").symlink_to(store / "runs" / ids[1])

    storage = FileCheckpointStorage(store)
    assert _spread._processes(10) == 4  # ten runs: four processes
    spread_out = storage.run_summaries()
    monkeypatch.setattr(_spread, "SPREAD_FROM", 10**9)
    one_process = storage.run_summaries()
    assert spread_out == one_process
    assert len(one_process) == 10
    statuses = {s.status.value for s in one_process}
    assert {"completed", "paused", "corrupt"} <= statuses
    assert any(s.pending for s in one_process) and any(s.origin_run_id for s in one_process)
    for summary in one_process:  # the rows a child sends read back as the same summaries
        assert summary_of_row(summary_row(summary)) == summary


def test_a_part_that_cannot_be_forked_is_done_here(monkeypatch: pytest.MonkeyPatch) -> None:
    real_fork, forks = os.fork, []

    def fork_twice() -> int:
        if len(forks) == 2:
            raise BlockingIOError(11, "Resource temporarily unavailable")
        forks.append(1)
        return real_fork()

    monkeypatch.setattr(os, "fork", fork_twice)
    results = _spread_tagged()
    assert [value for value, _ in results] == [item * 3 for item in ITEMS]
    pids = [pid for _, pid in results]
    assert pids[30:] == [os.getpid()] * 10 and os.getpid() not in pids[10:30]


class _OneProcess(FileCheckpointStorage):
    """The file store, without the declaration that lets a verification be spread."""

    _READS_WITHOUT_WAITING = False


@pytest.mark.parametrize(
    "fixture", ["healthy", "forked", "tampered", "torn", "version_1", "before_args"]
)
def test_a_whole_store_verification_spread_gives_one_process_s_verdicts(
    fixture: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(_spread, "SPREAD_FROM", 2)  # a part of one run at least
    store = copy_fixture(fixture, tmp_path)
    if fixture == "healthy":  # an origin cut short, verified in another part than its run
        assert arun(FileCheckpointStorage(store).delete("completed.1"))
    runs = len(list((store / "runs").iterdir()))
    assert _spread._processes(runs) == min(4, runs) > 1
    reports = {}
    for workflow_name in (None, "review"):
        spread_out = arun(verify_lineage(FileCheckpointStorage(store), workflow_name=workflow_name))
        reports[workflow_name] = arun(
            verify_lineage(_OneProcess(store), workflow_name=workflow_name)
        )
        assert spread_out == reports[workflow_name]
    whole = reports[None]
    assert len(whole.runs) == runs
    if fixture == "healthy":
        assert sorted(v.run_id for v in reports["review"].runs) == ["answered", "paused"]
        assert "origin completed.1 not found" in " ".join(p for v in whole.runs for p in v.problems)
    else:
        assert whole.ok == (fixture not in ("forked", "tampered"))  # a torn tail is a note
