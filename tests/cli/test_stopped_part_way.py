"""Ctrl-C in the middle of ``gc``, ``rm`` or ``copy``: one line says what was left behind.

Any other command stopped by Ctrl-C says ``wfctl: interrupted``, one line like every error.

typer turned a KeyboardInterrupt into a silent exit 130, so a ``gc`` stopped after it had
removed runs looked as if it had removed none. Here the installed wfctl runs with one of its
store operations replaced by one that does part of the work, then raises KeyboardInterrupt
(what Ctrl-C raises), so the interruption lands part way every time, not when a timer says.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.cli.conftest import WORKFLOWS, base_env, run_id_of, wfctl

#: Runs wfctl's command line after replacing an operation (argv: the patch's name, then the
#: command line): ``delete``: a batch removal removes its first run, then is interrupted;
#: ``copy``: the second run's copy is interrupted before it starts; ``list``: listing the
#: runs (``wfctl runs``) is interrupted.
_INTERRUPTED_PART_WAY = """
import sys
from wfctl._inspect import _copy
from wfctl._storage import _file

real_delete, real_copy = _file.FileCheckpointStorage.delete_runs, _copy._copy_run
copied = []

async def delete_first_then_stop(self, run_ids):
    await real_delete(self, list(run_ids)[:1])
    raise KeyboardInterrupt

async def copy_one_then_stop(src, dst, run_id):
    if copied:
        raise KeyboardInterrupt
    copied.append(run_id)
    return await real_copy(src, dst, run_id)

def list_then_stop(self, **kwargs):
    raise KeyboardInterrupt

if sys.argv[1] == "delete":
    _file.FileCheckpointStorage.delete_runs = delete_first_then_stop
elif sys.argv[1] == "copy":
    _copy._copy_run = copy_one_then_stop
else:
    _file.FileCheckpointStorage.run_summaries = list_then_stop
from wfctl._cli import main
sys.argv[:2] = ["wfctl"]
main()
"""


def _interrupted(patch: str, *args: str | Path) -> tuple[int, str]:
    done = subprocess.run(
        [sys.executable, "-c", _INTERRUPTED_PART_WAY, patch, *map(str, args)],
        env=base_env(),
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    return done.returncode, done.stderr


def _runs(store: Path, count: int) -> list[str]:
    run_ids = []
    for _ in range(count):
        done = wfctl("run", WORKFLOWS / "many.py", "--input", "2", "--store", store, "--json")
        assert done.code == 0, done.stderr
        run_ids.append(run_id_of(done))
    return run_ids


def _listed(store: Path) -> set[str]:
    return {run["run_id"] for run in wfctl("runs", "--store", store, "--json").json()["runs"]}


@pytest.mark.parametrize("command", ["gc", "rm"])
def test_a_removal_stopped_part_way_says_what_it_left(command: str, tmp_path: Path) -> None:
    store = tmp_path / "store"
    run_ids = _runs(store, 3)
    args = ["gc", "--keep", "0", "--yes"] if command == "gc" else ["rm", "--yes", *run_ids]

    code, stderr = _interrupted("delete", *args, "--store", store)

    assert code == 130
    assert stderr.splitlines() == [
        f"wfctl: interrupted: {command} stopped part way: the runs it had removed stay removed, "
        "the others stay; 'wfctl runs' lists what is left"
        + (", and gc can be run again" if command == "gc" else "")
    ]
    assert len(_listed(store)) == 2  # one removed before the interruption
    assert wfctl("verify-lineage", "--store", store).code == 0


def test_a_copy_stopped_part_way_says_what_it_left(tmp_path: Path) -> None:
    source, destination = tmp_path / "source", tmp_path / "destination"
    run_ids = _runs(source, 2)

    code, stderr = _interrupted("copy", "copy", "--from", source, "--to", destination)

    assert code == 130
    assert stderr.splitlines() == [
        "wfctl: interrupted: copy stopped part way: the runs it had copied are whole in the "
        "destination, the run it was copying is not there; copy again to copy the rest"
    ]
    assert len(_listed(destination)) == 1
    again = wfctl("copy", "--from", source, "--to", destination, "--json")
    assert again.code == 0, again.stderr
    assert _listed(destination) == set(run_ids)


def test_any_other_command_stopped_by_ctrl_c_says_so_in_one_line(tmp_path: Path) -> None:
    """typer's exit 130 said nothing; the errors are one line on stderr, Ctrl-C's too."""
    store = tmp_path / "store"
    _runs(store, 1)

    for args in (["runs"], ["runs", "--json"]):
        code, stderr = _interrupted("list", *args, "--store", store)
        assert (code, stderr) == (130, "wfctl: interrupted\n")
