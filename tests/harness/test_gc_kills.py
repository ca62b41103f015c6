"""Kill harness for removal: SIGKILL ``gc`` at every I/O call it makes, lose nothing else.

Removing a run is the one write a store gets besides appends. A forked child removes the
finished runs of a small store through the storage's I/O seam, and SIGKILLs itself at call
``N`` of that seam (inside ``rmtree`` it first deletes files up to the journal: the worst place
for a kill part way through the tree). ``N`` walks every call the removal makes, so every point
in it is a crash point. After each kill, read with a fresh storage:

- a run is there whole or not at all: every directory named for a run is listed, as
  ``completed`` or ``paused`` (never ``corrupt`` or ``unreadable``), and its lineage verifies;
- the paused runs (which gc must never remove) are all there;
- a second removal finishes the job: only the paused runs are left, and nothing of an
  interrupted removal stays in the store.

A few real ``wfctl gc`` processes are also killed on a timer, and the store checked the same way
through the installed CLI.
"""

from __future__ import annotations

import asyncio
import json
import os
import random
import shutil
import signal
import subprocess
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from tests.cli.conftest import base_env, wfctl_executable
from wfctl import FileCheckpointStorage, RunContext, step, workflow
from wfctl._inspect._lineage import verify_lineage
from wfctl._storage import _removal
from wfctl._storage._fs import OsFileSystem

FINISHED = [f"done-{i}" for i in range(5)]
PAUSED = ["waiting-0", "waiting-1"]
#: More seam calls than removing five runs makes: the walk stops before it, or fails.
MAX_POINTS = 400


@step
async def double(n: int) -> int:
    return 2 * n


@workflow
async def doubled(n: int, ctx: RunContext) -> int:
    value = await double(await double(n))
    if n < 0:
        await ctx.request_info({"value": value}, int)
    return value


@pytest.fixture(scope="module")
def template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    store = tmp_path_factory.mktemp("gc-template") / "store"

    async def build() -> None:
        storage = FileCheckpointStorage(store)
        bound = doubled.build(checkpoint_storage=storage)
        for i, run_id in enumerate(FINISHED):
            assert (await bound.run(i, run_id=run_id)).status == "completed"
        for run_id in PAUSED:
            assert (await bound.run(-1, run_id=run_id)).status == "paused"
        storage.close()

    asyncio.run(build())
    return store


class DieAtCall(OsFileSystem):
    """The real file system, except that call ``at`` of any seam method SIGKILLs the process."""

    def __init__(self, at: int) -> None:
        self.at = at
        self.calls = 0
        self.counting = threading.Lock()  # deletions may run in several threads

    def __getattribute__(self, name: str) -> Any:
        attr = super().__getattribute__(name)
        if name.startswith("_") or not callable(attr) or name in ("at", "calls", "counting"):
            return attr

        def call(*args: Any, **kwargs: Any) -> Any:
            with self.counting:
                dies = self.calls == self.at
                self.calls += 1
            if dies:
                if name == "rmtree":  # part way through the tree, at its worst point:
                    for file in sorted(os.listdir(args[0]), reverse=True):
                        os.unlink(os.path.join(args[0], file))
                        if file == "journal.jsonl":  # the journal gone, the rest still there
                            break
                os.kill(os.getpid(), signal.SIGKILL)
            return attr(*args, **kwargs)

        return call


def _remove_in_child(store: Path, at: int, batch: bool) -> bool:
    """Remove the finished runs in a forked child dying at seam call ``at``; True if it died.

    With ``batch``, all in one ``delete_runs`` call (as ``gc`` does), else one at a time.
    """
    pid = os.fork()
    if pid == 0:  # the child: never returns into pytest
        code = 1
        try:
            storage = FileCheckpointStorage(store, fs=DieAtCall(at))
            if batch:
                assert asyncio.run(storage.delete_runs(FINISHED)) == (FINISHED, [])
            else:
                for run_id in FINISHED:
                    asyncio.run(storage.delete_run(run_id))
            code = 0
        finally:
            os._exit(code)
    _, status = os.waitpid(pid, 0)
    if os.WIFSIGNALED(status):
        assert os.WTERMSIG(status) == signal.SIGKILL
        return True
    assert os.WEXITSTATUS(status) == 0, f"the removal failed without a kill (at={at})"
    return False


def _assert_whole(store: Path) -> set[str]:
    """Assert every run left in ``store`` is whole; return their ids."""
    storage = FileCheckpointStorage(store)
    runs = {s.run_id: s for s in asyncio.run(storage.list_runs())}
    assert set(PAUSED) <= set(runs), sorted(runs)
    # A run is there whole or not at all: no directory under a run's name that lists as nothing.
    named = {p.name for p in (store / "runs").iterdir() if not p.name.startswith(".")}
    assert named == set(runs), (sorted(named), sorted(runs))
    for run_id, summary in runs.items():
        expected = "paused" if run_id in PAUSED else "completed"
        assert summary.status == expected, (run_id, summary.status, summary.problem)
    report = asyncio.run(verify_lineage(storage))
    storage.close()
    assert report.ok, [(r.run_id, r.problems) for r in report.runs if not r.ok]
    return set(runs)


@pytest.mark.parametrize(
    ("batch", "threads"),
    [(False, False), (True, False), (True, True)],
    ids=["one-by-one", "batch", "batch-deleted-in-threads"],
)
def test_removal_killed_at_every_io_call_leaves_whole_runs(
    template: Path, tmp_path: Path, batch: bool, threads: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    if threads:  # five runs count as many: their trees are deleted by several threads at once
        monkeypatch.setattr(_removal, "_DELETE_IN_PARALLEL_FROM", 2)
    killed = 0
    for at in range(MAX_POINTS):
        store = tmp_path / f"at-{at}"
        shutil.copytree(template, store, symlinks=True)
        if not _remove_in_child(store, at, batch):
            break  # ``at`` is past the last call: every point was a kill
        killed += 1
        _assert_whole(store)
        storage = FileCheckpointStorage(store)
        for run_id in FINISHED:
            asyncio.run(storage.delete_run(run_id))
        storage.close()
        assert _assert_whole(store) == set(PAUSED)
        assert sorted(p.name for p in (store / "runs").iterdir()) == PAUSED
        shutil.rmtree(store)
    else:
        pytest.fail(f"removing {len(FINISHED)} runs made more than {MAX_POINTS} seam calls")
    print(f"{killed} kill points")
    assert killed >= (5 if batch else 10) * len(FINISHED), killed  # it covered each removal


def test_wfctl_gc_killed_on_a_timer_leaves_whole_runs(template: Path, tmp_path: Path) -> None:
    rng = random.Random(20261201)
    exe = wfctl_executable()
    for attempt in range(int(os.environ.get("WFCTL_GC_KILLS", "4"))):
        store = tmp_path / f"kill-{attempt}"
        shutil.copytree(template, store, symlinks=True)
        proc = subprocess.Popen(
            [exe, "gc", "--older-than", "0s", "--yes", "--store", str(store)],
            env=base_env(),
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        time.sleep(rng.uniform(0.05, 0.6))  # a crash point in time, not an ordering
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        listed = subprocess.run(
            [exe, "runs", "--json", "--store", str(store)],
            env=base_env(),
            capture_output=True,
            text=True,
            check=False,
        )
        assert listed.returncode == 0, listed.stderr
        statuses = {r["run_id"]: r["status"] for r in json.loads(listed.stdout)["runs"]}
        assert set(PAUSED) <= set(statuses)
        assert all(s in ("completed", "paused") for s in statuses.values()), statuses
        verified = subprocess.run(
            [exe, "verify-lineage", "--store", str(store)],
            env=base_env(),
            capture_output=True,
            text=True,
            check=False,
        )
        assert verified.returncode == 0, verified.stdout + verified.stderr
        again = subprocess.run(
            [exe, "gc", "--older-than", "0s", "--yes", "--store", str(store)],
            env=base_env(),
            capture_output=True,
            text=True,
            check=False,
        )
        assert again.returncode == 0, again.stderr
        assert sorted(p.name for p in (store / "runs").iterdir()) == PAUSED
