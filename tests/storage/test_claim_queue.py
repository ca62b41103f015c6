"""The file store's queue markers: a claim looks at the claimable runs only, and the run's own
records stay the truth (a stale marker never makes a run driven, a missing one never loses it).

Crash tests kill a real child process with SIGKILL; the race runs real processes, gated so that
they claim at once.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import arun
from tests.storage.helpers import stop_children
from tests.storage.test_claim_run import loud
from wfctl import FileCheckpointStorage
from wfctl._engine._admission import submit_run

REPO = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.skipif(os.name != "posix", reason="uses SIGKILL and flock")


def _store(path: Path) -> FileCheckpointStorage:
    return FileCheckpointStorage(path, durability="none")


async def _queue(storage: FileCheckpointStorage, *run_ids: str) -> None:
    bound = loud.build(checkpoint_storage=storage)
    for run_id in run_ids:
        await submit_run(bound, run_id, run_id)


def _marked(root: Path) -> set[str]:
    queue = root / "queue"
    return {p.name for p in queue.iterdir()} if queue.exists() else set()


def test_markers_follow_what_a_worker_may_take(tmp_path: Path) -> None:
    storage = _store(tmp_path)

    async def scenario() -> None:
        bound = loud.build(checkpoint_storage=storage)
        await bound.run("done", run_id="done")
        await bound.run("ask", run_id="asks")  # paused for an answer
        await _queue(storage, "queued")
        assert _marked(tmp_path) == {"queued"}
        lease = await storage.claim_run()
        assert lease is not None and lease.run_id == "queued"
        assert _marked(tmp_path) == {"queued"}  # while it is driven: its driver may die
        await lease.release()
        assert _marked(tmp_path) == {"queued"}
        await storage.delete_run("queued")
        assert _marked(tmp_path) == set()

    arun(scenario())


def _touched_runs(monkeypatch: pytest.MonkeyPatch, root: Path) -> list[str]:
    """Record the run of every file opened or stat-ed under ``root`` (its runs and queue)."""
    touched: list[str] = []
    prefixes = [f"{root / 'runs'}{os.sep}", f"{root / 'queue'}{os.sep}"]

    def spy(call: Callable[..., Any]) -> Callable[..., Any]:
        def wrapped(path: Any, *args: Any, **kwargs: Any) -> Any:
            text = os.fspath(path) if isinstance(path, (str, os.PathLike)) else ""
            for prefix in prefixes:
                if text.startswith(prefix):
                    touched.append(text[len(prefix) :].split(os.sep)[0])
            return call(path, *args, **kwargs)

        return wrapped

    for name in ("open", "stat", "lstat"):
        monkeypatch.setattr(os, name, spy(getattr(os, name)))
    return touched


def test_a_claim_touches_the_run_it_takes_not_the_store(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Ended runs, and queued runs behind the one taken, are not read: O(1) files per claim."""
    other = _store(tmp_path)  # another process's view: it writes the runs
    worker = _store(tmp_path)

    async def scenario() -> None:
        bound = loud.build(checkpoint_storage=other)
        for i in range(30):
            await bound.run(f"x{i}", run_id=f"ended{i:02d}")
        await _queue(other, *(f"queued{i:02d}" for i in range(20)))
        first = await worker.claim_run()  # reads the store whole once (the rescan)
        assert first is not None and first.run_id == "queued00"
        touched = _touched_runs(monkeypatch, tmp_path)
        second = await worker.claim_run()
        assert second is not None and second.run_id == "queued01"
        assert set(touched) == {"queued01"}, sorted(set(touched))
        assert len(touched) < 20  # a handful of opens and stats of that run, whatever its size
        monkeypatch.undo()
        for lease in (first, second):
            await lease.release()

    arun(scenario())


def test_claims_walk_the_queue_s_last_listing_until_it_runs_dry(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A claim does not list and sort the whole queue again: with thousands queued, that made
    draining the queue quadratic. Claims take runs in the last listing's order, drop the runs
    removed since without reading them, and list again only when that order runs dry."""
    other = _store(tmp_path)  # another process's view: it queues and removes runs
    worker = _store(tmp_path)
    worker._relist_every = 3600.0  # the listing's period, as if it had not passed
    queue = os.fspath(tmp_path / "queue")
    listings: list[str] = []
    scandir = os.scandir

    def counting(path: Any = ".") -> Any:
        if os.fspath(path) == queue:
            listings.append(queue)
        return scandir(path)

    async def scenario() -> None:
        await _queue(other, *(f"queued{i:02d}" for i in range(6)))
        first = await worker.claim_run()  # the rescan, and the first listing
        assert first is not None and first.run_id == "queued00"
        monkeypatch.setattr(os, "scandir", counting)
        await other.delete_run("queued02")  # removed since the listing
        await _queue(other, "late")  # queued since the listing: after the listed ones
        touched = _touched_runs(monkeypatch, tmp_path)
        taken = [first]
        while (lease := await worker.claim_run()) is not None:
            taken.append(lease)
        assert [lease.run_id for lease in taken] == [
            "queued00",
            "queued01",
            "queued03",
            "queued04",
            "queued05",
            "late",
        ]
        # Two listings: when the walk ran dry ("late" was found then), and again before the
        # claim that found nothing.
        assert len(listings) == 2, listings
        assert "queued02" not in touched  # its marker probed, its files never opened or stat-ed
        monkeypatch.undo()
        for lease in taken:
            await lease.release()

    arun(scenario())


def test_stale_markers_are_removed_and_their_runs_never_driven(tmp_path: Path) -> None:
    """A crash between a run's end and its marker's removal, or a run removed by hand."""
    storage = _store(tmp_path)

    async def scenario() -> None:
        bound = loud.build(checkpoint_storage=storage)
        done = await bound.run("done", run_id="done")
        await bound.run("ask", run_id="asks")
        await _queue(storage, "queued")
        journal = tmp_path / "runs" / "done" / "journal.jsonl"
        before = journal.read_bytes()
        for stale in ("done", "asks", "gone"):  # "gone": no such run at all
            (tmp_path / "queue" / stale).touch()
        lease = await storage.claim_run()
        assert lease is not None and lease.run_id == "queued"
        assert await storage.claim_run() is None
        await lease.release()
        assert _marked(tmp_path) == {"queued"}
        assert journal.read_bytes() == before  # not driven, nothing written
        assert not (tmp_path / "runs" / "gone").exists()  # not created by a lease
        statuses = {r.run_id: r.status for r in await storage.list_runs()}
        assert statuses == {"done": "completed", "asks": "paused", "queued": "queued"}
        assert done.status == "completed"

    arun(scenario())


def test_a_run_without_a_marker_is_found_by_the_rescan(tmp_path: Path) -> None:
    """Queued by an older wfctl (no queue at all), or its marker lost in a power cut."""
    arun(_queue(_store(tmp_path), "older", "newer"))
    (tmp_path / "queue" / "older").unlink()
    (tmp_path / "queue" / "newer").unlink()
    (tmp_path / "queue").rmdir()
    worker = _store(tmp_path)

    async def scenario() -> None:
        lease = await worker.claim_run()  # a worker's first claim rescans the store
        assert lease is not None and lease.run_id == "older"
        assert _marked(tmp_path) == {"older", "newer"}
        (tmp_path / "queue" / "newer").unlink()
        assert await worker.claim_run() is None  # not rescanned again so soon
        worker._rescan_every = 0.0  # the rescan's period, as if it had passed
        later = await worker.claim_run()
        assert later is not None and later.run_id == "newer"
        for held in (lease, later):
            await held.release()

    arun(scenario())


KILLED = """
import asyncio, os, signal, sys
from wfctl import FileCheckpointStorage, step, workflow

@step
async def die(text: str) -> str:
    os.kill(os.getpid(), signal.SIGKILL)
    return text

@workflow(name="doomed")
async def doomed(text: str) -> str:
    return await die(text)

async def main(store: FileCheckpointStorage, where: str) -> None:
    if where == "before-root":  # the lease (and so the marker) taken, no record yet
        await store.lease_run("r1")
        os.kill(os.getpid(), signal.SIGKILL)
    await doomed.build(checkpoint_storage=store).run("x", run_id="r1")

asyncio.run(main(FileCheckpointStorage(sys.argv[1]), sys.argv[2]))
"""


def _killed(store: Path, where: str) -> None:
    child = subprocess.run(
        [sys.executable, "-c", KILLED, str(store), where],
        cwd=REPO,
        env={**os.environ, "PYTHONPATH": str(REPO)},
        capture_output=True,
        text=True,
        check=False,
    )
    assert child.returncode == -9, child.stderr


def test_a_run_killed_before_its_root_leaves_a_marker_that_is_dropped(tmp_path: Path) -> None:
    _killed(tmp_path, "before-root")
    assert _marked(tmp_path) == {"r1"}
    storage = _store(tmp_path)
    assert arun(storage.claim_run()) is None
    assert _marked(tmp_path) == set()
    assert arun(storage.list_runs()) == []


def test_a_run_killed_after_its_root_is_claimed(tmp_path: Path) -> None:
    """The marker is written before the first record, so no crash leaves a record without it."""
    _killed(tmp_path, "after-root")
    assert _marked(tmp_path) == {"r1"}
    storage = _store(tmp_path)
    storage._rescanned = float("inf")  # no rescan: the marker alone finds it

    async def scenario() -> None:
        lease = await storage.claim_run()
        assert lease is not None and lease.run_id == "r1"
        await lease.release()

    arun(scenario())


CLAIMER = """
import asyncio, sys
from wfctl import FileCheckpointStorage

async def main() -> None:
    store = FileCheckpointStorage(sys.argv[1], durability="none")
    print("ready", flush=True)
    sys.stdin.readline()  # the gate: every claimer starts at once
    leases = []
    while (lease := await store.claim_run()) is not None:
        leases.append(lease)
    print(" ".join(lease.run_id for lease in leases), flush=True)
    sys.stdin.readline()  # hold them until every claimer is done
    for lease in leases:
        await lease.release()

asyncio.run(main())
"""


@pytest.fixture
def claimers(tmp_path: Path) -> Iterator[list[subprocess.Popen[str]]]:
    children = [
        subprocess.Popen(
            [sys.executable, "-c", CLAIMER, str(tmp_path)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            cwd=REPO,
            env={**os.environ, "PYTHONPATH": str(REPO)},
        )
        for _ in range(4)
    ]
    yield children
    stop_children(children)


def test_racing_claimers_take_each_run_once(
    tmp_path: Path, claimers: list[subprocess.Popen[str]]
) -> None:
    """Four processes claim at once from markers, missing markers and stale ones."""
    storage = _store(tmp_path)
    queued = [f"q{i:02d}" for i in range(24)]

    async def setup() -> None:
        await _queue(storage, *queued)
        bound = loud.build(checkpoint_storage=storage)
        await bound.run("done", run_id="done")

    arun(setup())
    for run_id in queued[::6]:
        (tmp_path / "queue" / run_id).unlink()  # found only by each claimer's rescan
    (tmp_path / "queue" / "done").touch()  # stale
    for child in claimers:
        assert child.stdout is not None and child.stdout.readline().strip() == "ready"
    for child in claimers:
        assert child.stdin is not None
        child.stdin.write("go\n")
        child.stdin.flush()
    taken: list[str] = []
    for child in claimers:
        assert child.stdout is not None
        taken += child.stdout.readline().split()
    assert sorted(taken) == queued  # each run once, none lost, the ended one never
    for child in claimers:
        assert child.stdin is not None
        child.stdin.close()
        assert child.wait() == 0
    statuses = {r.run_id: r.status for r in arun(storage.list_runs())}
    assert statuses == {**dict.fromkeys(queued, "queued"), "done": "completed"}
