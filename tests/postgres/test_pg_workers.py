"""Workers, crashes, stale writers and a server restart on a real private PostgreSQL server.

Every worker and driver is a real ``wfctl`` process; one is SIGKILLed mid-run, a lease's
session is terminated by the server, the server is restarted under a running ``wfctl run``.
Steps are gated on files the test creates and count their executions in files; the only waits
are bounded polls for what another process or the server does (never a timing threshold).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import psycopg

from tests.cli.conftest import WORKFLOWS, base_env, spawn, wfctl, wfctl_executable
from tests.postgres.conftest import opened
from tests.storage.helpers import arun, ckpt
from wfctl._drive._submit import submit_workflow
from wfctl._records._payloads import HANDOFF, PausePayload
from wfctl.storage.testing import PrivateServer, restart, stopped

REPO = Path(__file__).resolve().parents[2]


def _worker(url: str, *args: str | Path) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [wfctl_executable(), "worker", "--store", url, "--json", "--workflows", str(WORKFLOWS),
         *map(str, args)],
        env=base_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip


def _finish(process: subprocess.Popen[str], code: int = 0) -> list[dict[str, Any]]:
    """Wait for a process; check its exit code; return its JSON Lines."""
    stdout, stderr = process.communicate(timeout=300)
    assert process.returncode == code, stderr
    return [json.loads(line) for line in stdout.splitlines()]


@contextlib.contextmanager
def _stopped_after(worker: subprocess.Popen[str]) -> Iterator[None]:
    """Send the worker SIGTERM after the block; if the block failed, kill it and wait for it
    instead, so that no running process or open pipe is left for a later test to trip on."""
    try:
        yield
    except BaseException:
        worker.kill()
        worker.communicate(timeout=60)
        raise
    worker.send_signal(signal.SIGTERM)


def _poll(
    done: Callable[[], bool], what: str, process: subprocess.Popen[str] | None = None
) -> None:
    """Wait (bounded) for another process or the server to make ``done()`` true."""
    end = time.monotonic() + 60
    while not done():
        assert process is None or process.poll() is None, process.communicate()
        assert time.monotonic() < end, f"{what} never happened"
        time.sleep(0.02)


def _runs(url: str) -> dict[str, str]:
    done = wfctl("runs", "--store", url, "--json")
    assert done.code == 0, done.stderr
    return {run["run_id"]: run["status"] for run in done.json()["runs"]}


def _kinds(url: str, run_id: str) -> list[str]:
    log = wfctl("log", run_id, "--store", url, "--json").json()
    return [c["kind"] for c in log["checkpoints"]]


def _lineage_ok(url: str, runs: int) -> None:
    done = wfctl("verify-lineage", "--store", url, "--json")
    assert done.code == 0, done.stdout
    verdict = done.json()
    assert verdict["ok"] is True
    assert len(verdict["runs"]) == runs


def _compete(url: str, tmp_path: Path, runs: int, workers: int) -> None:
    marks = tmp_path / "marks"
    marks.mkdir()
    # Submitted in-process (the library call behind `wfctl submit`): one process per run is slow.
    run_ids = [
        submit_workflow(
            str(WORKFLOWS / "tally.py"), store=url, input_json=json.dumps(str(marks))
        ).run_id
        for _ in range(runs)
    ]
    started = [_worker(url, "--exit-when-idle", "--concurrency", "2") for _ in range(workers)]
    events = [event for process in started for event in _finish(process)]
    taken = sorted(e["run_id"] for e in events if e["event"] == "taken")
    assert taken == sorted(run_ids)  # each run taken by exactly one worker, once
    ended = {e["run_id"]: e["status"] for e in events if e["event"] == "ended"}
    assert ended == dict.fromkeys(run_ids, "completed")
    assert _runs(url) == dict.fromkeys(run_ids, "completed")
    for run_id in run_ids:  # no worker died: each step of each run executed exactly once
        lines = (marks / run_id).read_text(encoding="utf-8").splitlines()
        assert lines == ["step 0", "step 1", "step 2"], run_id
    _lineage_ok(url, runs)


def test_eight_workers_drive_two_hundred_runs_each_once(pg_url: str, tmp_path: Path) -> None:
    _compete(pg_url, tmp_path, runs=200, workers=8)  # about 30 s on 2 shared cores


def _driving(url: str, gate: Path, workflow: str) -> tuple[str, subprocess.Popen[str]]:
    """Submit a gated run and start a worker; return once its gated step is running."""
    gate.mkdir()
    run_id = submit_workflow(
        str(WORKFLOWS / workflow), store=url, input_json=json.dumps(str(gate))
    ).run_id
    process = _worker(url)
    _poll((gate / "started").exists, "the gated step", process)
    return run_id, process


def test_a_sigkilled_worker_s_run_is_finished_by_another(pg_url: str, tmp_path: Path) -> None:
    gate = tmp_path / "gate"
    run_id, first = _driving(pg_url, gate, "relay.py")
    assert _runs(pg_url) == {run_id: "running"}
    first.send_signal(signal.SIGKILL)
    first.communicate(timeout=60)
    # The server ends the dead session, and with it the lease's advisory lock.
    _poll(lambda: _runs(pg_url) == {run_id: "interrupted"}, "the lease's release")

    (gate / "gate").touch()
    events = _finish(_worker(pg_url, "--exit-when-idle"))
    ended = [(e["event"], e["run_id"], e["status"]) for e in events if e["event"] == "ended"]
    assert ended == [("ended", run_id, "completed")]
    assert _kinds(pg_url, run_id) == ["root", "step", "resume", "step", "step", "completed"]
    # `first` committed before the kill: served. `hold` had not: it ran again. `last` once.
    executed = (gate / run_id).read_text(encoding="utf-8").splitlines()
    assert executed == ["first", "hold", "hold", "last"]
    _lineage_ok(pg_url, 1)


def test_sigterm_hands_a_run_over_to_another_worker(pg_url: str, tmp_path: Path) -> None:
    gate = tmp_path / "gate"
    run_id, first = _driving(pg_url, gate, "gated.py")
    first.send_signal(signal.SIGTERM)
    assert first.stdout is not None
    lines = [json.loads(first.stdout.readline()) for _ in range(2)]
    assert [(e["event"], e["reason"]) for e in lines] == [("taken", None), ("stopping", "SIGTERM")]
    (gate / "gate").touch()
    events = _finish(first)
    assert [(e["event"], e["status"], e["reason"]) for e in events] == [
        ("ended", "interrupted", HANDOFF)
    ]
    assert _runs(pg_url) == {run_id: "interrupted"}
    events = _finish(_worker(pg_url, "--exit-when-idle"))
    assert [(e["event"], e["status"]) for e in events] == [
        ("taken", None),
        ("ended", "completed"),
        ("idle", None),
    ]
    assert _kinds(pg_url, run_id) == ["root", "step", "pause", "resume", "step", "completed"]
    _lineage_ok(pg_url, 1)


def test_only_a_handoff_pause_is_claimed(pg_url: str) -> None:
    """A request pause whose data holds the hand-over's bytes is still not claimed."""

    def pause(reason: str, requests: list[Any]) -> dict[str, Any]:
        return {"requests": requests, "reason": reason}

    decoy = [{"request_id": "q", "data": {"reason": HANDOFF}}]
    assert PausePayload.from_json(pause(HANDOFF, []), "x").reason == HANDOFF

    async def main() -> None:
        async with opened(pg_url) as store:
            for run_id, data in (
                ("handed", pause(HANDOFF, [])),
                ("person", pause("interrupt", [])),
                ("asks", pause("request", decoy)),
            ):
                lease = await store.lease_run(run_id)
                await store.save(ckpt(run_id, 0))
                await store.save(ckpt(run_id, 1, "pause", data=data))
                await lease.release()
            claimed = await store.claim_run()
            assert claimed is not None and claimed.run_id == "handed"
            assert await store.claim_run() is None
            await claimed.release()
            statuses = {s.run_id: s.status for s in await store.list_runs()}
            assert statuses == {"handed": "interrupted", "person": "interrupted", "asks": "paused"}

    arun(main())


STALE = """
import asyncio, sys
from wfctl._storage._postgres import PostgresCheckpointStorage
from tests.storage.helpers import ckpt

async def main():
    store = PostgresCheckpointStorage(sys.argv[1])
    lease = await store.lease_run("r1")
    await store.save(ckpt("r1", 0))
    print(lease._conn.info.backend_pid, flush=True)
    await asyncio.get_running_loop().run_in_executor(None, sys.stdin.readline)
    try:
        await store.save(ckpt("r1", 1, data={"by": "stale"}))
    except Exception as exc:
        print("refused", type(exc).__name__, str(exc).replace("\\n", " "), flush=True)
    else:
        print("saved", flush=True)
    await lease.release()
    await store.aclose()

asyncio.run(main())
"""


def test_a_writer_whose_lease_session_was_killed_cannot_append(pg_url: str) -> None:
    stale = subprocess.Popen(
        [sys.executable, "-c", STALE, pg_url],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, cwd=REPO,
        env={**os.environ, "PYTHONPATH": str(REPO)},
    )  # fmt: skip
    assert stale.stdin is not None and stale.stdout is not None
    try:
        backend = int(stale.stdout.readline())
        with psycopg.connect(pg_url, autocommit=True) as conn:
            conn.execute("SELECT pg_terminate_backend(%s)", (backend,))

        async def take_over() -> tuple[Any, Any]:
            store = await opened(pg_url).__aenter__()
            deadline = time.monotonic() + 60
            while True:  # the server ends the killed session and drops its lock
                try:
                    return store, await store.lease_run("r1")
                except Exception:
                    assert time.monotonic() < deadline
                    await asyncio.sleep(0.02)

        async def main() -> None:
            store, lease = await take_over()
            try:
                stale.stdin.write("go\n")  # type: ignore[union-attr]
                stale.stdin.flush()  # type: ignore[union-attr]
                said = await asyncio.to_thread(stale.stdout.readline)  # type: ignore[union-attr]
                # Refused by the store (its lease's session ended) or by the database (a
                # stale fence): either way the stale writer's link is not stored.
                assert said.startswith("refused LeaseLostError"), said
                assert "lost its lease" in said or "taken over" in said, said
                await store.save(ckpt("r1", 1, data={"by": "taker"}))
                fence = lease.fence
            finally:
                await lease.release()
                await store.aclose()
            with psycopg.connect(pg_url) as conn:
                rows = conn.execute(
                    "SELECT seq, fence FROM wfctl_checkpoints WHERE run_id = 'r1' ORDER BY seq"
                ).fetchall()
            assert [seq for seq, _ in rows] == [0, 1]
            assert rows[1][1] == fence  # the taker's link, not the stale writer's
            async with opened(pg_url) as reader:
                [_, second] = await reader.list_checkpoints(run_id="r1")
                assert second.data == {"by": "taker"}

        arun(main())
        assert stale.wait(timeout=60) == 0
    finally:
        if stale.poll() is None:
            stale.kill()
        stale.wait()
        stale.stdin.close()
        stale.stdout.close()


def test_a_server_restart_under_wfctl_run_stops_it_cleanly_and_resume_completes(
    pg_server: PrivateServer, pg_url: str, tmp_path: Path
) -> None:
    gate = tmp_path / "gate"
    gate.mkdir()
    driver = spawn(
        "run", WORKFLOWS / "relay.py", "--input", json.dumps(str(gate)), "--run-id", "relayed",
        "--store", pg_url, "--json",
    )  # fmt: skip
    _poll((gate / "started").exists, "the gated step", driver)  # `first` is committed
    restart(pg_server)  # every session ends: the run's lease and its pool's connections
    (gate / "gate").touch()
    stdout, stderr = driver.communicate(timeout=120)
    assert "Traceback" not in stderr
    before = _kinds(pg_url, "relayed")
    # Its lease's session ended: the next save, which goes over that session, fails (it never
    # lands without the run's lock), nothing more is written, and the run stops with one line
    # (exit 2: the store refused it), its records intact.
    assert (driver.returncode, stdout) == (2, ""), stderr
    [line] = stderr.splitlines()
    assert line.startswith("wfctl: error: run 'relayed' lost its lease"), line
    assert "wfctl resume relayed" in line and "corrupt" not in line
    assert before == ["root", "step"]
    assert _runs(pg_url) == {"relayed": "interrupted"}

    done = wfctl("resume", "relayed", "--store", pg_url, "--json", cwd=WORKFLOWS)
    assert done.code == 0, done.stderr
    assert done.json()["status"] == "completed"
    after = _kinds(pg_url, "relayed")
    assert after[: len(before)] == before  # nothing lost or rewritten
    assert after[len(before) :] == ["resume", "step", "step", "completed"]
    executed = (gate / "relayed").read_text(encoding="utf-8").splitlines()
    assert executed == ["first", "hold", "hold", "last"]  # `first` was served, not run again
    _lineage_ok(pg_url, 1)


def test_a_long_lived_worker_takes_back_every_run_a_server_restart_cost_it(
    pg_server: PrivateServer, pg_url: str, tmp_path: Path
) -> None:
    """A crash of the server (``-m immediate``) ends every lease's session under a worker driving
    three runs: the same worker takes each run back once its step has found the lease gone (not
    while the step still runs here), under a new fence, and finishes it; no committed step runs
    again."""

    def submit(gate: Path) -> str:
        gate.mkdir()
        return submit_workflow(
            str(WORKFLOWS / "relay.py"), store=pg_url, input_json=json.dumps(str(gate))
        ).run_id

    gates = [tmp_path / f"gate{i}" for i in range(3)]
    run_ids = [submit(gate) for gate in gates]
    worker = _worker(pg_url, "--concurrency", "4", "--poll", "0.05")  # room for one more
    assert worker.stdout is not None
    with _stopped_after(worker):
        for gate in gates:  # `first` is committed in each run; `hold` waits at its gate
            _poll((gate / "started").exists, "the gated step", worker)
        lines = [json.loads(worker.stdout.readline()) for _ in run_ids]
        assert sorted(e["run_id"] for e in lines if e["event"] == "taken") == sorted(run_ids)
        with psycopg.connect(pg_url) as conn:
            before = dict(conn.execute("SELECT run_id, fence FROM wfctl_runs").fetchall())
        restart(pg_server, mode="immediate")  # every session ends: the leases with them
        # The three runs look free now (no lock held), and are older than a run queued now:
        # the worker's free slot takes the new one, not a run whose step it still runs.
        late_gate = tmp_path / "late"
        late = submit(late_gate)
        (late_gate / "gate").touch()
        # A poll while the server restarted finds it down: the worker says so, once.
        outage: list[dict[str, Any]] = []
        while (taken := json.loads(worker.stdout.readline()))["event"] == "unreachable":
            outage.append(taken)
        assert (taken["event"], taken["run_id"]) == ("taken", late)
        assert len(outage) <= 1
        for gate in gates:
            (gate / "gate").touch()
        # Each `hold` returns; its save finds the lease gone; the worker claims the run again.
        everything = dict.fromkeys([*run_ids, late], "completed")
        _poll(lambda: _runs(pg_url) == everything, "the runs' end", worker)
    events = [*lines, *outage, taken, *_finish(worker)]
    for run_id, gate in zip(run_ids, gates, strict=True):
        mine = [(e["event"], e["status"]) for e in events if e["run_id"] == run_id]
        assert mine == [
            ("taken", None),
            ("ended", "error"),
            ("taken", None),
            ("ended", "completed"),
        ]
        assert _kinds(pg_url, run_id) == ["root", "step", "resume", "step", "step", "completed"]
        executed = (gate / run_id).read_text(encoding="utf-8").splitlines()
        assert executed == ["first", "hold", "hold", "last"]  # `first` was served, not run again
    assert [(e["event"], e["status"]) for e in events if e["run_id"] == late] == [
        ("taken", None),
        ("ended", "completed"),
    ]
    assert not [e for e in events if e["event"] == "refused"]
    with psycopg.connect(pg_url) as conn:
        rows = conn.execute("SELECT run_id, seq, fence FROM wfctl_checkpoints").fetchall()
    for run_id, seq, fence in rows:  # `first` under the first lease; the rest under a new one
        if run_id in before:
            assert fence == before[run_id] if seq == 1 else seq == 0 or fence > before[run_id]
    _lineage_ok(pg_url, 4)


def test_a_worker_waits_out_a_server_outage_and_finishes_its_run(
    pg_server: PrivateServer, pg_url: str, tmp_path: Path
) -> None:
    """The server goes down under a worker driving a run and stays down while the run's step
    ends: the worker says once that the store is unreachable, keeps looking, and once the server
    is back takes the run again and finishes it."""
    gate = tmp_path / "gate"
    run_id, worker = _driving(pg_url, gate, "relay.py")
    assert worker.stdout is not None
    with _stopped_after(worker):
        with stopped(pg_server):
            (gate / "gate").touch()  # `hold` returns; its save finds the lease gone
            lines = [json.loads(worker.stdout.readline()) for _ in range(3)]
            assert [(e["event"], e["status"]) for e in lines] == [
                ("taken", None),
                ("ended", "error"),
                ("unreachable", None),
            ]
            assert "lost its lease" in lines[1]["reason"]
            assert "cannot be reached" in lines[2]["reason"]
        _poll(lambda: _runs(pg_url) == {run_id: "completed"}, "the run's end", worker)
    events = _finish(worker)
    assert [(e["event"], e["status"]) for e in events] == [
        ("taken", None),
        ("ended", "completed"),
        ("stopping", None),
    ]
    assert _kinds(pg_url, run_id) == ["root", "step", "resume", "step", "step", "completed"]
    executed = (gate / run_id).read_text(encoding="utf-8").splitlines()
    assert executed == ["first", "hold", "hold", "last"]
    _lineage_ok(pg_url, 1)


#: How docs/engine.md says to end the lease of a holder that is alive but stuck: end the session
#: holding the run's advisory lock (the server drops the lock with it).
END_LEASE = (
    "SELECT pg_terminate_backend(l.pid) FROM pg_locks l WHERE l.locktype = 'advisory'"
    " AND l.objsubid = 1 AND l.granted"
    " AND ((l.classid::bigint << 32) | l.objid::bigint) = hashtextextended(%s, 2003198836)"
)


def test_a_stopped_worker_keeps_its_run_until_its_session_is_ended(
    pg_url: str, tmp_path: Path
) -> None:
    """A SIGSTOPped worker's run is not taken over (its lease is its session, still open); once
    its lease's session is ended another worker finishes the run, and the stopped worker, resumed,
    cannot append: its lease is gone and its fence stale."""
    gate = tmp_path / "gate"
    run_id, stuck = _driving(pg_url, gate, "relay.py")
    assert stuck.stdout is not None
    assert json.loads(stuck.stdout.readline())["event"] == "taken"
    stuck.send_signal(signal.SIGSTOP)
    try:
        # Held: another worker passes it over, however long the holder has been stopped.
        events = _finish(_worker(pg_url, "--exit-when-idle"))
        assert [e["event"] for e in events] == ["idle"]
        assert _runs(pg_url) == {run_id: "running"}
        with psycopg.connect(pg_url, autocommit=True) as conn:
            [(ended,)] = conn.execute(END_LEASE, (run_id,)).fetchall()
            assert ended is True
        _poll(lambda: _runs(pg_url) == {run_id: "interrupted"}, "the lease's end")
        (gate / "gate").touch()
        events = _finish(_worker(pg_url, "--exit-when-idle"))
        assert [(e["event"], e["status"]) for e in events] == [
            ("taken", None),
            ("ended", "completed"),
            ("idle", None),
        ]
    finally:
        stuck.send_signal(signal.SIGCONT)
    # Resumed, its `hold` returns (the gate is open) and its save is refused: nothing stored.
    line = json.loads(stuck.stdout.readline())
    assert (line["event"], line["status"]) == ("ended", "error")
    assert "lost its lease" in line["reason"]
    stuck.send_signal(signal.SIGTERM)
    assert [e["event"] for e in _finish(stuck)] == ["stopping"]
    assert _kinds(pg_url, run_id) == ["root", "step", "resume", "step", "step", "completed"]
    executed = (gate / run_id).read_text(encoding="utf-8").splitlines()
    assert executed == ["first", "hold", "hold", "last"]  # the stopped worker's `last` never ran
    _lineage_ok(pg_url, 1)
