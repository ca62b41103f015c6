"""Store paths that would lead wfctl somewhere surprising are refused, for reads and for writes.

A run directory that is a symbolic link was already refused; ``runs/`` itself is now refused
the same way (following it would read and write runs outside the store). ``--store /`` would
create ``/runs``, and ``--store ""`` would silently mean the current directory: both are refused
in one line (exit 2) before anything is written. The store root itself may still be a link to
a directory (a user's choice, documented). Each case runs through the installed ``wfctl`` and
checks what is (not) stored; the library refuses the same paths.
"""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

import pytest

from tests.cli.conftest import WORKFLOWS, run_id_of, wfctl
from wfctl import FileCheckpointStorage, StoreLocationError

GREET = WORKFLOWS / "greet.py"

pytestmark = pytest.mark.skipif(os.name != "posix", reason="POSIX paths and links")


def _tree(root: Path) -> list[str]:
    return sorted(str(p.relative_to(root)) for p in root.rglob("*"))


@pytest.fixture
def workdir(tmp_path: Path) -> Path:
    """An empty directory to run ``wfctl`` in (given as its ``cwd``)."""
    path = tmp_path / "work"
    path.mkdir()
    return path


@pytest.fixture
def elsewhere(tmp_path: Path) -> Path:
    """A real store with one completed run, whose ``runs`` a link elsewhere points to."""
    real = tmp_path / "real"
    run_id_of(wfctl("run", GREET, "--store", real, "--json"))
    return real


def test_a_runs_directory_that_is_a_link_is_refused(tmp_path: Path, elsewhere: Path) -> None:
    store = tmp_path / "store"
    store.mkdir(mode=0o700)
    (store / "runs").symlink_to(elsewhere / "runs", target_is_directory=True)
    before = _tree(elsewhere)
    line = f"wfctl: error: store '{store}' holds runs as a symbolic link, which is not followed"
    (run_id,) = os.listdir(elsewhere / "runs")
    for args in (
        ["runs"],
        ["verify-lineage"],
        ["gc", "--older-than", "0s"],
        ["log", run_id],
        ["show", f"{run_id}.0"],
        ["run", str(GREET)],
        ["resume", run_id],
    ):
        done = wfctl(*args, "--store", store)
        assert done.code == 2, (args, done)
        assert done.error_line() == line, args
    assert _tree(elsewhere) == before  # nothing read as ours, created, or removed through it
    assert (store / "runs").is_symlink()

    storage = FileCheckpointStorage(store)
    with pytest.raises(StoreLocationError, match="symbolic link"):
        asyncio.run(storage.list_runs())
    with pytest.raises(StoreLocationError, match="symbolic link"):
        storage.lock_run("fresh")
    with pytest.raises(StoreLocationError, match="symbolic link"):
        asyncio.run(storage.delete_run(run_id))
    assert _tree(elsewhere) == before


def test_a_file_named_like_a_run_is_listed_corrupt_and_can_be_removed(tmp_path: Path) -> None:
    store = tmp_path / "store"
    run_id_of(wfctl("run", GREET, "--store", store, "--json"))
    stray = "20261205-230000-aaaaaaaa"
    (store / "runs" / stray).write_text("not a run\n")
    why = f"{store / 'runs' / stray}: run entry is a file, not a directory"

    listed = wfctl("runs", "--store", store, "--json")
    assert listed.code == 0
    statuses = {run["run_id"]: (run["status"], run["problem"]) for run in listed.json()["runs"]}
    assert statuses[stray] == ("corrupt", why)  # was left out: a listing that hid an entry
    verified = wfctl("verify-lineage", "--store", store, "--json")
    assert verified.code == 1
    [broken] = [run for run in verified.json()["runs"] if run["run_id"] == stray]
    assert broken["ok"] is False
    for args in (["log", stray], ["show", f"{stray}.0"], ["resume", stray]):
        done = wfctl(*args, "--store", store)
        assert done.code == 2, (args, done)
        assert done.error_line() == f"wfctl: error: corrupt checkpoint data in {why}", args
    kept = wfctl("gc", "--keep", "0", "--store", store, "--json")
    assert kept.code == 0 and (store / "runs" / stray).is_file()  # gc keeps corrupt runs

    removed = wfctl("rm", stray, "--store", store, "--json")
    assert removed.code == 0
    assert [run["run_id"] for run in removed.json()["runs"]] == [stray]
    assert not (store / "runs" / stray).exists()  # was exit 0 with nothing removed


def test_a_dangling_runs_link_creates_nothing(tmp_path: Path) -> None:
    store = tmp_path / "store"
    store.mkdir(mode=0o700)
    target = tmp_path / "target"
    (store / "runs").symlink_to(target)
    done = wfctl("run", GREET, "--store", store)
    assert done.code == 2 and "symbolic link" in done.error_line()
    assert not target.exists()


def test_a_runs_entry_that_is_a_file_is_refused(tmp_path: Path) -> None:
    store = tmp_path / "store"
    store.mkdir(mode=0o700)
    (store / "runs").write_text("")
    for args in (["runs"], ["verify-lineage"], ["run", str(GREET)]):
        done = wfctl(*args, "--store", store)
        assert done.code == 2, (args, done)
        assert done.error_line() == (
            f"wfctl: error: store '{store}' holds runs as a file, not a directory"
        )
    assert _tree(store) == ["runs"]


def test_the_file_system_root_is_refused_as_a_store(tmp_path: Path) -> None:
    had_runs = os.path.lexists("/runs")
    link = tmp_path / "to-root"
    link.symlink_to("/", target_is_directory=True)
    for store in ("/", str(link)):
        for args in (["run", str(GREET)], ["runs"], ["gc", "--older-than", "0s"]):
            done = wfctl(*args, "--store", store)
            assert done.code == 2, (args, done)
            assert done.error_line().startswith(
                f"wfctl: error: store '{store}' is the root of the file system"
            )
    assert os.path.lexists("/runs") == had_runs
    with pytest.raises(StoreLocationError, match="root of the file system"):
        FileCheckpointStorage("/")


def test_an_empty_store_path_is_refused(workdir: Path) -> None:
    line = "wfctl: error: store '' is empty: name a directory (. for the current one)"
    for args in (["run", str(GREET)], ["runs"], ["verify-lineage"], ["gc"]):
        done = wfctl(*args, "--store", "", cwd=workdir)
        assert done.code == 2, (args, done)
        assert done.error_line() == line
    assert list(workdir.iterdir()) == []  # no ./runs
    (workdir / "wfctl.toml").write_text('store = ""\n')
    configured = wfctl("run", GREET, cwd=workdir)
    assert configured.code == 2 and "is empty" in configured.error_line()
    assert sorted(p.name for p in workdir.iterdir()) == ["wfctl.toml"]
    with pytest.raises(StoreLocationError, match="empty"):
        FileCheckpointStorage("")


def test_an_empty_wfctl_store_variable_means_unset(workdir: Path) -> None:
    done = wfctl("run", GREET, "--json", cwd=workdir, env={"WFCTL_STORE": ""})
    assert done.code == 0, done
    assert (workdir / ".wfctl" / "runs" / run_id_of(done)).is_dir()


def test_a_store_root_that_links_to_a_directory_is_used(tmp_path: Path, elsewhere: Path) -> None:
    link = tmp_path / "link"
    link.symlink_to(elsewhere, target_is_directory=True)
    done = wfctl("runs", "--store", link, "--json")
    assert done.code == 0, done
    assert [r["status"] for r in done.json()["runs"]] == ["completed"]
