"""Shell completion through the installed ``wfctl``: run ids and checkpoint ids from the store.

The bash protocol: ``_WFCTL_COMPLETE=complete_bash`` with ``COMP_WORDS`` (the line so far) and
``COMP_CWORD`` (the index of the word being completed); one candidate per line on stdout.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from tests.cli.conftest import REPO, wfctl

FIXTURES = REPO / "tests" / "fixtures"
HEALTHY_RUNS = ["answered", "completed", "parallel", "paused", "restored", "retried"]


def _complete(line: str, *, cwd: Path | None = None, store: Path | None = None) -> list[str]:
    words = line.split()
    cword = len(words) if line.endswith(" ") else len(words) - 1
    env = {"_WFCTL_COMPLETE": "complete_bash", "COMP_WORDS": line, "COMP_CWORD": str(cword)}
    if store is not None:
        env["WFCTL_STORE"] = str(store)
    done = wfctl(cwd=cwd, env=env)
    assert done.code == 0 and done.stderr == "", done.stderr
    return done.stdout.split()


def _store(tmp_path: Path) -> Path:
    store = tmp_path / "store"
    shutil.copytree(FIXTURES / "healthy", store)
    return store


def test_run_ids_complete_from_the_store(tmp_path: Path) -> None:
    store = _store(tmp_path)
    assert _complete("wfctl log ", store=store) == HEALTHY_RUNS
    assert _complete("wfctl log re", store=store) == ["restored", "retried"]
    for command in ("resume", "export", "pause", "verify-lineage", "cancel", "rm"):
        assert _complete(f"wfctl {command} pa", store=store) == ["parallel", "paused"]
    # The store named on the line wins over the environment.
    other = tmp_path / "other"
    shutil.copytree(FIXTURES / "tampered", other)
    named = _complete(f"wfctl log --store {other} ", store=store)
    assert named == ["tampered-edit", "tampered-parent"]


def test_checkpoint_ids_complete_from_each_runs_head(tmp_path: Path) -> None:
    store = _store(tmp_path)
    assert _complete("wfctl show completed.", store=store) == [f"completed.{i}" for i in range(5)]
    assert _complete("wfctl show pau", store=store) == ["paused.0", "paused.1", "paused.2"]
    assert _complete("wfctl replay -c retried.4", store=store) == ["retried.4"]
    assert _complete("wfctl replay --checkpoint par", store=store) == [
        "parallel.0",
        "parallel.1",
        "parallel.2",
    ]


def test_many_runs_complete_to_run_ids_first(tmp_path: Path) -> None:
    store = _store(tmp_path)
    journal = store / "runs" / "completed" / "journal.jsonl"
    names = [f"batch-{i:02d}" for i in range(21)]
    for name in names:
        (store / "runs" / name).mkdir()
        shutil.copy(journal, store / "runs" / name / "journal.jsonl")
    assert _complete("wfctl show batch", store=store) == names


def test_the_configured_store_is_used(tmp_path: Path) -> None:
    store = _store(tmp_path)
    work = tmp_path / "work"
    work.mkdir()
    (work / "wfctl.toml").write_text(f'store = "{store}"\n', encoding="utf-8")
    assert _complete("wfctl log ans", cwd=work) == ["answered"]


def test_completion_never_fails_loudly(tmp_path: Path) -> None:
    assert _complete("wfctl log ", store=tmp_path / "missing") == []
    assert _complete(f"wfctl show --store {tmp_path / 'missing'} x") == []
    broken = tmp_path / "broken"
    shutil.copytree(FIXTURES / "tampered", broken)
    (broken / "runs" / "tampered-edit" / "journal.jsonl").write_bytes(b"\x00garbage\n")
    # A run whose head cannot be read offers no checkpoints; the others still complete.
    assert _complete("wfctl show tampered-", store=broken) == [
        f"tampered-parent.{i}" for i in range(5)
    ]
    (tmp_path / "work").mkdir()
    (tmp_path / "work" / "wfctl.toml").write_text("store = [not toml", encoding="utf-8")
    assert _complete("wfctl log ", cwd=tmp_path / "work") == []
