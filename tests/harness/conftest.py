"""Harness fixtures; and the long modes (``@pytest.mark.slow``) run only when asked for with
``-m slow``."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator

import pytest

from tests.harness.hostile_cases import Baseline, build_baseline


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Skip ``slow`` harness tests unless the marker expression selects them."""
    if "slow" in (config.getoption("-m") or ""):
        return
    skip = pytest.mark.skip(reason="long mode: run with -m slow")
    for item in items:
        if "slow" in item.keywords and "harness" in item.nodeid:
            item.add_marker(skip)


@pytest.fixture(scope="module")
def baseline(tmp_path_factory: pytest.TempPathFactory) -> Baseline:
    """The healthy store the hostile-input tests break copies of (see ``hostile_cases``)."""
    return build_baseline(tmp_path_factory.mktemp("hostile") / "store")


@pytest.fixture
def children() -> Iterator[list[subprocess.Popen[str]]]:
    """Child processes to reap (killed if a test failed while they ran)."""
    procs: list[subprocess.Popen[str]] = []
    yield procs
    for proc in procs:
        if proc.poll() is None:
            proc.kill()
        proc.communicate(timeout=30)
