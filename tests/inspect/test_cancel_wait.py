"""How ``cancel_run`` waits for a running run's driver: a poll that backs off, bounded.

The driver is stood in for by this process holding the run's lock (the file store's OS lock on
the journal); the recorder that ``cancel_run`` sleeps through lets go of it after a counted
number of looks, so nothing depends on a time.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.storage.helpers import arun, build_run
from wfctl._errors import RunLockedError
from wfctl._inspect._cancel import cancel_run
from wfctl._storage import FileCheckpointStorage


def test_a_waiting_cancel_looks_less_often_up_to_once_a_second(tmp_path: Path) -> None:
    storage = FileCheckpointStorage(tmp_path)
    arun(build_run(storage, "r1", 3))
    held = storage.lock_run("r1")  # its driver, between two steps
    waits: list[float] = []

    async def sleep(seconds: float) -> None:
        waits.append(seconds)
        assert storage.pause_requested("r1")  # the request stands while it waits
        if len(waits) == 7:
            held.release()  # the driver dies without honouring it

    report = cancel_run(tmp_path, "r1", reason="superseded", sleep=sleep)
    assert waits == [0.05, 0.1, 0.2, 0.4, 0.8, 1.0, 1.0]
    # Let go without a cancelled record: cancelled here, from its last checkpoint.
    assert (report.status, report.previous_status, report.checkpoint_id) == (
        "cancelled",
        "interrupted",
        "r1.3",
    )
    assert not storage.pause_requested("r1")


def test_no_wait_does_not_look_again(tmp_path: Path) -> None:
    storage = FileCheckpointStorage(tmp_path)
    arun(build_run(storage, "r1", 2))
    held = storage.lock_run("r1")
    try:

        async def sleep(seconds: float) -> None:
            raise AssertionError("--no-wait waited")

        report = cancel_run(tmp_path, "r1", wait=False, sleep=sleep)
        assert (report.status, report.checkpoint_id, report.cancelled_at) == (
            "running",
            None,
            None,
        )
        assert report.requested_by is not None and storage.pause_requested("r1")
    finally:
        held.release()


def test_a_held_run_that_is_not_running_is_refused_not_waited_for(tmp_path: Path) -> None:
    storage = FileCheckpointStorage(tmp_path)
    arun(build_run(storage, "r1", 2, last_kind="pause", last_data={"requests": []}))
    held = storage.lock_run("r1")  # not a driver: its head ends the run (a resume starting)
    try:

        async def sleep(seconds: float) -> None:
            raise AssertionError("waited for a driver that is not there")

        with pytest.raises(RunLockedError, match="is locked by"):
            cancel_run(tmp_path, "r1", sleep=sleep)
        assert not storage.pause_requested("r1")  # nothing asked of nobody
    finally:
        held.release()
    # a pause with nothing to answer: interrupted, in the one vocabulary of states
    assert cancel_run(tmp_path, "r1").previous_status == "interrupted"
