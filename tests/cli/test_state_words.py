"""One word for a run stopped with nothing to answer: ``interrupted``, in every command.

After ``wfctl pause`` (or Ctrl-C) the run's own summary, ``runs`` (its table, ``--json`` and
``--status``), ``log`` and ``log --follow``, and ``cancel`` all say ``interrupted``; ``paused``
is kept for a run that waits for answers. Through the installed ``wfctl``, on a directory and on
PostgreSQL.
"""

from __future__ import annotations

import json
from pathlib import Path

from tests.cli.conftest import WORKFLOWS, held_at_gate, wfctl
from tests.postgres.conftest import pg_server, pg_url

__all__ = ["pg_server", "pg_url"]  # the fixtures this module's PostgreSQL variants use


def _stopped(store: str, gate: Path) -> str:
    """Drive the gated workflow in its own process, pause it from another; return its stdout."""
    driver = held_at_gate(store, gate, "held")
    paused = wfctl("pause", "held", "--store", store)
    assert paused.code == 0, paused.stderr
    (gate / "gate").touch()
    stdout, stderr = driver.communicate(timeout=120)
    assert driver.returncode == 130, stderr
    return stdout


def _listed(store: str, *status: str) -> list[tuple[str, str]]:
    flags = [part for word in status for part in ("--status", word)]
    done = wfctl("runs", *flags, "--store", store, "--json")
    assert done.code == 0, done.stderr
    return [(run["run_id"], run["status"]) for run in done.json()["runs"]]


def test_a_run_stopped_with_nothing_to_answer_is_interrupted_everywhere(
    store_arg: str, tmp_path: Path
) -> None:
    store, gate = store_arg, tmp_path / "gate"
    gate.mkdir()
    summary = _stopped(store, gate)
    assert "interrupted at held." in " ".join(summary.split()), summary
    assert "paused" not in summary
    asking = wfctl("run", WORKFLOWS / "review.py", "--run-id", "asking", "--store", store)
    assert asking.code == 3, asking.stderr

    assert _listed(store) == [("asking", "paused"), ("held", "interrupted")]  # newest first
    assert _listed(store, "interrupted") == [("held", "interrupted")]
    assert _listed(store, "paused") == [("asking", "paused")]
    table = wfctl("runs", "--store", store)
    assert table.code == 0, table.stderr
    [row] = [line for line in table.stdout.splitlines() if " held " in line]
    assert "interrupted" in row and "paused" not in row

    log = wfctl("log", "held", "--store", store, "--json")
    assert log.code == 0, log.stderr
    assert log.json()["run"]["status"] == "interrupted"
    followed = wfctl("log", "held", "--follow", "--store", store, "--json")
    assert followed.code == 130, followed.stderr
    end = json.loads(followed.stdout.splitlines()[-1])
    assert (end["schema"], end["status"]) == ("wfctl/log-end@1", "interrupted")
    said = wfctl("log", "held", "--follow", "--store", store)
    assert said.code == 130
    assert "paused" not in said.stdout + said.stderr

    cancelled = wfctl("cancel", "held", "--store", store, "--json")
    assert cancelled.code == 0, cancelled.stderr
    assert cancelled.json()["previous_status"] == "interrupted"
