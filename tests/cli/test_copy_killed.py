"""A ``wfctl copy`` killed part way (SIGKILL) into a file store leaves no run there: ``runs``
does not list it, no claim takes it, ``resume`` does not know it, and copying again makes it
whole, byte for byte. (Before, the records written so far read as an interrupted run that a
worker took and resumed, and that ``runs`` listed.)

The copy is killed once the destination holds its first bytes of the run, wherever it writes
them (a source of 40,000 records: the copy is still writing for seconds after that).
"""

from __future__ import annotations

import asyncio
import signal
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

from tests.cli.conftest import base_env, wfctl
from tests.cli.test_copy import verified_store
from tests.conftest import wfctl_executable
from wfctl._storage import FileCheckpointStorage

RECORDS = 40_000


def long_store(root: Path, records: int = RECORDS, run_id: str = "long") -> Path:
    """A store holding one completed run of ``records`` records that verifies."""
    return verified_store(root, records, run_id)


def start_copy(source: str | Path, target: str | Path) -> subprocess.Popen[bytes]:
    """Start the installed ``wfctl copy --from source --to target``."""
    return subprocess.Popen(
        [wfctl_executable(), "copy", "--from", str(source), "--to", str(target)],
        env=base_env(None),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )


def kill_once(process: subprocess.Popen[bytes], written: Callable[[], bool]) -> None:
    """SIGKILL ``process`` as soon as ``written()`` (polled) says it has written to the
    destination; fail if it ends before."""
    deadline = time.monotonic() + 120
    while not written():
        assert process.poll() is None, "the copy ended before the destination showed a record"
        assert time.monotonic() < deadline, "the copy wrote nothing in time"
        time.sleep(0.001)
    process.send_signal(signal.SIGKILL)
    assert process.wait(timeout=60) == -signal.SIGKILL


def file_written(target: Path, run_id: str) -> Callable[[], bool]:
    """Whether a file store holds bytes of a journal of ``run_id``, as a run or being copied."""
    runs = target / "runs"

    def written() -> bool:
        journals = [runs / run_id / "journal.jsonl", *runs.glob(f".*{run_id}*/**/journal.jsonl")]
        return any(path.exists() and path.stat().st_size > 0 for path in journals)

    return written


def assert_no_run_there(target: str | Path, run_id: str) -> None:
    """``runs`` lists nothing; ``resume``, ``cancel`` and ``replay`` know no such run."""
    listed = wfctl("runs", "--store", target, "--json")
    assert listed.code == 0, listed.stderr
    assert listed.json()["runs"] == []
    for command, missing in (
        (["resume", run_id], f"run {run_id!r}"),
        (["cancel", run_id], f"run {run_id!r}"),
        (["replay", "--checkpoint", f"{run_id}.1"], f"checkpoint '{run_id}.1'"),
    ):
        done = wfctl(*command, "--store", target)
        assert done.code == 2, command
        assert done.error_line() == f"wfctl: error: {missing} not found"


def assert_copied_whole(
    source: str | Path, target: str | Path, run_id: str, records: int = RECORDS
) -> None:
    """Copying again copies the run whole, and it verifies there."""
    again = wfctl("copy", "--from", source, "--to", target, "--json")
    assert again.code == 0, again.stderr
    [run] = again.json()["runs"]
    assert (run["outcome"], run["written_count"]) == ("copied", records)
    assert wfctl("verify-lineage", run_id, "--store", target).code == 0


def test_a_copy_killed_part_way_into_a_file_store_leaves_no_run(tmp_path: Path) -> None:
    source = long_store(tmp_path / "source")
    target = tmp_path / "target"
    kill_once(start_copy(source, target), file_written(target, "long"))

    assert_no_run_there(target, "long")
    store = FileCheckpointStorage(target)
    assert asyncio.run(store.claim_run()) is None
    assert not (target / "runs" / "long").exists()

    assert_copied_whole(source, target, "long")
    journal = Path("runs", "long", "journal.jsonl")
    assert (target / journal).read_bytes() == (source / journal).read_bytes()
    assert sorted(path.name for path in (target / "runs").iterdir()) == ["long"]  # no leftover


def test_what_a_killed_copy_left_is_removed_by_the_next_removal(tmp_path: Path) -> None:
    source = long_store(tmp_path / "source")
    target = tmp_path / "target"
    assert wfctl("copy", "--from", source, "--to", target).code == 0
    assert wfctl("rm", "long", "--store", target).code == 0
    kill_once(start_copy(source, target), file_written(target, "long"))
    assert [path.name for path in (target / "runs").iterdir()] == [".copying-long"]

    assert wfctl("gc", "--store", target).code == 0  # nothing to remove but what it left
    assert list((target / "runs").iterdir()) == []

    kill_once(start_copy(source, target), file_written(target, "long"))
    other = long_store(tmp_path / "other", 3, "other")  # another run, to remove
    assert wfctl("copy", "--from", other, "--to", target).code == 0
    assert wfctl("rm", "other", "--store", target).code == 0
    assert list((target / "runs").iterdir()) == []
