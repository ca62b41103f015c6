"""Times people read are local (``TZ`` honoured) with the date; ``--json`` stays UTC."""

from __future__ import annotations

import re
import shutil
from datetime import UTC, datetime, timedelta
from pathlib import Path
from zoneinfo import ZoneInfo

from tests.cli.conftest import REPO, WORKFLOWS, wfctl

HEALTHY = REPO / "tests" / "fixtures" / "healthy"


def _healthy_store(tmp_path: Path) -> Path:
    store = tmp_path / "store"
    shutil.copytree(HEALTHY, store)
    return store


def test_runs_log_and_show_use_the_local_zone_and_json_stays_utc(tmp_path: Path) -> None:
    store = _healthy_store(tmp_path)
    # The run "completed" was last updated at 2026-01-01T00:00:04 UTC: the evening before, in
    # another year, in New York.
    env = {"TZ": "America/New_York"}
    runs = wfctl("runs", "--store", store, env=env)
    assert runs.code == 0, runs.stderr
    assert "updated (EST)" in runs.stdout
    assert re.search(r"completed\W+pipeline\W.*Dec 31 2025 19:00:04", runs.stdout), runs.stdout
    log = wfctl("log", "completed", "--store", store, env=env)
    assert "Dec 31 2025 19:00:01.000  completed.1" in log.stdout, log.stdout
    shown = wfctl("show", "completed.1", "--store", store, env=env)
    assert "Dec 31 2025 19:00:01.000 EST" in shown.stdout.splitlines()[0]
    document = wfctl("runs", "--store", store, "--json", env=env)
    assert "2026-01-01T00:00:04" in document.stdout and "19:00:04" not in document.stdout


def test_the_year_is_shown_only_when_it_is_not_this_year(tmp_path: Path) -> None:
    store = _healthy_store(tmp_path)
    tokyo = wfctl("runs", "--store", store, env={"TZ": "Asia/Tokyo"})
    this_year = datetime.now(ZoneInfo("Asia/Tokyo")).year
    expected = "Jan 01 09:00:04" if this_year == 2026 else "Jan 01 2026 09:00:04"
    assert "updated (JST)" in tokyo.stdout
    assert re.search(rf"completed\W+pipeline\W.*{expected}", tokyo.stdout), tokyo.stdout


def test_a_table_with_room_says_how_long_ago(tmp_path: Path) -> None:
    store = tmp_path / "store"
    done = wfctl("run", WORKFLOWS / "greet.py", "--store", store)
    assert done.code == 0, done.stderr
    runs = wfctl("runs", "--store", store, env={"COLUMNS": "120"})
    assert " age " in runs.stdout.splitlines()[2]
    assert re.search(r"(\d+[smhdy] ago|just now)", runs.stdout), runs.stdout


def test_relative_and_local_forms() -> None:
    from wfctl._render._time import human_time  # the renderer's one time formatter

    def relative_time(stored: str, current: datetime) -> str:
        return human_time(stored, current, form="relative")

    def local_time(stored: str, current: datetime) -> str:
        return human_time(stored, current, form="local")

    current = datetime(2026, 6, 15, 12, 0, 0, tzinfo=UTC).astimezone()
    stored = (current - timedelta(minutes=3, seconds=20)).astimezone(UTC).isoformat()
    assert relative_time(stored, current) == "3m ago"
    ahead = (current + timedelta(seconds=5)).astimezone(UTC).isoformat()
    assert relative_time(ahead, current) == "in 5s"
    assert relative_time(current.isoformat(), current) == "just now"
    assert relative_time("not a time", current) == "not a time"
    last_year = (current - timedelta(days=400)).astimezone(UTC).isoformat()
    assert relative_time(last_year, current) == "1y ago"
    assert str(current.year - 1) in local_time(last_year, current)
    assert str(current.year) not in local_time(stored, current)
    assert local_time("garbage", current) == "garbage"
