"""Stores written in record format version 1 read, verify and resume through the CLI as before.

``tests/fixtures/version_1`` is the ``healthy`` fixture store as the wfctl before format version
2 wrote it (blake2b argument digests); ``healthy`` holds the same runs written today.
"""

from __future__ import annotations

import shutil
import textwrap
from pathlib import Path

from tests.cli.conftest import REPO, run_id_of, wfctl
from tests.storage.helpers import rewrite_as_format_version_1

FIXTURES = REPO / "tests" / "fixtures"


def _runs(store: Path) -> dict[str, tuple[str, str]]:
    listed = wfctl("runs", "--store", store, "--json")
    assert listed.code == 0, listed.stderr
    return {
        run["run_id"]: (run["status"], run["head_checkpoint_id"]) for run in listed.json()["runs"]
    }


def test_a_version_1_store_lists_verifies_and_logs_as_todays(tmp_path: Path) -> None:
    old, new = tmp_path / "old", tmp_path / "new"
    shutil.copytree(FIXTURES / "version_1", old)
    shutil.copytree(FIXTURES / "healthy", new)
    assert b'{"v":1,' in (old / "runs" / "completed" / "journal.jsonl").read_bytes()
    assert _runs(old) == _runs(new) and len(_runs(old)) == 6
    verified = wfctl("verify-lineage", "--store", old, "--json")
    assert verified.code == 0, verified.stdout
    assert [run["ok"] for run in verified.json()["runs"]] == [True] * 6
    log = wfctl("log", "completed", "-v", "--store", old)
    assert log.code == 0, log.stderr
    assert log.stdout.count("result:") == len(
        [line for line in wfctl("log", "completed", "-v", "--store", new).stdout.splitlines()
         if "result:" in line]
    )  # fmt: skip


_FLAKY = textwrap.dedent(
    """
    import os
    from wfctl import step, workflow

    @step
    async def echo(i: int) -> int:
        return i * 10

    @workflow(name="flaky")
    async def flaky(n: int) -> int:
        total = 0
        for i in range(n):
            total += await echo(i)
        if os.path.exists(os.environ["FAIL_FLAG"]):
            raise RuntimeError("the flag is up")
        return total + await echo(n)
    """
)


def test_a_version_1_run_resumes_in_version_1_serving_what_it_recorded(tmp_path: Path) -> None:
    source, flag, store = tmp_path / "flaky.py", tmp_path / "flag", tmp_path / "store"
    source.write_text(_FLAKY, encoding="utf-8")
    flag.touch()
    env = {"FAIL_FLAG": str(flag)}
    failed = wfctl("run", f"{source}:flaky", "--input", "3", "--store", store, "--json", env=env)
    assert failed.code == 1, failed.stderr
    run_id = run_id_of(failed)
    journal = store / "runs" / run_id / "journal.jsonl"
    rewrite_as_format_version_1(journal, [(i,) for i in range(4)])
    flag.unlink()
    resumed = wfctl("resume", run_id, "--store", store, "--json", env=env)
    assert resumed.code == 0, resumed.stderr
    doc = resumed.json()
    assert doc["status"] == "completed"
    assert doc["step_counts"] == {"executed": 1, "cached": 3, "changed": 0}
    assert all(line.startswith(b'{"v":1,') for line in journal.read_bytes().splitlines())
    verified = wfctl("verify-lineage", run_id, "--store", store, "--json")
    assert verified.code == 0 and verified.json()["runs"][0]["ok"], verified.stdout
