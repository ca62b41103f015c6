"""``verify-lineage`` selects runs as ``runs`` and ``gc`` do, and never passes on nothing.

Through the installed ``wfctl``, on a directory and on PostgreSQL (the private server of
tests/postgres): the filters (``--workflow`` glob, ``--status``, ``--since``, ``--until``) are
one definition shared by every command that selects runs; a verification whose store or
filters select no run exits 2 with one line, and no document under ``--json``.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import typer.main

from tests.cli.conftest import WORKFLOWS, Invocation, wfctl
from tests.inspect.helpers import FIXTURES
from tests.postgres.conftest import pg_server, pg_url
from wfctl._cli import app
from wfctl._storage._open import redact  # the form messages name a store in

__all__ = ["pg_server", "pg_url"]  # the fixtures this module's PostgreSQL variants use

FILTERS = ("--workflow", "--status", "--since", "--until")


def _two_runs(store: str) -> None:
    """One completed ``greet`` and one completed ``echo`` run in ``store``."""
    for target, run_id in (("greet.py", "g1"), ("echo.py", "e1")):
        done = wfctl(
            "run", WORKFLOWS / target, "--input", '"x"', "--run-id", run_id, "--store", store
        )
        assert done.code == 0, done


def _nothing_verified(done: Invocation, selection: str, store: str) -> None:
    assert done.code == 2, done
    assert done.stdout == "", done  # an error is never a document, --json or not
    where = redact(store)  # (a URL's password is never printed)
    assert done.error_line() == (
        f"wfctl: error: no run matched {selection} in store {where!r}; nothing was verified"
    )


def test_a_workflow_glob_selects_as_runs_does(store_arg: str) -> None:
    _two_runs(store_arg)
    listed = wfctl("runs", "-w", "gr*", "--store", store_arg, "--json").json()
    assert [r["run_id"] for r in listed["runs"]] == ["g1"]
    done = wfctl("verify-lineage", "-w", "gr*", "--store", store_arg, "--json")
    assert done.code == 0, done
    document = done.json()
    assert [r["run_id"] for r in document["runs"]] == ["g1"]
    assert document["ok"] is True and document["run_count"] == 1
    # --status, --since and --until mean what they mean for runs.
    since = wfctl(
        "verify-lineage", "--since", "1h", "--status", "completed", "--store", store_arg, "--json"
    )
    assert since.code == 0, since
    assert sorted(r["run_id"] for r in since.json()["runs"]) == ["e1", "g1"]
    # Named runs are narrowed by the filters too; none left is nothing verified.
    named = wfctl("verify-lineage", "g1", "e1", "-w", "ec*", "--store", store_arg, "--json")
    assert [r["run_id"] for r in named.json()["runs"]] == ["e1"]
    none = wfctl("verify-lineage", "g1", "-w", "ec*", "--store", store_arg, "--json")
    assert none.code == 2 and none.stdout == "", none
    assert none.error_line() == (
        "wfctl: error: none of the runs named (g1) matched --workflow 'ec*' in store "
        f"{redact(store_arg)!r}; nothing was verified"
    )


@pytest.mark.parametrize(
    ("args", "selection"),
    [
        (["-w", "approve*"], "--workflow 'approve*'"),
        (["--workflow", "gree"], "--workflow 'gree'"),
        (["--status", "paused"], "--status paused"),
        (["--until", "2020-01-01T00:00Z"], "--until 2020-01-01T00:00:00Z"),
    ],
)
def test_filters_that_match_no_run_verify_nothing(
    store_arg: str, args: list[str], selection: str
) -> None:
    _two_runs(store_arg)
    assert wfctl("runs", *args, "--store", store_arg, "--json").json()["run_count"] == 0
    for extra in ([], ["--json"]):
        done = wfctl("verify-lineage", *args, *extra, "--store", store_arg)
        _nothing_verified(done, selection, store_arg)


def test_a_store_without_runs_verifies_nothing(store_arg: str, tmp_path: Path) -> None:
    if "://" not in store_arg:
        Path(store_arg).mkdir()
    for extra in ([], ["--json"]):
        done = wfctl("verify-lineage", *extra, "--store", store_arg)
        assert done.code == 2 and done.stdout == "", done
        assert done.error_line().endswith("holds no run; nothing was verified")


def test_an_agent_framework_directory_filters_by_the_same_glob(tmp_path: Path) -> None:
    empty = tmp_path / "af"
    empty.mkdir()
    done = wfctl("verify-lineage", "--agent-framework", empty, "--json")
    assert done.code == 2 and done.stdout == "", done
    assert done.error_line() == f"wfctl: error: {empty} holds no checkpoint; nothing was verified"
    refused = wfctl("verify-lineage", "--agent-framework", empty, "--status", "paused")
    assert refused.code == 2 and "filter them with --workflow only" in refused.error_line()
    healthy = FIXTURES / "af_healthy"  # workflows 'pipeline' and 'review'
    one = wfctl("verify-lineage", "--agent-framework", healthy, "-w", "rev*", "--json")
    assert one.code == 0, one
    assert [r["workflow"] for r in one.json()["runs"]] == ["review"]
    none = wfctl("verify-lineage", "--agent-framework", healthy, "-w", "nope*", "--json")
    assert none.code == 2 and none.stdout == "", none
    assert none.error_line() == (
        f"wfctl: error: no workflow matched --workflow 'nope*' in {healthy}; nothing was verified"
    )


def test_every_command_that_filters_runs_takes_the_same_filters() -> None:
    group = typer.main.get_command(app)
    commands = group.commands  # type: ignore[attr-defined]
    seen: dict[str, tuple[object, ...]] = {}
    filtering = []
    for name, command in commands.items():
        options = {o: p for p in command.params for o in getattr(p, "opts", ())}
        present = [flag for flag in FILTERS if flag in options]
        if not present:
            continue
        filtering.append(name)
        assert present == list(FILTERS), (name, present)
        for flag in FILTERS:
            param = options[flag]
            shape = (tuple(param.opts), param.metavar, param.help, param.multiple)
            assert seen.setdefault(flag, shape) == shape, (name, flag)
    assert {"runs", "gc", "verify-lineage"} <= set(filtering)
