"""``wfctl submit`` and ``wfctl worker`` through the installed executable, on the file store.

Workers are real processes: one is SIGKILLed mid-run and another finishes the run; several
share one store and each run is driven once; SIGTERM drains. Steps are gated on files the test
creates (never on time). What each step did is counted with files the steps append to.
"""

from __future__ import annotations

import json
import signal
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest

from tests.cli.conftest import WORKFLOWS, base_env, wfctl, wfctl_executable
from wfctl._drive._submit import submit_workflow


def _worker(store: Path, *args: str | Path) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [wfctl_executable(), "worker", "--store", str(store), "--json", *map(str, args)],
        env=base_env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def _finish(process: subprocess.Popen[str], code: int = 0) -> list[dict[str, Any]]:
    """Wait for a worker; check its exit code; return its JSON Lines events."""
    stdout, stderr = process.communicate(timeout=120)
    assert process.returncode == code, stderr
    return [json.loads(line) for line in stdout.splitlines()]


def _wait_for(path: Path, process: subprocess.Popen[str]) -> None:
    """Poll for a file a step creates (cross-process, bounded)."""
    end = time.monotonic() + 60
    while not path.exists():
        assert process.poll() is None, process.communicate()
        assert time.monotonic() < end, f"{path} never appeared"
        time.sleep(0.01)


def _submit(store: Path, workflow: str, value: Any, run_id: str | None = None) -> str:
    args: list[str | Path] = ["submit", WORKFLOWS / workflow, "--store", store, "--json"]
    args += ["--input", json.dumps(value)] + (["--run-id", run_id] if run_id else [])
    done = wfctl(*args)
    assert done.code == 0, done.stderr
    run_id = done.json()["run_id"]
    assert isinstance(run_id, str)
    return run_id


def _driving(store: Path, gate: Path, workflow: str) -> tuple[str, subprocess.Popen[str]]:
    """Submit a gated run and start a worker; return once its gated step is running."""
    gate.mkdir()
    run_id = _submit(store, workflow, str(gate))
    process = _worker(store, "--workflows", WORKFLOWS)
    _wait_for(gate / "started", process)
    return run_id, process


def _runs(store: Path) -> dict[str, str]:
    runs = wfctl("runs", "--store", store, "--json").json()["runs"]
    return {run["run_id"]: run["status"] for run in runs}


def _worker_completes(store: Path, run_id: str) -> dict[str, Any]:
    """Run one worker until idle; check it took and completed ``run_id``; return its log."""
    events = _finish(_worker(store, "--exit-when-idle", "--workflows", WORKFLOWS))
    assert [(e["event"], e["run_id"], e["status"]) for e in events] == [
        ("taken", run_id, None),
        ("ended", run_id, "completed"),
        ("idle", None, None),
    ]
    log: dict[str, Any] = wfctl("log", run_id, "--store", store, "--json").json()
    return log


def _lineage_ok(store: Path) -> None:
    done = wfctl("verify-lineage", "--store", store, "--json")
    assert done.code == 0, done.stdout
    assert done.json()["ok"] is True


def test_submit_queues_and_a_worker_completes(tmp_path: Path) -> None:
    store = tmp_path / "store"
    run_id = _submit(store, "greet.py", "ann")
    assert _runs(store) == {run_id: "queued"}
    log = wfctl("log", run_id, "--store", store, "--json").json()
    assert [c["kind"] for c in log["checkpoints"]] == ["root"]

    log = _worker_completes(store, run_id)
    assert log["run"]["status"] == "completed"
    # A queued run starts from its root: no retry record before its first step.
    assert [c["kind"] for c in log["checkpoints"]] == ["root", "step", "completed"]
    _lineage_ok(store)


def test_submit_refuses_what_run_refuses(tmp_path: Path) -> None:
    store = tmp_path / "store"
    _submit(store, "greet.py", "ann", run_id="taken")
    again = wfctl("submit", WORKFLOWS / "greet.py", "--run-id", "taken", "--store", store)
    assert again.code == 2
    assert "exists already" in again.error_line()
    bad = wfctl("submit", WORKFLOWS / "greet.py", "--input", "{nope", "--store", store)
    assert bad.code == 2 and "--input" in bad.error_line()
    assert list(_runs(store)) == ["taken"]


def test_a_killed_worker_s_run_is_finished_by_another(tmp_path: Path) -> None:
    store, gate = tmp_path / "store", tmp_path / "gate"
    run_id, first = _driving(store, gate, "relay.py")
    assert _runs(store) == {run_id: "running"}
    first.send_signal(signal.SIGKILL)
    first.communicate(timeout=60)
    assert _runs(store) == {run_id: "interrupted"}  # its lease died with it

    (gate / "gate").touch()
    events = _finish(_worker(store, "--exit-when-idle", "--workflows", WORKFLOWS))
    ended = [(e["event"], e["run_id"], e["status"]) for e in events if e["event"] == "ended"]
    assert ended == [("ended", run_id, "completed")]
    log = wfctl("log", run_id, "--store", store, "--json").json()
    assert [c["kind"] for c in log["checkpoints"]] == [
        "root", "step", "resume", "step", "step", "completed",
    ]  # fmt: skip
    # `hold` ran again: it had not committed when its worker died (at least once).
    executed = (gate / run_id).read_text(encoding="utf-8").splitlines()
    assert executed == ["first", "hold", "hold", "last"]
    _lineage_ok(store)


def test_a_run_killed_before_its_first_commit_is_queued_again(tmp_path: Path) -> None:
    store, gate = tmp_path / "store", tmp_path / "gate"
    run_id, first = _driving(store, gate, "gated.py")
    first.send_signal(signal.SIGKILL)
    first.communicate(timeout=60)
    assert _runs(store) == {run_id: "queued"}  # nothing was committed: it starts again
    (gate / "gate").touch()
    _finish(_worker(store, "--exit-when-idle", "--workflows", WORKFLOWS))
    log = wfctl("log", run_id, "--store", store, "--json").json()
    assert [c["kind"] for c in log["checkpoints"]] == ["root", "step", "step", "completed"]
    _lineage_ok(store)


def test_a_run_whose_driver_died_is_recovered_from_its_last_commit(tmp_path: Path) -> None:
    """``wfctl run`` SIGKILLed after a step's commit: a worker serves that step and goes on."""
    store, gate = tmp_path / "store", tmp_path / "gate"
    gate.mkdir()
    driver = subprocess.Popen(
        [wfctl_executable(), "run", str(WORKFLOWS / "relay.py"), "--input", json.dumps(str(gate)),
         "--run-id", "relayed", "--store", str(store)],
        env=base_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    _wait_for(gate / "started", driver)
    driver.send_signal(signal.SIGKILL)
    driver.communicate(timeout=60)
    assert _runs(store) == {"relayed": "interrupted"}

    (gate / "gate").touch()
    events = _finish(_worker(store, "--exit-when-idle", "--workflows", WORKFLOWS))
    assert [(e["event"], e["status"]) for e in events][:2] == [
        ("taken", None),
        ("ended", "completed"),
    ]
    log = wfctl("log", "relayed", "--store", store, "--json").json()
    kinds = [c["kind"] for c in log["checkpoints"]]
    assert kinds == ["root", "step", "resume", "step", "step", "completed"]
    # `first` committed before the kill: served, not run again. `hold` had not committed: it
    # ran again (at least once before its commit). `last` ran once.
    executed = (gate / "relayed").read_text(encoding="utf-8").splitlines()
    assert executed == ["first", "hold", "hold", "last"]
    _lineage_ok(store)


def test_workers_share_a_store_and_drive_each_run_once(tmp_path: Path) -> None:
    store, marks = tmp_path / "store", tmp_path / "marks"
    marks.mkdir()
    # Submitted in-process (the library call behind `wfctl submit`): 40 processes would be slow.
    run_ids = [
        submit_workflow(
            str(WORKFLOWS / "tally.py"), store=store, input_json=json.dumps(str(marks))
        ).run_id
        for _ in range(40)
    ]
    workers = [
        _worker(store, "--exit-when-idle", "--concurrency", "2", "--workflows", WORKFLOWS)
        for _ in range(3)
    ]
    events = [event for process in workers for event in _finish(process)]
    taken = sorted(e["run_id"] for e in events if e["event"] == "taken")
    assert taken == sorted(run_ids)  # each run taken by exactly one worker, once
    ended = {e["run_id"]: e["status"] for e in events if e["event"] == "ended"}
    assert ended == dict.fromkeys(run_ids, "completed")
    assert _runs(store) == dict.fromkeys(run_ids, "completed")
    # No worker died, so every step of every run executed exactly once.
    for run_id in run_ids:
        lines = (marks / run_id).read_text(encoding="utf-8").splitlines()
        assert lines == ["step 0", "step 1", "step 2"], run_id
    _lineage_ok(store)


def test_sigterm_hands_the_runs_being_driven_over_to_another_worker(tmp_path: Path) -> None:
    store, gate = tmp_path / "store", tmp_path / "gate"
    run_id, process = _driving(store, gate, "gated.py")
    process.send_signal(signal.SIGTERM)
    assert process.stdout is not None
    lines = [json.loads(process.stdout.readline()) for _ in range(2)]
    assert [(e["event"], e["reason"]) for e in lines] == [("taken", None), ("stopping", "SIGTERM")]
    (gate / "gate").touch()  # the running step finishes; the run pauses before the next one
    events = _finish(process)
    assert [(e["event"], e["status"], e["reason"]) for e in events] == [
        ("ended", "interrupted", "handoff")
    ]
    log = wfctl("log", run_id, "--store", store, "--json").json()
    assert [c["kind"] for c in log["checkpoints"]] == ["root", "step", "pause"]
    assert _runs(store) == {run_id: "interrupted"}  # not a person's pause: anyone's to take

    # Another worker takes the handed-over run and completes it, in the same chain.
    log = _worker_completes(store, run_id)
    assert [c["kind"] for c in log["checkpoints"]] == [
        "root", "step", "pause", "resume", "step", "completed",
    ]  # fmt: skip
    assert _runs(store) == {run_id: "completed"}
    _lineage_ok(store)


def test_a_handed_over_run_resumes_from_the_command_line(tmp_path: Path) -> None:
    store, gate = tmp_path / "store", tmp_path / "gate"
    run_id, process = _driving(store, gate, "gated.py")
    process.send_signal(signal.SIGTERM)
    assert process.stdout is not None
    # The signal handled before the gate opens: else the run may finish first (a race).
    lines = [json.loads(process.stdout.readline()) for _ in range(2)]
    assert [e["event"] for e in lines] == ["taken", "stopping"]
    (gate / "gate").touch()
    _finish(process)
    done = wfctl("resume", run_id, "--store", store, "--json")
    assert done.code == 0, done.stderr
    assert done.json()["status"] == "completed"
    _lineage_ok(store)


def test_a_run_paused_by_a_person_under_a_worker_stays_paused(tmp_path: Path) -> None:
    store, gate = tmp_path / "store", tmp_path / "gate"
    run_id, process = _driving(store, gate, "gated.py")
    paused = wfctl("pause", run_id, "--store", store)
    assert paused.code == 0, paused.stderr
    (gate / "gate").touch()
    assert process.stdout is not None
    _taken, ended = (json.loads(process.stdout.readline()) for _ in range(2))
    assert (ended["event"], ended["status"], ended["reason"]) == ("ended", "interrupted", None)
    process.send_signal(signal.SIGTERM)
    _finish(process)
    assert _runs(store) == {run_id: "interrupted"}
    # A person's pause is not a hand-over: no worker takes it.
    idle = _finish(_worker(store, "--exit-when-idle", "--workflows", WORKFLOWS))
    assert [e["event"] for e in idle] == ["idle"]
    assert wfctl("resume", run_id, "--store", store).code == 0
    _lineage_ok(store)


def test_a_run_paused_for_answers_is_not_taken(tmp_path: Path) -> None:
    store = tmp_path / "store"
    paused = wfctl("run", WORKFLOWS / "review.py", "--store", store, "--json")
    assert paused.code == 3, paused.stderr
    events = _finish(_worker(store, "--exit-when-idle", "--workflows", WORKFLOWS))
    assert [e["event"] for e in events] == ["idle"]
    assert _runs(store) == {paused.json()["run_id"]: "paused"}


def test_code_outside_workflows_is_left_alone_and_reported_once(tmp_path: Path) -> None:
    store, elsewhere = tmp_path / "store", tmp_path / "elsewhere"
    elsewhere.mkdir()
    run_id = _submit(store, "greet.py", "ann")
    process = _worker(store, "--exit-when-idle", "--workflows", elsewhere, "--poll", "0.01")
    events = _finish(process)
    assert [(e["event"], e["run_id"]) for e in events] == [("refused", run_id), ("idle", None)]
    assert "not under --workflows" in events[0]["reason"]
    assert _runs(store) == {run_id: "queued"}  # untouched: another worker may take it
    log = wfctl("log", run_id, "--store", store, "--json").json()
    assert [c["kind"] for c in log["checkpoints"]] == ["root"]


def test_worker_without_json_says_what_it_does(tmp_path: Path) -> None:
    store = tmp_path / "store"
    run_id = _submit(store, "greet.py", "ann")
    done = wfctl("worker", "--store", store, "--exit-when-idle", "--workflows", WORKFLOWS)
    assert done.code == 0, done.stderr
    assert done.stdout == ""
    lines = done.stderr.splitlines()
    assert lines[0] == f"took {run_id} (greet)"
    assert lines[1] == f"ended {run_id} (greet) completed"
    assert lines[-1] == "worker stopped: took 1 run(s) (1 completed)"


def test_worker_refuses_a_missing_named_store(tmp_path: Path) -> None:
    done = wfctl("worker", "--store", tmp_path / "nope", "--exit-when-idle")
    assert done.code == 2
    done.error_line()


def test_resume_starts_a_queued_run_here(tmp_path: Path) -> None:
    store = tmp_path / "store"
    run_id = _submit(store, "greet.py", "ann")
    listed = wfctl("runs", "--status", "queued", "--store", store, "--json").json()["runs"]
    assert [run["run_id"] for run in listed] == [run_id]
    done = wfctl("resume", run_id, "--store", store, "--json")
    assert done.code == 0, done.stderr
    assert done.json()["status"] == "completed"
    log = wfctl("log", run_id, "--store", store, "--json").json()
    assert [c["kind"] for c in log["checkpoints"]] == ["root", "step", "completed"]


def test_a_second_ctrl_c_aborts_the_runs_being_driven(tmp_path: Path) -> None:
    store, gate = tmp_path / "store", tmp_path / "gate"
    run_id, process = _driving(store, gate, "blocked.py")  # its step never ends by itself
    assert process.stdout is not None
    assert json.loads(process.stdout.readline())["event"] == "taken"
    process.send_signal(signal.SIGINT)
    assert json.loads(process.stdout.readline())["reason"] == "SIGINT"
    process.send_signal(signal.SIGINT)
    events = _finish(process, code=130)
    assert [(e["event"], e["status"]) for e in events] == [("ended", "aborted")]
    assert _runs(store) == {run_id: "queued"}  # nothing committed; its lease is free again


def test_a_run_whose_code_changed_or_breaks_is_left_alone(tmp_path: Path) -> None:
    store, code = tmp_path / "store", tmp_path / "code"
    code.mkdir()
    source = (WORKFLOWS / "greet.py").read_text(encoding="utf-8")
    (code / "greet.py").write_text(source, encoding="utf-8")
    (code / "broken.py").write_text(source, encoding="utf-8")
    changed = wfctl("submit", code / "greet.py", "--store", store, "--json").json()["run_id"]
    broken = wfctl("submit", code / "broken.py", "--store", store, "--json").json()["run_id"]
    (code / "greet.py").write_text(source.replace("name.upper()", "name.lower()"), "utf-8")
    (code / "broken.py").write_text(source + "\nraise RuntimeError('no import')\n", "utf-8")

    events = _finish(_worker(store, "--exit-when-idle", "--workflows", code))
    refused = {e["run_id"]: e["reason"] for e in events if e["event"] == "refused"}
    assert set(refused) == {changed, broken} and events[-1]["event"] == "idle"
    assert "changed" in refused[changed]
    assert "no import" in refused[broken]
    assert _runs(store) == {changed: "queued", broken: "queued"}


def test_a_run_whose_code_exits_at_import_is_refused_like_one_that_raises(
    tmp_path: Path,
) -> None:
    store, code = tmp_path / "store", tmp_path / "code"
    code.mkdir()
    leaves = code / "leaves.py"
    leaves.write_text((WORKFLOWS / "greet.py").read_text(encoding="utf-8"), encoding="utf-8")
    run_id = wfctl("submit", leaves, "--store", store, "--json").json()["run_id"]
    with leaves.open("a", encoding="utf-8") as appended:
        appended.write("\nimport sys\n\nsys.exit(0)\n")

    # Before, the SystemExit ended the worker: status 0, a traceback, no event, the run queued.
    done = wfctl(
        "worker", "--store", store, "--json", "--exit-when-idle", "--workflows", code,
    )  # fmt: skip
    assert (done.code, done.stderr) == (0, "")
    events = [json.loads(line) for line in done.stdout.splitlines()]
    assert [(e["event"], e["run_id"]) for e in events] == [("refused", run_id), ("idle", None)]
    assert events[0]["reason"] == (
        f"cannot load '{leaves}:greet': running {leaves} raised SystemExit(0)"
    )
    assert _runs(store) == {run_id: "queued"}


def test_a_cancelled_queued_run_is_not_taken(tmp_path: Path) -> None:
    store = tmp_path / "store"
    run_id = _submit(store, "greet.py", "ann")
    cancelled = wfctl("cancel", run_id, "--store", store, "--json")
    assert cancelled.code == 0, cancelled.stderr
    assert cancelled.json()["previous_status"] == "queued"
    events = _finish(_worker(store, "--exit-when-idle", "--workflows", WORKFLOWS))
    assert [e["event"] for e in events] == ["idle"]
    assert _runs(store) == {run_id: "cancelled"}


def test_log_follow_waits_for_a_worker_to_drive_a_queued_run(tmp_path: Path) -> None:
    store = tmp_path / "store"
    run_id = _submit(store, "greet.py", "ann")
    follow = subprocess.Popen(
        [wfctl_executable(), "log", run_id, "--follow", "--json", "--store", str(store)],
        env=base_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    assert follow.stdout is not None
    assert json.loads(follow.stdout.readline())["kind"] == "root"  # it follows the queued run
    _finish(_worker(store, "--exit-when-idle", "--workflows", WORKFLOWS))
    rest = [json.loads(line) for line in follow.communicate(timeout=60)[0].splitlines()]
    assert follow.returncode == 0
    assert [line.get("kind") for line in rest] == ["step", "completed", None]
    assert rest[-1]["schema"] == "wfctl/log-end@1" and rest[-1]["status"] == "completed"


def test_a_polling_worker_reports_a_refusal_once_and_takes_new_runs(tmp_path: Path) -> None:
    store, elsewhere = tmp_path / "store", tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "greet.py").write_text((WORKFLOWS / "greet.py").read_text("utf-8"), "utf-8")
    refused = wfctl("submit", elsewhere / "greet.py", "--store", store, "--json").json()["run_id"]
    process = _worker(store, "--workflows", WORKFLOWS, "--poll", "0.01")
    assert process.stdout is not None
    assert json.loads(process.stdout.readline())["run_id"] == refused
    later = _submit(store, "greet.py", "bo")  # submitted while the worker polls
    taken, ended = (json.loads(process.stdout.readline()) for _ in range(2))
    assert (taken["event"], ended["event"], ended["status"]) == ("taken", "ended", "completed")
    assert taken["run_id"] == ended["run_id"] == later
    process.send_signal(signal.SIGTERM)
    rest = _finish(process)
    assert [e["event"] for e in rest] == ["stopping"]  # the refused run was not reported again
    assert _runs(store) == {refused: "queued", later: "completed"}


def test_an_unreachable_store_is_one_line_for_people(capsys: pytest.CaptureFixture[str]) -> None:
    """A worker's ``unreachable`` event (its store stopped answering) reads as one line."""
    from wfctl._drive._worker import WorkerEvent
    from wfctl._render._worker import print_worker_event  # the renderer, without a server

    print_worker_event(WorkerEvent("unreachable", reason="store 'db' cannot be reached: gone"))
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err == "store 'db' cannot be reached: gone; looking again until it answers\n"
