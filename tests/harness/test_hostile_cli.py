"""Hostile input through the installed ``wfctl``: one line on stderr, the right exit code.

The same broken stores as ``test_hostile`` (see ``hostile_cases``), one per region, and
malformed ids, given to ``show``, ``log``, ``resume``, ``replay``, ``verify-lineage`` and
``runs``: a refusal exits 2 with exactly one ``wfctl: error:`` line naming the journal (and
line), never a traceback; ``verify-lineage`` exits 1 on a broken lineage; ``runs`` lists a run
whose root or head cannot be trusted as ``corrupt``; a value that cannot be decoded fails the
resumed run (exit 1). A journal cut back to a record boundary counts as corrupt everywhere.
"""

from __future__ import annotations

import json
import os
import subprocess
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from tests.conftest import wfctl_executable
from tests.harness.hostile_cases import KINDS, MID_ID, OTHER, RUN, Baseline, break_store

REPO = Path(__file__).resolve().parents[2]

CLI_KINDS = [
    "truncated-mid",
    "bitflip-head",
    "stale-record-appended",
    "bitflip-root",
    "cut-back-3",
    "journal-symlink",
    "unknown-tag",
    "unknown-tag-in-input",
]
CLI_COMMANDS = {
    "show": ["show", "target.4"],
    "log": ["log", RUN],
    "resume": ["resume", RUN, "--response", "approve=yes"],
    "replay": ["replay", "--checkpoint", MID_ID],
    "verify-lineage": ["verify-lineage", RUN],
    "runs": ["runs", "--json"],
}


def _wfctl(store: Path, args: list[str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [wfctl_executable(), *args, "--store", str(store)],
        capture_output=True,
        text=True,
        cwd=REPO,  # resume and replay reload the workflow by the module name its root recorded
        env={**os.environ, "PYTHONPATH": str(REPO)},
        timeout=120,
    )


def _cli_runs_all(store: Path) -> dict[str, subprocess.CompletedProcess[str]]:
    """Run every command on ``store``: the readers at once, then the two that write."""
    out: dict[str, subprocess.CompletedProcess[str]] = {}
    with ThreadPoolExecutor(max_workers=4) as pool:
        for group in (("show", "log", "verify-lineage", "runs"), ("resume", "replay")):
            futures = {name: pool.submit(_wfctl, store, CLI_COMMANDS[name]) for name in group}
            out.update({name: future.result() for name, future in futures.items()})
    return out


def _one_error_line(done: subprocess.CompletedProcess[str], *fragments: str) -> None:
    assert done.returncode == 2, (done.returncode, done.stdout, done.stderr)
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("wfctl: error:"), done.stderr
    assert "Traceback" not in done.stderr + done.stdout
    for fragment in fragments:
        assert fragment in lines[0], (fragment, lines[0])


@pytest.mark.parametrize("name", CLI_KINDS)
def test_the_cli_names_broken_input_in_one_line(
    baseline: Baseline, name: str, tmp_path: Path
) -> None:
    kind = next(k for k in KINDS if k.name == name)
    store = break_store(baseline, kind, tmp_path)
    out = _cli_runs_all(store)
    for done in out.values():
        assert "Traceback" not in done.stderr + done.stdout, done.stderr
    journal = str(store / "runs" / RUN / "journal.jsonl")
    run_dir = str(store / "runs" / RUN)
    runs = {r["run_id"]: r for r in json.loads(out["runs"].stdout)["runs"]}
    assert out["runs"].returncode == 0 and set(runs) == {RUN, OTHER}
    if kind.region in ("value", "input"):
        assert out["show"].returncode == out["log"].returncode == 0
        assert out["verify-lineage"].returncode == 0  # the lineage is sound; a value is not
        assert runs[RUN]["status"] == "paused"
        if kind.region == "input":
            _one_error_line(out["resume"], f"{RUN}.0 input", "unknown type tag")
            _one_error_line(out["replay"], f"{RUN}.0 input", "unknown type tag")
        else:  # the run starts, and fails at the record it cannot decode (exit 1)
            assert out["resume"].returncode == 1, out["resume"].stderr
            assert "CheckpointCorruptError" in out["resume"].stderr + out["resume"].stdout
            assert out["replay"].returncode == 1, out["replay"].stderr
        return
    where = f"{journal}:{kind.line}" if kind.line else run_dir
    for command in ("show", "log", "resume", "replay"):
        _one_error_line(out[command], where)
    assert out["verify-lineage"].returncode == 1, out["verify-lineage"].stderr
    assert runs[RUN]["status"] == "corrupt", runs[RUN]  # runs verifies every record
    assert where in runs[RUN]["problem"], runs[RUN]


def test_the_cli_refuses_malformed_ids_in_one_line(baseline: Baseline, tmp_path: Path) -> None:
    calls = [
        (["show", "../target.1"], "../target.1"),
        (["resume", "../target"], "../target"),
        (["log", "a/b"], "a/b"),
        (["replay", "--checkpoint", "x\\y.1"], "x\\\\y.1"),
        (["verify-lineage", "..", RUN], "'..'"),
    ]
    with ThreadPoolExecutor(max_workers=3) as pool:
        futures = [(pool.submit(_wfctl, baseline.store, args), shown) for args, shown in calls]
        for future, shown in futures:
            _one_error_line(future.result(), "invalid", shown)
