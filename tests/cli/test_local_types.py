"""A step's result of a class defined inside a function, across processes: ``wfctl run`` pauses
after the step, ``wfctl resume`` (another process) serves its recorded result."""

from __future__ import annotations

from pathlib import Path

from tests.cli.conftest import WORKFLOWS, run_id_of, wfctl

LOCAL = WORKFLOWS / "local_types.py"


def test_a_class_in_the_step_s_closure_is_read_back_by_another_process(store: Path) -> None:
    paused = wfctl("run", f"{LOCAL}:kept", "--input", '"four"', "--store", store, "--json")
    assert paused.code == 3, paused.stderr
    resumed = wfctl("resume", run_id_of(paused), "-r", "approve=yes", "--store", store, "--json")
    assert resumed.code == 0, resumed.stderr
    assert resumed.json()["outputs"] == ["4:yes"]


def test_a_class_another_process_has_not_seen_is_named_not_called_corrupt(store: Path) -> None:
    paused = wfctl("run", f"{LOCAL}:unseen", "--input", '"ok"', "--store", store, "--json")
    assert paused.code == 3, paused.stderr  # the step's value was stored: its class registered
    resumed = wfctl("resume", run_id_of(paused), "-r", "approve=yes", "--store", store)
    assert resumed.code == 1, resumed.stderr
    assert "Traceback" not in resumed.stderr
    assert "corrupt" not in resumed.stderr
    assert (
        "UnregisteredTypeError: recorded result of judge#0: the dataclass "
        "'local_types._verdict.<locals>.Verdict' is not registered in this process: it is "
        "defined inside a function" in resumed.stderr
    ), resumed.stderr
    # what the report adds says what to do: not "outside any step", not "another input"
    assert "outside any step" not in resumed.stderr, resumed.stderr
    assert "the record is intact; resume again from code that defines" in resumed.stderr
