"""Run locks across processes (SPEC §4): the holder is named, and a killed holder frees the run.

Crash tests kill a real child process with SIGKILL; nothing is mocked.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.storage.helpers import arun, build_run, start_holder, stop_children
from wfctl._errors import RunLockedError
from wfctl._storage import FileCheckpointStorage

REPO = Path(__file__).resolve().parents[2]
HOLDER = """
import sys
from wfctl._storage import FileCheckpointStorage
lock = FileCheckpointStorage(sys.argv[1]).lock_run(sys.argv[2])
print("locked", flush=True)
sys.stdin.read()
lock.release()
print("released", flush=True)
"""

pytestmark = pytest.mark.skipif(os.name != "posix", reason="uses SIGKILL and flock")


@pytest.fixture
def holder(tmp_path: Path) -> Iterator[Any]:
    """Start a child process that takes run r1's lock and holds it until stdin closes."""
    children: list[subprocess.Popen[str]] = []

    def start(store: Path, run_id: str = "r1") -> subprocess.Popen[str]:
        return start_holder(children, HOLDER, [str(store), run_id], "locked")

    yield start
    stop_children(children)


def test_a_lock_held_by_another_process_names_its_pid(tmp_path: Path, holder: Any) -> None:
    storage = FileCheckpointStorage(tmp_path / "store")
    arun(build_run(storage, "r1", 2))
    child = holder(storage.root)
    with pytest.raises(RunLockedError) as info:
        storage.lock_run("r1")
    assert f"pid {child.pid}" in info.value.holder
    assert "this process" not in info.value.holder
    [summary] = arun(storage.list_runs())
    assert summary.status == "running"
    child.stdin.close()
    assert child.stdout.readline().strip() == "released"
    assert child.wait() == 0
    assert not (storage.root / "runs" / "r1" / "owner.json").exists()
    storage.lock_run("r1").release()
    storage.close()


def test_a_sigkilled_holder_leaves_the_run_free(tmp_path: Path, holder: Any) -> None:
    storage = FileCheckpointStorage(tmp_path / "store")
    arun(build_run(storage, "r1", 2))
    child = holder(storage.root)
    with pytest.raises(RunLockedError):
        storage.lock_run("r1")
    os.kill(child.pid, signal.SIGKILL)
    assert child.wait() == -signal.SIGKILL
    [summary] = arun(storage.list_runs())
    assert summary.status == "interrupted"  # crashed, resumable
    lock = storage.lock_run("r1")  # the kernel dropped the lock with the process
    try:
        with pytest.raises(RunLockedError) as info:
            FileCheckpointStorage(storage.root).lock_run("r1")
        assert f"pid {os.getpid()}" in info.value.holder  # owner.json now names us
    finally:
        lock.release()
    storage.close()


def test_a_lock_a_stranger_holds_after_a_sigkilled_holder_is_not_named_as_that_holder(
    tmp_path: Path, holder: Any
) -> None:
    # The killed holder leaves its owner.json; then anything that can open the journal takes
    # the flock (here this process, with no wfctl in between): the dead pid is not the holder.
    import fcntl  # POSIX only, as the whole module

    storage = FileCheckpointStorage(tmp_path / "store")
    arun(build_run(storage, "r1", 2))
    child = holder(storage.root)
    os.kill(child.pid, signal.SIGKILL)
    assert child.wait() == -signal.SIGKILL
    run_dir = storage.root / "runs" / "r1"
    assert f'"pid": {child.pid}' in (run_dir / "owner.json").read_text(encoding="utf-8")
    fd = os.open(run_dir / "journal.jsonl", os.O_RDONLY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        with pytest.raises(RunLockedError) as info:
            storage.lock_run("r1")
        assert info.value.holder == (
            f"another process (the holder recorded, pid {child.pid}, has exited)"
        )
    finally:
        os.close(fd)
    storage.lock_run("r1").release()
    storage.close()


def test_a_child_cannot_lock_a_run_this_process_holds(tmp_path: Path) -> None:
    storage = FileCheckpointStorage(tmp_path / "store")
    with storage.lock_run("r1"):
        probe = subprocess.run(
            [
                sys.executable,
                "-c",
                "import sys\n"
                "from wfctl._storage import FileCheckpointStorage\n"
                "from wfctl._errors import RunLockedError\n"
                "try:\n"
                "    FileCheckpointStorage(sys.argv[1]).lock_run('r1')\n"
                "except RunLockedError as e:\n"
                "    print(e.holder)\n",
                str(storage.root),
            ],
            capture_output=True,
            text=True,
            cwd=REPO,
            env={**os.environ, "PYTHONPATH": str(REPO)},
            check=True,
        )
    assert f"pid {os.getpid()}" in probe.stdout


def test_two_storage_objects_in_one_process_conflict(tmp_path: Path) -> None:
    first = FileCheckpointStorage(tmp_path / "store")
    second = FileCheckpointStorage(tmp_path / "store")
    lock = first.lock_run("r1")
    with pytest.raises(RunLockedError, match="this process"):
        second.lock_run("r1")
    lock.release()
    second.lock_run("r1").release()


def test_a_lock_can_be_released_from_another_thread(tmp_path: Path) -> None:
    storage = FileCheckpointStorage(tmp_path / "store")
    lock = storage.lock_run("r1")
    releaser = threading.Thread(target=lock.release)
    releaser.start()
    releaser.join()
    storage.lock_run("r1").release()
