"""On PostgreSQL too, a record never gets ``resume``, ``replay`` or ``worker`` to import code
that is Python's own or that lies beside the user only by accident.

A run's root row is edited (its checksum recomputed, as a crafted database would hold it) to
name ``this:x`` (importing it prints the Zen of Python) or ``evilmod:flow``, a module planted in
the working directory that writes a marker file when imported. Through the installed
``wfctl`` against the private server (tests/postgres/conftest.py); ``--trust-store`` trusts the
server's records as the user's own, which still does not reach either.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import psycopg
import pytest

from tests.cli.conftest import wfctl
from tests.harness.hostile_cases import edit_record
from tests.harness.test_store_targets import EVILMOD, FLOW
from tests.postgres.conftest import pg_server, pg_url

__all__ = ["pg_server", "pg_url"]


def _record_target(url: str, run_id: str, target: str) -> None:
    """Rewrite the root row's recorded target, checksum recomputed."""

    def change(raw: dict[str, Any]) -> None:
        raw["data"]["target"] = target

    with psycopg.connect(url, autocommit=True) as conn:
        [(record,)] = conn.execute(
            "SELECT record FROM wfctl_checkpoints WHERE run_id = %s AND seq = 0", (run_id,)
        ).fetchall()
        conn.execute(
            "UPDATE wfctl_checkpoints SET record = %s WHERE run_id = %s AND seq = 0",
            (edit_record(bytes(record), change), run_id),
        )


@pytest.fixture
def work(tmp_path: Path) -> tuple[Path, Path, Path]:
    """(the working directory holding evilmod.py, flow.py outside it, the marker file)."""
    marker, cwd, code = tmp_path / "IMPORTED", tmp_path / "work", tmp_path / "code"
    cwd.mkdir()
    code.mkdir()
    (code / "flow.py").write_text(FLOW.format(marker=str(marker)))
    (cwd / "evilmod.py").write_text(EVILMOD.format(marker=str(marker)))
    return cwd, code / "flow.py", marker


@pytest.mark.parametrize("recorded", ["this:x", "evilmod:flow"])
def test_resume_and_replay_of_a_server_store_refuse_it(
    pg_url: str, work: tuple[Path, Path, Path], recorded: str
) -> None:
    cwd, flow, marker = work
    started = wfctl("run", f"{flow}:flow", "-i", '"x"', "--run-id", "r", "--store", pg_url, cwd=cwd)
    assert started.code == 3, started
    marker.unlink()
    _record_target(pg_url, "r", recorded)
    for trust in ([], ["--trust-store"]):
        for args in (["resume", "r", "-r", "ok=yes"], ["replay", "-c", "r.0"]):
            done = wfctl(*args, *trust, "--json", "--store", pg_url, cwd=cwd)
            assert done.code == 2 and done.stdout == "", (args, trust, done)
            line = done.error_line()
            assert line.startswith(f"wfctl: error: refusing to import {recorded!r}"), line
            assert "Zen of Python" not in done.stderr
            assert not marker.exists(), (args, trust)


def test_a_worker_on_a_server_store_refuses_it(pg_url: str, work: tuple[Path, Path, Path]) -> None:
    cwd, flow, marker = work
    queued = wfctl(
        "submit", f"{flow}:flow", "-i", '"y"', "--run-id", "q", "--store", pg_url, cwd=cwd
    )
    assert queued.code == 0, queued
    marker.unlink()
    for recorded in ("this:x", "evilmod:flow"):
        _record_target(pg_url, "q", recorded)
        done = wfctl("worker", "--exit-when-idle", "--json", "--store", pg_url, cwd=cwd)
        assert done.code == 0, done
        [refused] = [
            e for e in map(json.loads, done.stdout.splitlines()) if e["event"] == "refused"
        ]
        assert refused["run_id"] == "q" and "refusing to import" in refused["reason"], refused
        assert not marker.exists(), recorded
