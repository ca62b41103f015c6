"""The conformance suite (wfctl.storage.testing) against the file and memory storages."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.storage.helpers import arun, ckpt
from wfctl._errors import CheckpointCorruptError
from wfctl._storage import FileCheckpointStorage, InMemoryCheckpointStorage
from wfctl.storage import RunStore
from wfctl.storage.testing import StorageConformance


class TestFileStorage(StorageConformance):
    """A durable file storage under a fresh directory; a second object on the same directory."""

    @pytest.fixture(autouse=True)
    def _root(self, tmp_path: Path) -> None:
        self.root = tmp_path / "store"

    def make_storage(self) -> RunStore:
        return FileCheckpointStorage(self.root)

    def make_second_view(self, storage: RunStore) -> RunStore | None:
        return FileCheckpointStorage(self.root)

    async def corrupt_record(self, storage: RunStore, run_id: str, seq: int) -> None:
        journal = self.root / "runs" / run_id / "journal.jsonl"
        lines = journal.read_bytes().splitlines(keepends=True)
        lines[seq] = lines[seq].replace(b'"kind":', b'"kind": ', 1)  # valid JSON, wrong checksum
        journal.write_bytes(b"".join(lines))


class TestMemoryStorage(StorageConformance):
    """A memory storage: nothing shared, nothing stored as bytes to damage."""

    def make_storage(self) -> RunStore:
        return InMemoryCheckpointStorage()


def test_the_suite_itself_is_not_collected() -> None:
    assert not StorageConformance.__name__.startswith("Test")


def test_a_refused_root_leaves_nothing_on_disk(tmp_path: Path) -> None:
    storage = FileCheckpointStorage(tmp_path / "store")

    async def refuse() -> None:
        with pytest.raises(CheckpointCorruptError):
            await storage.save(ckpt("r1", 0, "step"))

    arun(refuse())
    assert not (tmp_path / "store" / "runs" / "r1").exists()
