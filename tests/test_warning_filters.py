"""The suite's warning filters: fatal for wfctl and its tests, not for a pytest plugin's own.

``filterwarnings`` in ``pyproject.toml`` turns every warning into an error, except one that a
third-party pytest plugin raises from its own module (``pytest_*``, such as pytest-asyncio's
warning about an unset option, raised while pytest configures itself): that one is shown and
the run goes on. Each case runs pytest in a subprocess with this repository's configuration on
a generated test file, with a stand-in plugin that warns the way pytest-asyncio does.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]

PLUGIN = """
import warnings

import pytest


def pytest_configure(config):
    warnings.warn(pytest.PytestDeprecationWarning("noisy plugin: an option of mine is unset"))
"""

TESTS = """
import asyncio
import os
import warnings

from wfctl import FileCheckpointStorage


def test_quiet():
    pass


def test_a_store_warning_from_wfctl(tmp_path):
    root = tmp_path / "store"
    root.mkdir()
    os.chmod(root, 0o777)
    asyncio.run(FileCheckpointStorage(root).get_latest())


def test_a_deprecation_attributed_to_wfctl():
    warnings.warn_explicit("old", DeprecationWarning, "wfctl/_old.py", 1, module="wfctl._old")


def test_a_warning_in_a_test():
    warnings.warn("careless", UserWarning)
"""


def test_a_plugin_warning_is_shown_and_every_warning_of_ours_fails(tmp_path: Path) -> None:
    (tmp_path / "pytest_noisy.py").write_text(PLUGIN, encoding="utf-8")
    (tmp_path / "test_inner.py").write_text(TESTS, encoding="utf-8")
    env = {**os.environ, "PYTHONPATH": str(tmp_path), "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"}
    config = ["-c", str(REPO / "pyproject.toml"), "--rootdir", str(tmp_path)]
    plugins = ["-p", "pytest_noisy", "-p", "no:cacheprovider"]
    done = subprocess.run(
        [sys.executable, "-m", "pytest", *config, *plugins, "-rA", "--tb=short", "test_inner.py"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    out = done.stdout + done.stderr
    assert "noisy plugin: an option of mine is unset" in out, out
    assert "PASSED test_inner.py::test_quiet" in out, out
    assert "FAILED test_inner.py::test_a_store_warning_from_wfctl - " in out, out
    assert "StoreSecurityWarning: checkpoint store" in out, out
    assert "FAILED test_inner.py::test_a_deprecation_attributed_to_wfctl - " in out, out
    assert "FAILED test_inner.py::test_a_warning_in_a_test - " in out, out
    assert done.returncode == 1, out
