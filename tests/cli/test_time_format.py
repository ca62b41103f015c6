"""One format for every time people read, chosen by ``--time-format``, ``WFCTL_TIME_FORMAT`` or
``time_format`` in ``wfctl.toml``: the log's attempt lines, the runs table's notes, a lock's
holder and another engine's runs read as the tables do; ``--json`` stays ISO 8601 UTC."""

from __future__ import annotations

import json
import re
import shutil
import time
from datetime import datetime
from pathlib import Path
from zoneinfo import ZoneInfo

from tests.cli.conftest import REPO, SAMPLES, WORKFLOWS, spawn, wfctl
from tests.postgres.conftest import pg_server, pg_url

__all__ = ["pg_server", "pg_url"]  # the fixtures this module's PostgreSQL variants use

HEALTHY = REPO / "tests" / "fixtures" / "healthy"
AF_HEALTHY = REPO / "tests" / "fixtures" / "af_healthy"
TOKYO = ZoneInfo("Asia/Tokyo")
_MONTHS = ("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec")


def local_form(stamp: str, zone: ZoneInfo, *, millis: bool = False) -> str:
    """``Dec 06 01:33:20`` (``.123`` with ``millis``; the year when it is not this year)."""
    moment = datetime.fromisoformat(stamp.replace("Z", "+00:00")).astimezone(zone)
    day = f"{_MONTHS[moment.month - 1]} {moment.day:02d}"
    if moment.year != datetime.now(zone).year:
        day += f" {moment.year}"
    clock = f"{moment.hour:02d}:{moment.minute:02d}:{moment.second:02d}"
    return f"{day} {clock}" + (f".{moment.microsecond // 1000:03d}" if millis else "")


def _healthy_store(tmp_path: Path) -> Path:
    store = tmp_path / "store"
    shutil.copytree(HEALTHY, store)
    return store


def test_an_attempt_s_next_time_reads_as_the_timeline_s_times(tmp_path: Path) -> None:
    store = tmp_path / "store"
    done = wfctl("run", SAMPLES / "flaky_service.py", "--run-id", "flaky", "--store", store)
    assert done.code == 0, done.stderr
    document = wfctl("log", "flaky", "--store", store, "--json").json()
    retry_at = next(a["retry_at"] for c in document["checkpoints"] for a in c["attempts"])
    assert retry_at.endswith("Z")  # machines keep UTC

    env = {"TZ": "Asia/Tokyo", "COLUMNS": "200"}
    shown = wfctl("log", "flaky", "--store", store, env=env)
    assert shown.code == 0, shown.stderr
    expected = f"(next attempt at {local_form(retry_at, TOKYO, millis=True)}, after 0.05s)"
    assert expected in shown.stdout, shown.stdout
    assert "+00:00" not in shown.stdout

    iso = wfctl("--time-format", "iso", "log", "flaky", "--store", store, env=env)
    moment = datetime.fromisoformat(retry_at.replace("Z", "+00:00")).astimezone(TOKYO)
    assert f"next attempt at {moment.isoformat(timespec='milliseconds')}," in iso.stdout
    assert "+09:00" in iso.stdout.splitlines()[0]  # the title's start, with its offset


def test_the_format_applies_to_tables_titles_and_one_checkpoint(tmp_path: Path) -> None:
    store = _healthy_store(tmp_path)
    env = {"TZ": "America/New_York"}
    iso = wfctl("--time-format", "iso", "runs", "--store", store, env=env)
    assert iso.code == 0, iso.stderr
    assert re.search(r"completed\W+pipeline\W.*2025-12-31T19:00:04-05:00", iso.stdout), iso.stdout
    assert "updated (EST)" not in iso.stdout and " updated " in iso.stdout
    assert iso.stdout.rstrip().endswith("\n6 runs")
    relative = wfctl("--time-format", "relative", "runs", "--store", store, env=env)
    assert re.search(r"completed\W+pipeline\W.*\d+d ago", relative.stdout), relative.stdout
    assert " age " not in relative.stdout  # the updated time is the age already
    log = wfctl("--time-format", "iso", "log", "completed", "--store", store, env=env)
    assert "2025-12-31T19:00:01.000-05:00  completed.1" in log.stdout, log.stdout
    shown = wfctl("--time-format", "relative", "show", "completed.1", "--store", store, env=env)
    assert re.search(r"· \d+d ago$", shown.stdout.splitlines()[0]), shown.stdout

    for form in ("iso", "relative"):
        document = wfctl("--time-format", form, "runs", "--store", store, "--json", env=env)
        completed = next(r for r in document.json()["runs"] if r["run_id"] == "completed")
        assert completed["updated_at"] == "2026-01-01T00:00:04Z"


def test_the_environment_and_wfctl_toml_choose_the_format(tmp_path: Path) -> None:
    store = _healthy_store(tmp_path)
    env = {"TZ": "UTC", "WFCTL_TIME_FORMAT": "iso"}
    by_env = wfctl("runs", "--store", store, env=env)
    assert "2026-01-01T00:00:04+00:00" in by_env.stdout, by_env.stdout
    given = wfctl("--time-format", "local", "runs", "--store", store, env=env)
    assert "Jan 01 2026 00:00:04" in given.stdout or "Jan 01 00:00:04" in given.stdout

    project = tmp_path / "project"
    project.mkdir()
    (project / "wfctl.toml").write_text('time_format = "relative"\n', encoding="utf-8")
    by_file = wfctl("runs", "--store", store, cwd=project, env={"TZ": "UTC"})
    assert re.search(r"completed\W+pipeline\W.*\d+d ago", by_file.stdout), by_file.stdout
    assert "00:00:04" not in by_file.stdout

    wrong = wfctl("runs", "--store", store, env={"WFCTL_TIME_FORMAT": "utc"})
    assert wrong.code == 2 and wrong.stdout == ""
    assert wrong.error_line() == (
        "wfctl: error: WFCTL_TIME_FORMAT is 'utc': use one of local, relative, iso"
    )
    (project / "wfctl.toml").write_text("time_format = 3\n", encoding="utf-8")
    typed = wfctl("runs", "--store", store, cwd=project)
    assert typed.code == 2 and "'time_format' must be a string" in typed.error_line()
    refused = wfctl("--time-format", "utc", "runs", "--store", store)
    assert refused.code == 2 and "--time-format" in refused.error_line()


def test_another_engine_s_runs_show_the_same_format(tmp_path: Path) -> None:
    listed = wfctl("runs", "--store", AF_HEALTHY, "--json").json()
    updated = {r["run_id"]: r["updated_at"] for r in listed["runs"]}
    shown = wfctl("runs", "--store", AF_HEALTHY, env={"TZ": "Asia/Tokyo"})
    assert shown.code == 0, shown.stderr
    assert "updated (JST)" in shown.stdout
    for run_id, stamp in updated.items():
        assert re.search(rf"{run_id}\W.*{local_form(stamp, TOKYO)}", shown.stdout), shown.stdout
    assert not re.search(r"\d{4}-\d\d-\d\dT", shown.stdout)


def test_json_documents_are_the_same_whatever_the_format(tmp_path: Path) -> None:
    store = _healthy_store(tmp_path)
    plain = wfctl("log", "retried", "--store", store, "--json")
    for form in ("iso", "relative"):
        again = wfctl("--time-format", form, "log", "retried", "--store", store, "--json")
        assert json.loads(again.stdout) == json.loads(plain.stdout)


def test_a_lineage_problem_s_times_read_as_the_tables_do() -> None:
    forked = REPO / "tests" / "fixtures" / "forked"
    document = wfctl("verify-lineage", "--store", forked, "--json")
    problems = [p for r in document.json()["runs"] for p in r["problems"] if ", at " in p]
    assert problems and "+00:00" in problems[0]  # --json keeps the time as it was written
    stamp = problems[0].split(", at ")[1].split(")")[0]
    shown = wfctl("verify-lineage", "--store", forked, env={"TZ": "Asia/Tokyo", "COLUMNS": "400"})
    assert shown.code == 1
    assert f"at {local_form(stamp, TOKYO, millis=True)})" in shown.stdout, shown.stdout
    assert "+00:00" not in shown.stdout


def test_a_lock_holder_s_time_reads_as_the_tables_do_on_either_store(
    store_arg: str, tmp_path: Path
) -> None:
    store, gate = store_arg, tmp_path / "gate"
    gate.mkdir()
    driver = spawn(
        "run", WORKFLOWS / "gated.py", "--input", json.dumps(str(gate)), "--run-id", "held",
        "--store", store, "--json",
    )  # fmt: skip
    try:
        end = time.monotonic() + 60
        while not (gate / "started").exists():  # bounded poll for the other process's step
            assert driver.poll() is None, driver.communicate()
            assert time.monotonic() < end
            time.sleep(0.01)
        # (cancel now asks a running run's driver to stop: resume is refused by the lock)
        for args in (("resume", "held"), ("--time-format", "iso", "rm", "held")):
            locked = wfctl(*args, "--store", store, env={"TZ": "Asia/Tokyo"})
            line = locked.error_line()
            assert locked.code == 2 and " is locked by " in line, line
            if args[0] == "resume":
                assert re.search(r" since [A-Z][a-z]{2} \d\d \d\d:\d\d:\d\d\b", line), line
            else:
                assert re.search(r" since \d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\+09:00\b", line), line
    finally:
        (gate / "gate").write_text("open", encoding="utf-8")
        driver.communicate(timeout=60)
    assert driver.returncode == 0


def test_a_broken_configuration_does_not_stop_a_command_that_shows_no_time(
    tmp_path: Path,
) -> None:
    store = _healthy_store(tmp_path)
    project = tmp_path / "project"
    project.mkdir()
    (project / "pyproject.toml").write_text("[tool.wfctl\n", encoding="utf-8")
    listed = wfctl("runs", "--store", store, "--json", cwd=project)
    assert listed.code == 0, listed.stderr
    shown = wfctl("runs", "--store", store, cwd=project)
    assert shown.code == 2 and shown.stdout == ""
    assert shown.error_line().startswith(f"wfctl: error: cannot read {project / 'pyproject.toml'}")
