"""The documentation's console sessions are what wfctl prints today (``scripts/tour.py``)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_every_session_block_matches_a_fresh_session() -> None:
    done = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "tour.py"), "--check"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert done.returncode == 0, (
        "a session block drifted; run `python scripts/tour.py` and review the diff:\n"
        + done.stdout
        + done.stderr
    )


def test_the_check_fails_on_a_block_that_drifted(tmp_path: Path) -> None:
    sys.path.insert(0, str(ROOT / "scripts"))
    try:
        import tour
    finally:
        sys.path.remove(str(ROOT / "scripts"))
    text = "```\n$ wfctl run sample_workflows/concurrent_branches.py\nstale\n[exit 0]\n```\n"
    fresh = tour.regenerate(text)
    assert "stale" not in fresh and '["result:A", "result:B"]' in fresh
    assert tour._mask(fresh) != tour._mask(text)  # what --check compares
