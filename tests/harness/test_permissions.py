"""Store permissions: files private to their owner, and a warning for a store others can change.

Files are created ``0600`` and directories ``0700`` whatever the umask (checked with umask 0,
the most permissive): the journal, the end marker, ``owner.json`` and the pause request. A store root
that already exists and is writable by group or others, or is owned by another user, gets one
:class:`StoreSecurityWarning` (imported from its internal module until ``wfctl`` exports it).
"""

from __future__ import annotations

import asyncio
import os
import stat
import warnings
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.harness import harness_workload as W
from tests.harness.faulty_fs import Fault, FaultyFS
from wfctl import FileCheckpointStorage
from wfctl._storage._security import StoreSecurityWarning

pytestmark = pytest.mark.skipif(os.name != "posix", reason="POSIX permissions")


@pytest.fixture
def open_umask() -> Iterator[None]:
    """Run with umask 0: anything not created private on purpose would be world-writable."""
    old = os.umask(0)
    try:
        yield
    finally:
        os.umask(old)


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.lstat().st_mode)


def test_every_store_file_is_private_even_with_umask_0(tmp_path: Path, open_umask: None) -> None:
    storage = FileCheckpointStorage(tmp_path / "deep" / "store")
    wf = W.pipeline.build(checkpoint_storage=storage)
    paused = asyncio.run(wf.run(W.spec_for(1), run_id="r1"))
    assert paused.status == "paused"
    lock = storage.lock_run("r1")
    try:
        storage.request_pause_now("r1")
        run_dir = storage.root / "runs" / "r1"
        for name in ("journal.jsonl", "end.json", "owner.json", "pause"):
            assert _mode(run_dir / name) == 0o600, name
        for directory in (storage.root, storage.root / "runs", run_dir):
            assert _mode(directory) == 0o700, directory
        for path in storage.root.rglob("*"):  # nothing else, and no temporary file left over
            assert _mode(path) & 0o077 == 0, path
        assert sorted(p.name for p in run_dir.iterdir()) == [
            "end.json",
            "journal.jsonl",
            "owner.json",
            "pause",
        ]
    finally:
        lock.release()
        storage.close()


def test_a_failed_pause_request_leaves_no_temporary_file(tmp_path: Path) -> None:
    storage = FileCheckpointStorage(tmp_path / "store")
    asyncio.run(W.pipeline.build(checkpoint_storage=storage).run(W.spec_for(1), run_id="r1"))
    run_dir = tmp_path / "store" / "runs" / "r1"
    before = sorted(p.name for p in run_dir.iterdir())
    faulty = FileCheckpointStorage(
        tmp_path / "store", fs=FaultyFS(0, [Fault("replace", "eio", 0, "persist")])
    )
    with pytest.raises(OSError, match="injected"):
        faulty.request_pause_now("r1")
    assert not faulty.pause_requested("r1")
    assert sorted(p.name for p in run_dir.iterdir()) == before
    storage.close()


def _first_use(root: Path) -> list[warnings.WarningMessage]:
    """Open a storage at ``root`` and use it twice; return the warnings it gave."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        storage = FileCheckpointStorage(root)
        asyncio.run(storage.list_runs())
        asyncio.run(storage.get_latest())
        asyncio.run(W.pipeline.build(checkpoint_storage=storage).run(W.spec_for(1)))
        storage.close()
    return [w for w in caught if issubclass(w.category, StoreSecurityWarning)]


@pytest.mark.parametrize("mode", [0o777, 0o770, 0o707, 0o1777])
def test_a_store_others_can_write_to_is_warned_about_once(tmp_path: Path, mode: int) -> None:
    root = tmp_path / "store"
    root.mkdir()
    root.chmod(mode)
    (warning,) = _first_use(root)
    message = str(warning.message)
    assert str(root) in message and "writable by" in message and "chmod 700" in message
    assert issubclass(warning.category, UserWarning)


@pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() != 0, reason="needs root to chown")
def test_a_store_owned_by_another_user_is_warned_about(tmp_path: Path) -> None:
    import pwd

    nobody = pwd.getpwnam("nobody")
    root = tmp_path / "store"
    root.mkdir(mode=0o700)
    os.chown(root, nobody.pw_uid, nobody.pw_gid)
    (warning,) = _first_use(root)
    assert f"owned by uid {nobody.pw_uid}" in str(warning.message)


def test_a_private_or_new_store_gets_no_warning(tmp_path: Path) -> None:
    private = tmp_path / "private"
    private.mkdir(mode=0o700)
    assert _first_use(private) == []
    assert _first_use(tmp_path / "new" / "store") == []  # created by wfctl: 0700
    link = tmp_path / "link"
    link.symlink_to(private, target_is_directory=True)  # a link to a private store is fine
    assert _first_use(link) == []
