"""A run whose journal was cut to no committed record is corrupt, never "not a run".

An empty journal is a run leased and not started yet, and store-wide commands leave it out.
But an ended run has an end marker naming its last record: cut to nothing (or into its first
line), its journal was taken for such a run, so ``runs``, ``verify-lineage`` of the store and
``gc`` left it out, and ``log`` said "not found", while ``verify-lineage RUN`` called it broken.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.cli.conftest import journal_of, many_steps, wfctl

STEPS = 3
_CUT = "committed records were cut off its end"


@pytest.mark.parametrize("keep", [0, 40], ids=["emptied", "cut-into-its-root"])
def test_every_command_names_a_run_cut_to_no_record(store: Path, keep: int) -> None:
    cut, whole = many_steps(store, STEPS), many_steps(store, STEPS)
    journal = journal_of(store, cut)
    journal.write_bytes(journal.read_bytes()[:keep])

    listed = wfctl("runs", "--store", store, "--json")
    assert listed.code == 0
    statuses = {run["run_id"]: run["status"] for run in listed.json()["runs"]}
    assert statuses == {cut: "corrupt", whole: "completed"}

    checked = wfctl("verify-lineage", "--store", store, "--json")
    assert checked.code == 1 and checked.json()["broken_run_count"] == 1
    (broken,) = (run for run in checked.json()["runs"] if not run["ok"])
    assert broken["run_id"] == cut and any(_CUT in p for p in broken["problems"])

    for command in ("log", "export", "show"):
        target = f"{cut}.0" if command == "show" else cut
        done = wfctl(command, target, "--store", store)
        assert done.code == 2 and _CUT in done.error_line(), (command, done)

    collected = wfctl("gc", "--older-than", "0s", "--store", store, "--json")
    assert collected.code == 0
    assert [run["run_id"] for run in collected.json()["removed"]] == [whole]
    assert journal.exists()  # the damaged run is kept, for a person to look at
