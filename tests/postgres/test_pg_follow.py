"""``wfctl log --follow`` on PostgreSQL: a live run's checkpoints as they commit, then its end.

As ``tests/cli/test_follow.py`` does on the file store: the followed run is a real ``wfctl run``
of ``workflows/gated.py`` stopped at a file gate, and each test reads the follower's first line
(the root) before it opens the gate, kills the run or interrupts the follower, so the order of
events is fixed, not timed.
"""

from __future__ import annotations

import json
import signal
import subprocess
from pathlib import Path
from typing import Any, cast

from tests.cli.conftest import WORKFLOWS, base_env, invoke, run_id_of, wfctl_executable
from tests.cli.test_cancel_rm import start_gated
from tests.conftest import arun
from wfctl._drive._loader import load_workflow
from wfctl._engine._admission import submit_run
from wfctl.storage import open_storage

GATED = Path(__file__).resolve().parents[1] / "cli" / "workflows" / "gated.py"
MANY = WORKFLOWS / "many.py"


def _follow(url: str, run_id: str, *extra: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [wfctl_executable(), "log", run_id, "--follow", "--store", url, *extra],
        env=base_env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def _first(follower: subprocess.Popen[str]) -> Any:
    assert follower.stdout is not None
    return json.loads(follower.stdout.readline())


def test_follow_prints_each_checkpoint_once_then_the_run_s_end(pg_url: str, tmp_path: Path) -> None:
    run, gate = start_gated(cast(Path, pg_url), tmp_path, "live")
    try:
        follower = _follow(pg_url, "live", "--json")
        first = _first(follower)  # the follower runs and has read the root
        assert first["checkpoint_id"] == "live.0"
    finally:
        (gate / "gate").write_text("", encoding="utf-8")
    rest, errors = follower.communicate(timeout=60)
    run.communicate(timeout=60)
    assert (follower.returncode, errors) == (0, "")

    lines = [first, *map(json.loads, rest.splitlines())]
    assert lines[-1] == {
        "schema": "wfctl/log-end@1",
        "run_id": "live",
        "status": "completed",
        "head_checkpoint_id": "live.3",
    }
    stored = invoke("log", "live", "--store", pg_url, "--json").json()["checkpoints"]
    followed = [line["checkpoint_id"] for line in lines[:-1]]
    assert followed == [c["checkpoint_id"] for c in stored] == [f"live.{i}" for i in range(4)]


def test_a_killed_run_ends_the_follow_as_interrupted(pg_url: str, tmp_path: Path) -> None:
    run, _gate = start_gated(cast(Path, pg_url), tmp_path, "doomed")
    follower = _follow(pg_url, "doomed", "--json")
    assert _first(follower)["checkpoint_id"] == "doomed.0"
    run.send_signal(signal.SIGKILL)  # its connection ends: the server drops its lease
    run.communicate(timeout=60)
    rest, errors = follower.communicate(timeout=60)
    assert follower.returncode == 130, errors
    assert json.loads(rest.splitlines()[-1])["status"] == "interrupted"


def test_ctrl_c_stops_following_and_leaves_the_run_alone(pg_url: str, tmp_path: Path) -> None:
    run, gate = start_gated(cast(Path, pg_url), tmp_path, "watched")
    try:
        follower = _follow(pg_url, "watched", "--json")
        assert _first(follower)["checkpoint_id"] == "watched.0"
        follower.send_signal(signal.SIGINT)
        _, errors = follower.communicate(timeout=60)
        assert follower.returncode == 130
        assert errors.strip() == (
            "wfctl: interrupted: stopped following run watched; the run itself was not touched"
        )
    finally:
        (gate / "gate").write_text("", encoding="utf-8")
        run.communicate(timeout=60)
    assert run.returncode == 0


def test_a_queued_run_removed_while_followed_is_an_error(pg_url: str) -> None:
    async def submit() -> None:
        storage = open_storage(pg_url)
        try:
            bound = load_workflow(f"{GATED}:gated").build(checkpoint_storage=storage)
            await submit_run(bound, bound.message_for("/nowhere"), run_id="queued")
        finally:
            await storage.aclose()

    arun(submit())
    follower = _follow(pg_url, "queued", "--json")  # a queued run is followed until driven
    assert _first(follower)["checkpoint_id"] == "queued.0"
    assert invoke("rm", "queued", "--store", pg_url).code == 0
    _, errors = follower.communicate(timeout=60)
    assert follower.returncode == 2
    assert errors.strip() == "wfctl: error: run 'queued' was removed while followed"


def test_log_pages_and_a_followed_page_on_postgresql(pg_url: str) -> None:
    run_id = run_id_of(invoke("run", MANY, "--input", "12", "--store", pg_url, "--json"))
    whole = invoke("log", run_id, "--store", pg_url, "--json").json()
    assert whole["checkpoint_count"] == whole["listed_checkpoint_count"] == 14
    page = invoke("log", run_id, "--from", "4", "-n", "3", "--store", pg_url, "--json").json()
    assert (page["first_listed_seq"], page["listed_checkpoint_count"]) == (4, 3)
    assert page["checkpoints"] == whole["checkpoints"][4:7]
    last = invoke("log", run_id, "--last", "2", "--store", pg_url)
    assert last.code == 0
    assert "… 12 checkpoints (seq 0 to 11) before, verified, not shown" in last.stdout
    followed = _follow(pg_url, run_id, "--json", "--last", "2")
    out, errors = followed.communicate(timeout=60)
    assert (followed.returncode, errors) == (0, "")
    seqs = [json.loads(line).get("seq") for line in out.splitlines()]
    assert seqs == [12, 13, None]  # the last two, then the end
