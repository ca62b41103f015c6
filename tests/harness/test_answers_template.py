"""The answers template is a store file like the others: private, atomic, never written through a
link planted at its name.

A run of ``tests/cli/workflows/review.py`` pauses on two requests; answering one pauses it again,
and the template is written a second time -- into a run directory someone could have planted a
symbolic link in meanwhile (a store is copied, shared and attached to bug reports).
"""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

import pytest

from tests.cli.conftest import WORKFLOWS, Invocation, wfctl

pytestmark = pytest.mark.skipif(os.name != "posix", reason="POSIX links and modes")

REVIEW = f"{WORKFLOWS / 'review.py'}:review"


def _wfctl(*args: str | Path, umask: int = 0o022) -> Invocation:
    return wfctl(*args, umask=umask)


def test_a_link_planted_at_the_template_is_replaced_not_followed(tmp_path: Path) -> None:
    store, victim = tmp_path / "store", tmp_path / "outside.txt"
    victim.write_text("precious\n")
    first = _wfctl("run", REVIEW, "--run-id", "r", "--store", store, "--json")
    assert first.code == 3, first.stderr
    template = Path(json.loads(first.stdout)["answers_file"])
    template.unlink()
    template.symlink_to(victim)  # planted while the run waits

    again = _wfctl("resume", "r", "--response", "0/request#0=yes", "--store", store, "--json")

    assert again.code == 3, again.stderr  # still waiting for the score
    assert victim.read_text() == "precious\n"  # the file outside the store is untouched
    assert not template.is_symlink()
    assert '"1/request#0" = ""' in template.read_text()
    assert stat.S_IMODE(template.stat().st_mode) == 0o600


def test_the_template_is_private_even_with_umask_0(tmp_path: Path) -> None:
    store = tmp_path / "store"
    done = _wfctl("run", REVIEW, "--run-id", "r", "--store", store, "--json", umask=0)
    assert done.code == 3, done.stderr
    run_dir = store / "runs" / "r"
    template = run_dir / "answers.toml"
    assert stat.S_IMODE(template.lstat().st_mode) == 0o600
    # Written atomically: no temporary file is left beside it.
    assert sorted(p.name for p in run_dir.iterdir()) == [
        "answers.toml",
        "end.json",
        "journal.jsonl",
    ]
