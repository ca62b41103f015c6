"""A run's whole life through the installed ``wfctl``, on a directory and on PostgreSQL.

``run`` -> ``runs`` -> ``log`` -> ``pause`` from another process -> ``resume`` ->
``verify-lineage`` -> ``export`` -> ``cancel`` -> ``rm`` -> ``gc``, each with ``--json`` and its
exit code, with ``--store`` naming a directory or a ``postgresql://`` URL. The PostgreSQL
variants use the private server of tests/postgres (skipped without server binaries unless
``WFCTL_REQUIRE_POSTGRES=1``).
"""

from __future__ import annotations

import json
from pathlib import Path

from tests.cli.conftest import WORKFLOWS, held_at_gate, wfctl
from tests.postgres.conftest import pg_server, pg_url

__all__ = ["pg_server", "pg_url"]  # the fixtures this module's PostgreSQL variants use


def _status(store: str, run_id: str) -> str:
    done = wfctl("runs", "--store", store, "--json")
    assert done.code == 0, done.stderr
    statuses = {run["run_id"]: run["status"] for run in done.json()["runs"]}
    return statuses[run_id]


def test_a_run_s_life_on_either_store(store_arg: str, tmp_path: Path) -> None:
    store, gate = store_arg, tmp_path / "gate"
    gate.mkdir()
    # `run` in its own process, held at a gated step.
    driver = held_at_gate(store, gate, "life", "--json")

    listed = wfctl("runs", "--store", store, "--json")
    assert listed.code == 0, listed.stderr
    document = listed.json()
    assert document["schema"] == "wfctl/runs@1" and document["run_count"] == 1
    [run] = document["runs"]
    assert (run["run_id"], run["workflow"], run["status"]) == ("life", "gated", "running")

    log = wfctl("log", "life", "--store", store, "--json")
    assert log.code == 0, log.stderr
    assert [c["kind"] for c in log.json()["checkpoints"]] == ["root"]

    # `pause` from another process: the run stops at its next step boundary and exits 130.
    paused = wfctl("pause", "life", "--store", store, "--json")
    assert paused.code == 0, paused.stderr
    assert paused.json()["pause_requested"] is True
    (gate / "gate").touch()
    stdout, stderr = driver.communicate(timeout=120)
    assert driver.returncode == 130, stderr
    assert json.loads(stdout)["status"] == "interrupted"
    assert _status(store, "life") == "interrupted"

    resumed = wfctl("resume", "life", "--store", store, "--json", cwd=WORKFLOWS)
    assert resumed.code == 0, resumed.stderr
    assert (resumed.json()["status"], resumed.json()["outputs"]) == (
        "completed",
        ["THROUGH THE GATE"],
    )
    kinds = ["root", "step", "pause", "resume", "step", "completed"]
    log = wfctl("log", "life", "--store", store, "--json")
    assert [c["kind"] for c in log.json()["checkpoints"]] == kinds

    verified = wfctl("verify-lineage", "--store", store, "--json")
    assert verified.code == 0, verified.stdout
    assert (verified.json()["ok"], verified.json()["run_count"]) == (True, 1)

    exported = wfctl("export", "life", "--store", store, "--json")
    assert exported.code == 0, exported.stderr
    assert exported.json()["schema"] == "wfctl/export@1"
    assert [c["kind"] for c in exported.json()["checkpoints"]] == kinds
    out = tmp_path / "life.toml"
    written = wfctl(
        "export", "life", "--format", "toml", "--output", out, "--store", store, "--json"
    )
    assert written.code == 0, written.stderr
    assert written.json()["checkpoint_count"] == len(kinds) and out.exists()

    # A second run paused for answers: `cancel` ends it for good; a completed run is refused.
    asking = wfctl("run", WORKFLOWS / "review.py", "--run-id", "asks", "--store", store, "--json")
    assert asking.code == 3, asking.stderr
    cancelled = wfctl("cancel", "asks", "--reason", "superseded", "--store", store, "--json")
    assert cancelled.code == 0, cancelled.stderr
    assert (cancelled.json()["previous_status"], cancelled.json()["reason"]) == (
        "paused",
        "superseded",
    )
    again = wfctl("cancel", "life", "--store", store, "--json")
    assert (again.code, again.stdout) == (2, "")
    assert "completed" in again.error_line()
    assert _status(store, "asks") == "cancelled"

    # `rm` removes the completed run; an unknown one is refused whole.
    refused = wfctl("rm", "life", "nope", "--store", store, "--json")
    assert (refused.code, refused.stdout) == (2, "")
    assert "nope" in refused.error_line()
    removed = wfctl("rm", "life", "--store", store, "--json")
    assert removed.code == 0, removed.stderr
    assert [run["run_id"] for run in removed.json()["runs"]] == ["life"]

    # `gc` removes the cancelled run (a finished one), after a dry run that removes nothing.
    dry = wfctl("gc", "--keep", "0", "--dry-run", "--store", store, "--json")
    assert dry.code == 0, dry.stderr
    assert [run["run_id"] for run in dry.json()["removed"]] == ["asks"]
    assert _status(store, "asks") == "cancelled"
    collected = wfctl("gc", "--keep", "0", "--yes", "--store", store, "--json")
    assert collected.code == 0, collected.stderr
    assert [run["run_id"] for run in collected.json()["removed"]] == ["asks"]
    emptied = wfctl("runs", "--store", store, "--json")
    assert emptied.json()["runs"] == []
    nothing = wfctl("verify-lineage", "--store", store, "--json")  # verifying no run: no pass
    assert nothing.code == 2 and nothing.stdout == "", nothing
    assert nothing.error_line().endswith("holds no run; nothing was verified")


def test_reading_an_unknown_run_is_one_line_on_either_store(store_arg: str) -> None:
    created = wfctl("run", WORKFLOWS / "greet.py", "--input", '"ann"', "--store", store_arg)
    assert created.code == 0, created.stderr
    for command in ("log", "export", "resume", "pause", "cancel"):
        done = wfctl(command, "nope", "--store", store_arg, "--json")
        assert (done.code, done.stdout) == (2, ""), command
        assert "nope" in done.error_line(), command
