"""``wfctl log --follow``: a live run's checkpoints as they are committed, then its exit code.

The followed run is a real ``wfctl run`` of ``workflows/gated.py`` stopped at a file gate. Each
test reads the follower's first line (the root, committed before the gate) before it opens the
gate, kills the run or interrupts the follower, so the order of events is fixed, not timed.
The backoff is checked in-process with a recording ``sleep``.
"""

from __future__ import annotations

import json
import re
import signal
import subprocess
from pathlib import Path
from typing import Any

import pytest

from tests.cli.conftest import WORKFLOWS, base_env, invoke, run_id_of, wfctl, wfctl_executable
from tests.cli.test_cancel_rm import start_gated
from tests.storage.helpers import arun
from wfctl._errors import CheckpointCorruptError
from wfctl._inspect._follow import FIRST_INTERVAL, LONGEST_INTERVAL, FollowEnd, follow_run
from wfctl._records._checkpoint import Checkpoint, Kind
from wfctl._records._payloads import (
    HANDOFF,
    CompletedPayload,
    PausePayload,
    ResumePayload,
    RootPayload,
    StepPayload,
)
from wfctl._storage import FileCheckpointStorage

REVIEW = WORKFLOWS / "review.py"
GREET = WORKFLOWS / "greet.py"


def _follow(store: Path, run_id: str, *extra: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [wfctl_executable(), "log", run_id, "--follow", "--store", str(store), *extra],
        env=base_env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def _ids(lines: list[str]) -> list[str]:
    return [json.loads(line)["checkpoint_id"] for line in lines]


def test_follow_prints_every_checkpoint_once_in_order_then_exits_with_the_run(
    store: Path, tmp_path: Path
) -> None:
    run, gate = start_gated(store, tmp_path, "live")
    try:
        as_json = _follow(store, "live", "--json")
        for_people = _follow(store, "live")
        assert as_json.stdout is not None and for_people.stdout is not None
        first = as_json.stdout.readline()  # the follower is running and has read the root
        assert json.loads(first)["checkpoint_id"] == "live.0"
        assert "live.0" in for_people.stdout.readline()
    finally:
        (gate / "gate").write_text("", encoding="utf-8")
    rest, errors = as_json.communicate(timeout=60)
    people, people_errors = for_people.communicate(timeout=60)
    run.communicate(timeout=60)
    assert (as_json.returncode, errors) == (0, "")
    assert (for_people.returncode, people_errors) == (0, "")

    lines = [first, *rest.splitlines()]
    end = json.loads(lines[-1])
    assert end == {
        "schema": "wfctl/log-end@1",
        "run_id": "live",
        "status": "completed",
        "head_checkpoint_id": "live.3",
    }
    entries = [json.loads(line) for line in lines[:-1]]
    assert {e["schema"] for e in entries} == {"wfctl/log-entry@1"}
    assert {e["run_id"] for e in entries} == {"live"}
    stored = invoke("log", "live", "--store", store, "--json").json()["checkpoints"]
    assert (
        _ids(lines[:-1])
        == [c["checkpoint_id"] for c in stored]
        == [
            "live.0",
            "live.1",
            "live.2",
            "live.3",
        ]
    )
    assert [e["kind"] for e in entries] == ["root", "step", "step", "completed"]

    shown = [line for line in people.splitlines() if re.match(r"\s*\d+ ", line)]
    assert [line.split()[-1] for line in shown] == ["live.1", "live.2", "live.3"]
    assert people.splitlines()[-1] == "run live completed at live.3"


@pytest.mark.parametrize(
    ("make", "status", "code"),
    [("paused", "paused", 3), ("failed", "failed", 1), ("cancelled", "cancelled", 1)],
)
def test_following_an_ended_run_prints_it_and_exits_at_once(
    make: str, status: str, code: int, store: Path, tmp_path: Path
) -> None:
    if make == "failed":
        (tmp_path / "d").mkdir()
        flaky = WORKFLOWS / "flaky.py"
        invoke("run", flaky, "--input", json.dumps(str(tmp_path / "d")), "--store", store)
        run_id = invoke("runs", "--store", store, "--json").json()["runs"][0]["run_id"]
    else:
        run_id = run_id_of(invoke("run", REVIEW, "--store", store, "--json"))
        if make == "cancelled":
            assert invoke("cancel", run_id, "--store", store).code == 0
    followed = wfctl("log", run_id, "--follow", "--json", "--store", store)
    assert followed.code == code, followed.stderr
    lines = followed.stdout.splitlines()
    assert json.loads(lines[-1])["status"] == status
    stored = invoke("log", run_id, "--store", store, "--json").json()["checkpoints"]
    assert _ids(lines[:-1]) == [c["checkpoint_id"] for c in stored]


def test_follow_verbose_shows_what_each_step_received_and_returned(store: Path) -> None:
    run_id = run_id_of(invoke("run", GREET, "--store", store, "--json"))
    plain = wfctl("log", run_id, "--follow", "--store", store)
    verbose = wfctl("log", run_id, "--follow", "-v", "--store", store)
    assert plain.code == verbose.code == 0, plain.stderr + verbose.stderr
    assert 'args: ("world")' not in plain.stdout
    assert 'args: ("world")' in verbose.stdout and 'result: "WORLD"' in verbose.stdout


def test_a_killed_run_ends_the_follow_as_interrupted(store: Path, tmp_path: Path) -> None:
    run, _gate = start_gated(store, tmp_path, "doomed")
    follower = _follow(store, "doomed", "--json")
    assert follower.stdout is not None
    assert json.loads(follower.stdout.readline())["checkpoint_id"] == "doomed.0"
    run.send_signal(signal.SIGKILL)
    run.communicate(timeout=60)
    rest, errors = follower.communicate(timeout=60)
    assert follower.returncode == 130, errors
    assert json.loads(rest.splitlines()[-1])["status"] == "interrupted"


def test_ctrl_c_stops_following_and_leaves_the_run_alone(store: Path, tmp_path: Path) -> None:
    run, gate = start_gated(store, tmp_path, "watched")
    try:
        follower = _follow(store, "watched")
        assert follower.stdout is not None
        assert "watched.0" in follower.stdout.readline()
        follower.send_signal(signal.SIGINT)
        _, errors = follower.communicate(timeout=60)
        assert follower.returncode == 130
        assert errors.strip() == (
            "wfctl: interrupted: stopped following run watched; the run itself was not touched"
        )
        assert invoke("runs", "--store", store, "--json").json()["runs"][0]["status"] == "running"
    finally:
        (gate / "gate").write_text("", encoding="utf-8")
        run.communicate(timeout=60)
    assert run.returncode == 0


def test_follow_refuses_an_unknown_run(store: Path) -> None:
    invoke("run", GREET, "--store", store)
    missing = wfctl("log", "nobody", "--follow", "--store", store)
    assert missing.code == 2 and "run 'nobody' not found" in missing.error_line()


# -- the library: backoff and a journal changed under the follower ----------------------------


def _record(seq: int, kind: Kind, data: dict[str, Any]) -> Checkpoint:
    parent = f"r.{seq - 1}" if seq else None
    return Checkpoint("r", seq, kind, "wf", f"2026-01-01T00:00:0{seq}+00:00", parent, data=data)


def _step(seq: int) -> Checkpoint:
    return _record(seq, Kind.STEP, StepPayload(()).to_json())


def test_looks_back_off_while_idle_and_come_back_after_a_commit(tmp_path: Path) -> None:
    storage = FileCheckpointStorage(tmp_path / "store")
    lock = storage.lock_run("r")  # held by this process: the probe sees a running run
    for checkpoint in (_record(0, Kind.ROOT, RootPayload(None, "m:wf", "sig").to_json()), _step(1)):
        arun(storage.save(checkpoint))
    waits: list[float] = []

    def sleep(seconds: float) -> None:
        waits.append(seconds)
        if len(waits) == 7:
            arun(storage.save(_step(2)))
        elif len(waits) == 9:
            arun(storage.save(_record(3, Kind.COMPLETED, CompletedPayload(1, []).to_json())))

    try:
        seen = list(follow_run(tmp_path / "store", "r", sleep=sleep))
    finally:
        lock.release()
    assert [getattr(item, "checkpoint_id", None) for item in seen[:-1]] == [
        "r.0",
        "r.1",
        "r.2",
        "r.3",
    ]
    assert seen[-1] == FollowEnd("r", "completed", "r.3")
    first, most = FIRST_INTERVAL, LONGEST_INTERVAL
    assert waits == [
        first,
        2 * first,
        4 * first,
        8 * first,
        16 * first,
        most,
        most,
        first,
        2 * first,
    ]


def test_a_journal_cut_while_followed_is_reported(tmp_path: Path) -> None:
    storage = FileCheckpointStorage(tmp_path / "store")
    lock = storage.lock_run("r")
    for checkpoint in (_record(0, Kind.ROOT, RootPayload(None, "m:wf", "sig").to_json()), _step(1)):
        arun(storage.save(checkpoint))
    journal = tmp_path / "store" / "runs" / "r" / "journal.jsonl"

    def cut(seconds: float) -> None:
        data = journal.read_bytes()
        journal.write_bytes(data[: data.index(b"\n") + 1])

    try:
        with pytest.raises(CheckpointCorruptError, match="the journal was cut while followed"):
            list(follow_run(tmp_path / "store", "r", sleep=cut))
    finally:
        lock.release()


def test_a_run_handed_over_is_followed_on_to_the_next_worker(tmp_path: Path) -> None:
    """A stopping worker's ``handoff`` pause is not an end: the follower waits, as for a queued
    run, and follows the worker that takes the run over to its end."""
    storage = FileCheckpointStorage(tmp_path / "store")
    held = [storage.lock_run("r")]  # the first worker drives it
    handoff = PausePayload((), HANDOFF).to_json()
    for checkpoint in (_record(0, Kind.ROOT, RootPayload(None, "m:wf", "sig").to_json()), _step(1)):
        arun(storage.save(checkpoint))
    waits: list[float] = []

    def sleep(seconds: float) -> None:
        waits.append(seconds)
        if len(waits) == 1:  # the first worker stops: it hands the run over and lets go
            arun(storage.save(_record(2, Kind.PAUSE, handoff)))
            held.pop().release()
        elif len(waits) == 4:  # the next worker takes it and drives it to its end
            held.append(storage.lock_run("r"))
            resumed = ResumePayload({}, "continue").to_json()
            arun(storage.save(_record(3, Kind.RESUME, resumed)))
            arun(storage.save(_step(4)))
            arun(storage.save(_record(5, Kind.COMPLETED, CompletedPayload(1, []).to_json())))

    try:
        seen = list(follow_run(tmp_path / "store", "r", sleep=sleep))
    finally:
        for lock in held:
            lock.release()
    assert [getattr(item, "checkpoint_id", None) for item in seen[:-1]] == [
        f"r.{seq}" for seq in range(6)
    ]
    assert seen[-1] == FollowEnd("r", "completed", "r.5")
    assert len(waits) == 4  # it waited for the next worker, then read to the end
