"""open_storage: one opener from a path or a URL."""

from __future__ import annotations

from pathlib import Path

import pytest

from wfctl import StoreLocationError
from wfctl.storage import (
    FileCheckpointStorage,
    InMemoryCheckpointStorage,
    RunStore,
    open_storage,
)


def test_a_path_opens_the_file_store(tmp_path: Path) -> None:
    storage = open_storage(tmp_path, durability="batch")
    assert isinstance(storage, FileCheckpointStorage)
    assert isinstance(storage, RunStore)
    assert storage.location == str(tmp_path)
    assert storage.durability.mode == "batch"


def test_a_missing_directory_is_refused_when_it_must_exist(tmp_path: Path) -> None:
    with pytest.raises(StoreLocationError, match="does not exist"):
        open_storage(tmp_path / "typo")
    assert isinstance(open_storage(tmp_path / "later", must_exist=False), FileCheckpointStorage)


def test_memory_opens_a_fresh_memory_store() -> None:
    first, second = open_storage("memory:"), open_storage("memory:")
    assert isinstance(first, InMemoryCheckpointStorage) and isinstance(first, RunStore)
    assert first is not second and first.location == "memory:"


@pytest.mark.parametrize("url", ["http://example.com/store", "sqlite:///x.db"])
def test_an_unknown_scheme_is_refused_by_name(url: str) -> None:
    with pytest.raises(StoreLocationError, match="postgresql://"):
        open_storage(url)
