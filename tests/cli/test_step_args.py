"""Step arguments through the installed ``wfctl``: ``show``, ``log -v``, a replay divergence,
and journals written before arguments were stored."""

from __future__ import annotations

import shutil
import textwrap
from pathlib import Path

from tests.cli.conftest import REPO, run_id_of, wfctl

CODE = """
    from pathlib import Path

    from wfctl import step, workflow

    @step
    async def fetch(url: str, *, retries: int = 0) -> str:
        return url.upper()

    @step(record_args=False)
    async def login(password: str) -> str:
        return "token"

    @workflow(name="fetcher")
    async def fetcher(_: None = None) -> str:
        token = await login("hunter2")
        url = Path(__file__).with_name("url.txt").read_text().strip()
        return token + await fetch(url, retries=2)
"""


def _workflow(tmp_path: Path) -> Path:
    code = tmp_path / "fetcher.py"
    code.write_text(textwrap.dedent(CODE), encoding="utf-8")
    (tmp_path / "url.txt").write_text("http://then.example\n", encoding="utf-8")
    return code


def test_show_and_log_verbose_show_what_each_step_received(tmp_path: Path, store: Path) -> None:
    run_id = run_id_of(wfctl("run", _workflow(tmp_path), "--store", store, "--json"))
    shown = wfctl("show", f"{run_id}.2", "--store", store, "--json")
    assert shown.code == 0, shown.stderr
    (record,) = shown.json()["record"]["data"]["steps"]
    assert record["args"] == ["http://then.example"] and record["kwargs"] == {"retries": 2}
    people = wfctl("show", f"{run_id}.2", "--store", store)
    assert '"http://then.example"' in people.stdout
    secret = wfctl("show", f"{run_id}.1", "--store", store, "--json").json()["record"]["data"][
        "steps"
    ][0]
    assert secret["args_omitted"] == "opt_out" and "hunter2" not in str(secret)

    verbose = wfctl("log", run_id, "-v", "--store", store)
    assert verbose.code == 0, verbose.stderr
    assert 'args: ("http://then.example", retries=2)' in verbose.stdout
    assert 'result: "HTTP://THEN.EXAMPLE"' in verbose.stdout
    assert "args: not recorded (record_args=False)" in verbose.stdout
    assert "hunter2" not in verbose.stdout
    plain = wfctl("log", run_id, "--store", store)
    assert plain.code == 0 and "args:" not in plain.stdout


def test_a_replay_divergence_names_the_arguments_then_and_now(tmp_path: Path, store: Path) -> None:
    run_id = run_id_of(wfctl("run", _workflow(tmp_path), "--store", store, "--json"))
    (tmp_path / "url.txt").write_text("http://now.example\n", encoding="utf-8")
    replay = wfctl("replay", "-c", f"{run_id}.3", "--no-execute", "--store", store, "--json")
    assert replay.code == 1, replay.stderr
    doc = replay.json()
    assert doc["error_type"] == "ReplayDivergenceError"
    assert 'the call received ("http://now.example", retries=2)' in doc["error"]
    assert 'recorded call(s) received ("http://then.example", retries=2)' in doc["error"]


def test_journals_written_before_arguments_were_stored_load_and_verify(tmp_path: Path) -> None:
    store = tmp_path / "old"
    shutil.copytree(REPO / "tests" / "fixtures" / "before_args", store)
    verified = wfctl("verify-lineage", "--store", store, "--json")
    assert verified.code == 0, verified.stdout
    assert all(run["ok"] for run in verified.json()["runs"])
    log = wfctl("log", "completed", "-v", "--store", store)
    assert log.code == 0, log.stderr
    assert "args: not recorded (written before arguments were stored)" in log.stdout
    assert "result: 10" in log.stdout
    shown = wfctl("show", "completed.1", "--store", store, "--json")
    assert shown.code == 0 and "args" not in shown.json()["record"]["data"]["steps"][0]
