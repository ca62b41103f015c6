"""Every read of a PostgreSQL run checks its head pointer against its records.

A run's row says where its head is (``wfctl_runs.head_seq``); the trigger keeps it at the last
record. Moved by hand (below the records, or past them), it must make every reading command
refuse the run as corrupt (exit 2, one line naming it), as ``runs`` and ``verify-lineage``
flag it: never a clean, shorter run. Each test runs the installed ``wfctl`` against the
private server.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import cast

import psycopg
import pytest

from tests.cli.conftest import WORKFLOWS, Invocation, base_env, wfctl, wfctl_executable
from tests.cli.test_cancel_rm import start_gated
from tests.conftest import arun
from tests.postgres.conftest import opened
from wfctl import CheckpointCorruptError

RUN = "seven"


def _seven_records(url: str) -> None:
    """A completed run of five steps: records seq 0..6."""
    done = wfctl(
        "run", WORKFLOWS / "many.py", "--input", "5", "--run-id", RUN, "--store", url, "--json"
    )
    assert done.code == 0, done.stderr


def _move_head(url: str, run_id: str, seq: int) -> None:
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("UPDATE wfctl_runs SET head_seq = %s WHERE run_id = %s", (seq, run_id))


def _refused(done: Invocation, head: int) -> None:
    assert (done.code, done.stdout) == (2, ""), (done.stdout, done.stderr)
    line = done.error_line()
    assert line.startswith("wfctl: error: corrupt checkpoint data in "), line
    assert f" run {RUN}: the run's head is seq {head} but it holds 7 records" in line, line


@pytest.mark.parametrize("head", [3, 9], ids=["lowered", "raised"])
@pytest.mark.parametrize(
    "command",
    [
        ("log", RUN),
        ("log", RUN, "--json"),
        ("log", RUN, "--last", "2"),
        ("log", RUN, "--follow"),
        ("export", RUN, "--format", "json"),
        ("export", RUN, "--format", "toml"),
        ("show", f"{RUN}.5"),
        ("show", f"{RUN}.2", "--json"),
        ("resume", RUN),
        ("replay", "--checkpoint", f"{RUN}.2", "--no-execute"),
    ],
    ids=" ".join,
)
def test_a_head_moved_by_hand_is_refused_by_every_read(
    pg_url: str, command: tuple[str, ...], head: int
) -> None:
    _seven_records(pg_url)
    _move_head(pg_url, RUN, head)
    _refused(wfctl(*command, "--store", pg_url, cwd=WORKFLOWS, timeout=60), head)


def test_runs_verify_lineage_and_copy_say_the_same(pg_url: str, tmp_path: Path) -> None:
    _seven_records(pg_url)
    _move_head(pg_url, RUN, 3)
    [run] = wfctl("runs", "--store", pg_url, "--json").json()["runs"]
    assert run["status"] == "corrupt"
    assert "the run's head is seq 3 but it holds 7 records" in json.dumps(run)
    assert wfctl("verify-lineage", RUN, "--store", pg_url, "--json").code == 1
    copied = wfctl("copy", "--from", pg_url, "--to", tmp_path / "copy", "--json")
    assert copied.code == 1
    [outcome] = copied.json()["runs"]
    assert outcome["outcome"] == "refused"
    assert "the run's head is seq 3 but it holds 7 records" in outcome["problem"]


def test_a_head_moved_past_the_records_while_followed_ends_the_follow(
    pg_url: str, tmp_path: Path
) -> None:
    """The follower has read the live run's root; then its head is moved past its records: the
    next look (one snapshot of the head and the records) refuses the run."""
    run, gate = start_gated(cast(Path, pg_url), tmp_path, "live")
    follower = subprocess.Popen(
        [wfctl_executable(), "log", "live", "--follow", "--json", "--store", pg_url],
        env=base_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        assert follower.stdout is not None
        assert json.loads(follower.stdout.readline())["checkpoint_id"] == "live.0"
        _move_head(pg_url, "live", 40)
        rest, errors = follower.communicate(timeout=60)
    finally:
        (gate / "gate").write_text("", encoding="utf-8")
        run.communicate(timeout=60)
        if follower.poll() is None:
            follower.kill()
            follower.communicate()
    assert follower.returncode == 2, errors
    assert rest == ""
    [line] = errors.splitlines()
    assert line.startswith("wfctl: error: corrupt checkpoint data in "), line
    assert " run live: the run's head is seq 40 but it holds 1 records (seq 0..0)" in line, line


@pytest.mark.parametrize("head", [3, 9], ids=["lowered", "raised"])
def test_get_latest_refuses_a_head_moved_by_hand(pg_url: str, head: int) -> None:
    """The storage API's head (``get_latest``, of the run or of the store) is checked too."""
    _seven_records(pg_url)
    _move_head(pg_url, RUN, head)

    async def main() -> None:
        async with opened(pg_url) as store:
            for asked in ({"run_id": RUN}, {}, {"workflow_name": "many"}):
                with pytest.raises(CheckpointCorruptError) as caught:
                    await store.get_latest(**asked)
                assert f"the run's head is seq {head} but it holds 7 records" in str(caught.value)

    arun(main())
