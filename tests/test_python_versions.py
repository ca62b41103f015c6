"""The Python versions CI tests are the ones pyproject.toml declares, from its floor up."""

from __future__ import annotations

import subprocess
import sys
import tomllib
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def test_the_classifiers_start_at_requires_python_and_skip_no_version() -> None:
    project = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    done = subprocess.run(
        [sys.executable, str(REPO / "scripts" / "python_versions.py")],
        capture_output=True,
        text=True,
        check=True,
    )
    minors = [int(version.split(".")[1]) for version in done.stdout.split()]
    assert project["requires-python"] == f">=3.{minors[0]}"
    assert minors == list(range(minors[0], minors[-1] + 1)), minors
    assert f"3.{sys.version_info.minor}" in done.stdout.split()  # this run's own Python


def test_ci_runs_the_readme_test_command_once_a_version() -> None:
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    command = "python -m pip install -e '.[test]' && python -m pytest -n auto"
    assert command in readme.split("\n\n", 2)[1]  # the README's second command
    ci = (REPO / ".ci" / "run").read_text(encoding="utf-8")
    assert command in ci and "scripts/python_versions.py" in ci
