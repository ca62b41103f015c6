"""Style is checked, not suggested: ruff's linter and formatter pass over the whole repository.

ruff is in the test extra, pinned to one minor version so that a new formatter style cannot
turn a green tree red on its own.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]


@pytest.mark.parametrize("command", [["check", "."], ["format", "--check", "."]])
def test_ruff_passes(command: list[str]) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "ruff", *command],
        cwd=REPO,
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
