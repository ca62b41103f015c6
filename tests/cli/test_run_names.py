"""A run named by a unique start of its id, or ``@latest``, by every command that takes a run.

Through the installed ``wfctl``, on a directory and on PostgreSQL: the start of an id names its
run (a checkpoint's run part too); one that starts several ids is refused (exit 2, one line
naming them, nothing changed); a name that matches nothing suggests the closest ids; and
``@latest`` is the run created last.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.cli.conftest import WORKFLOWS, wfctl
from tests.postgres.conftest import pg_server, pg_url

__all__ = ["pg_server", "pg_url"]  # the fixtures this module's PostgreSQL variants use

#: The runs each test starts with, oldest first: ``a_b-1`` and ``aXb-2`` tell a ``_`` typed by
#: a person from SQL's one-character wildcard.
_GREETED = ("nightly-a1", "nightly-b2", "a_b-1", "aXb-2")


@pytest.fixture
def store(store_arg: str) -> str:
    for run_id in _GREETED:
        done = wfctl("run", WORKFLOWS / "greet.py", "--run-id", run_id, "--store", store_arg)
        assert done.code == 0, done.stderr
    asked = wfctl("run", WORKFLOWS / "review.py", "--run-id", "review-1", "--store", store_arg)
    assert asked.code == 3, asked.stderr
    return store_arg


def _run_ids(store: str) -> set[str]:
    listed = wfctl("runs", "--store", store, "--json")
    assert listed.code == 0, listed.stderr
    return {run["run_id"] for run in listed.json()["runs"]}


def test_a_unique_start_of_an_id_names_its_run(store: str, tmp_path: Path) -> None:
    log = wfctl("log", "nightly-a", "--store", store, "--json")
    assert log.code == 0, log.stderr
    assert log.json()["run"]["run_id"] == "nightly-a1"
    escaped = wfctl("export", "a_", "--store", store, "--json")
    assert escaped.code == 0, escaped.stderr
    assert escaped.json()["run"]["run_id"] == "a_b-1"
    shown = wfctl("show", "nightly-b.0", "--store", store, "--json")
    assert shown.code == 0, shown.stderr
    assert shown.json()["checkpoint_id"] == "nightly-b2.0"
    verified = wfctl("verify-lineage", "night", "--store", store, "--json")
    assert verified.code == 2, verified.stdout  # ambiguous: nothing verified
    verified = wfctl("verify-lineage", "nightly-b", "aX", "--store", store, "--json")
    assert verified.code == 0, verified.stderr
    assert sorted(r["run_id"] for r in verified.json()["runs"]) == ["aXb-2", "nightly-b2"]
    copied = wfctl("copy", "--from", store, "--to", tmp_path / "copy", "aX", "@latest", "--json")
    assert copied.code == 0, copied.stderr
    assert [r["run_id"] for r in copied.json()["runs"]] == ["aXb-2", "review-1"]
    not_running = wfctl("pause", "nightly-a", "--store", store)
    assert not_running.code == 2
    assert "'nightly-a1'" in not_running.error_line()


def test_a_start_shared_by_several_ids_names_them_and_changes_nothing(store: str) -> None:
    removed = wfctl("rm", "aXb-2", "nightly", "--store", store, "--json")
    assert removed.code == 2
    assert removed.stdout == ""
    line = removed.error_line()
    assert "'nightly' is ambiguous: 2 runs start with it (nightly-a1, nightly-b2)" in line
    assert _run_ids(store) == {*_GREETED, "review-1"}
    for command in (("log", "a"), ("show", "a.0"), ("cancel", "nightly"), ("export", "n")):
        refused = wfctl(*command, "--store", store)
        assert refused.code == 2, command
        assert "is ambiguous" in refused.error_line()


def test_a_mistyped_id_gets_the_closest_ids(store: str) -> None:
    typo = wfctl("log", "nightly-a1x", "--store", store, "--json")
    assert typo.code == 2
    assert typo.stdout == ""
    line = typo.error_line()
    assert "run 'nightly-a1x' not found; did you mean 'nightly-a1' or" in line
    shown = wfctl("show", "nightly-a1x.0", "--store", store, "--json")
    assert shown.code == 2
    assert "checkpoint 'nightly-a1x.0' not found; did you mean 'nightly-a1.0'" in (
        shown.error_line()
    )
    nothing_close = wfctl("export", "zzzz", "--store", store)
    assert nothing_close.code == 2
    assert nothing_close.error_line() == "wfctl: error: run 'zzzz' not found"


def test_latest_is_the_run_created_last(store: str) -> None:
    exported = wfctl("export", "@latest", "--store", store, "--json")
    assert exported.code == 0, exported.stderr
    assert exported.json()["run"]["run_id"] == "review-1"
    resumed = wfctl(
        "resume", "revi", "--response", "0/request#0=yes", "--response", "1/request#0=4",
        "--store", store, "--json", cwd=WORKFLOWS,
    )  # fmt: skip
    assert resumed.code == 0, resumed.stderr
    assert resumed.json()["run_id"] == "review-1"
    replayed = wfctl(
        "replay", "--checkpoint", "@latest.1", "--store", store, "--json", cwd=WORKFLOWS
    )
    assert replayed.code == 0, replayed.stderr
    assert replayed.json()["source_checkpoint_id"] == "review-1.1"
    newest = wfctl("log", "@latest", "--store", store, "--json")  # the replay's run now
    assert newest.code == 0, newest.stderr
    assert newest.json()["run"]["origin_checkpoint_id"] == "review-1.1"
    cancelled = wfctl("rm", "@latest", "--store", store, "--json")
    assert cancelled.code == 0, cancelled.stderr
    assert _run_ids(store) == {*_GREETED, "review-1"}


def test_latest_in_an_empty_store_is_not_found(tmp_path_factory: pytest.TempPathFactory) -> None:
    store = tmp_path_factory.mktemp("empty")
    done = wfctl("log", "@latest", "--store", store)
    assert done.code == 2
    assert done.error_line() == "wfctl: error: run '@latest' not found"
