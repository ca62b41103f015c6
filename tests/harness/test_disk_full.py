"""A full disk is reported as one: "No space left on device", never a vague "short write".

On a regular file a short ``write`` means the disk (or a limit) filled up part way, or a signal
cut the call short. The storage writes the rest: that either completes the record or gets the
kernel's real error. The fault seam (``FaultyFS``) models a disk that fills: a short write, then
``ENOSPC`` on every later write. A real process is also run under ``RLIMIT_FSIZE``, where the
kernel itself stores part of a record and refuses the rest, to check that ``--json`` still
prints its one document when not even the ``failed`` checkpoint fits.
"""

from __future__ import annotations

import asyncio
import errno
import json
import resource
import signal
import subprocess
from pathlib import Path

import pytest

from tests.cli.conftest import WORKFLOWS, base_env, invoke, wfctl_executable
from tests.conftest import failure_of
from tests.harness import harness_workload as W
from tests.harness.faulty_fs import Fault, FaultyFS
from tests.storage.helpers import build_run, ckpt
from wfctl import FileCheckpointStorage


def _seqs(store: Path, run_id: str) -> list[int]:
    journal = asyncio.run(FileCheckpointStorage(store).read_run(run_id))
    assert journal.problems == () and journal.torn_tail == 0, journal
    return [c.seq for c in journal.checkpoints]


def test_a_short_write_is_completed_not_failed(tmp_path: Path) -> None:
    storage = FileCheckpointStorage(
        tmp_path / "store", fs=FaultyFS(0, [Fault("write", "short", 2)])
    )
    asyncio.run(build_run(storage, "r1", 3))  # the third write stores part of the record only
    assert storage._fs.injected  # type: ignore[attr-defined]  # internal: the fault struck
    assert _seqs(tmp_path / "store", "r1") == [0, 1, 2]
    storage.close()


def test_a_disk_that_fills_mid_record_says_no_space_left(tmp_path: Path) -> None:
    full = [Fault("write", "short", 2), Fault("write", "enospc", 3, "persist")]
    storage = FileCheckpointStorage(tmp_path / "store", fs=FaultyFS(0, full))
    asyncio.run(build_run(storage, "r1", 2))
    with pytest.raises(OSError, match="No space left on device") as raised:
        asyncio.run(storage.save(ckpt("r1", 2)))
    assert raised.value.errno == errno.ENOSPC
    assert str(raised.value.filename).endswith("journal.jsonl")  # which file, too
    assert _seqs(tmp_path / "store", "r1") == [0, 1]  # the partial record was cut back
    storage.close()


def test_a_run_on_a_full_disk_fails_naming_it_even_if_the_failure_cannot_be_stored(
    tmp_path: Path,
) -> None:
    # Writes 0-2 are the root and the first two stages; the disk fills during the third.
    full = [Fault("write", "short", 3), Fault("write", "enospc", 4, "persist")]
    storage = FileCheckpointStorage(tmp_path / "store", fs=FaultyFS(0, full))
    with pytest.raises(OSError, match="No space left on device") as caught:
        asyncio.run(
            W.pipeline.build(checkpoint_storage=storage).run(W.spec_for(1, pause=False), run_id="r")
        )
    result = failure_of(caught)
    assert caught.value.errno == errno.ENOSPC
    notes = caught.value.__notes__
    assert "the failed checkpoint could not be stored either" in notes[0]
    assert len(notes) == 2 and "its head is r.2" in notes[1]  # the retry note names the head
    assert result.checkpoint_id == "r.2"  # the head stayed at the last durable checkpoint
    assert _seqs(tmp_path / "store", "r") == [0, 1, 2]
    storage.close()


def _limit_file_size(limit: int) -> None:
    """In the child: files may grow to ``limit`` bytes; past it, writes fail with EFBIG."""
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # else the kernel kills the process
    resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))


def test_json_keeps_its_contract_when_the_failure_cannot_be_stored(tmp_path: Path) -> None:
    store = tmp_path / "store"
    done = subprocess.run(
        [
            wfctl_executable(),
            "run",
            str(WORKFLOWS / "fills_disk.py"),
            "--input",
            "60000",
            "--run-id",
            "full",
            "--store",
            str(store),
            "--json",
        ],
        env=base_env(),
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        preexec_fn=lambda: _limit_file_size(32 * 1024),
    )
    assert done.returncode == 1, done.stderr
    doc = json.loads(done.stdout)  # one JSON document, although nothing more could be stored
    assert doc["status"] == "failed"
    assert doc["head_checkpoint_id"] == "full.1"
    assert "RuntimeError: xxx" in doc["error"]
    assert (
        "the failed checkpoint could not be stored either ([Errno 27] File too large"
        in (doc["error"])
    )
    assert doc["resume_command"].startswith("wfctl resume full")
    stderr = done.stderr.strip().splitlines()
    assert len(stderr) == 1 and stderr[0].startswith("wfctl: run full failed: RuntimeError")
    log = invoke("log", "full", "--store", store, "--json").json()
    assert [c["kind"] for c in log["checkpoints"]] == ["root", "step"]  # no half record
    assert _seqs(store, "full") == [0, 1]
