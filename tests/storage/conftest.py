"""Fixtures for the storage tests: each storage wfctl ships, and the file one alone."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from wfctl._storage import FileCheckpointStorage, InMemoryCheckpointStorage


@pytest.fixture(params=["memory", "file"])
def any_storage(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Any]:
    """Each storage wfctl ships, for the semantics they share."""
    if request.param == "memory":
        yield InMemoryCheckpointStorage()
        return
    storage = FileCheckpointStorage(tmp_path / "store")
    yield storage
    storage.close()


@pytest.fixture
def file_storage(tmp_path: Path) -> Iterator[Any]:
    """A durable file storage under a fresh directory."""
    storage = FileCheckpointStorage(tmp_path / "store")
    yield storage
    storage.close()
