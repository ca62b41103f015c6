"""``sys.exit()`` inside workflow code fails the run; it never ends ``wfctl`` itself.

asyncio re-raises a ``SystemExit`` escaping a task out of the event loop, so without a guard
``sys.exit(0)`` in a step made ``wfctl run`` exit 0 with nothing on stdout and the run left
``interrupted``.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.cli.conftest import WORKFLOWS, invoke, run_id_of, wfctl

EXITS = WORKFLOWS / "exits.py"


@pytest.mark.parametrize(
    ("where", "named"),
    [("step", "step leave#0"), ("body", "the workflow body"), ("branch", "branch()")],
)
def test_sys_exit_in_workflow_code_is_a_failed_run(store: Path, where: str, named: str) -> None:
    out = wfctl("run", EXITS, "--input", json.dumps(where), "--store", store, "--json")
    assert out.code == 1, (out.stdout, out.stderr)
    doc = out.json()
    assert doc["status"] == "failed"
    assert doc["error"].startswith(f"WorkflowExitError: SystemExit(0) raised in {named}")
    stderr = out.stderr.strip().splitlines()
    assert len(stderr) == 1 and stderr[0].startswith(f"wfctl: run {doc['run_id']} failed: ")
    run_id = run_id_of(out)
    log = invoke("log", run_id, "--store", store, "--json").json()
    kinds = [c["kind"] for c in log["checkpoints"]]
    assert kinds == ["root", "step", "failed"]  # the step before the exit stays recorded
    runs = invoke("runs", "--store", store, "--json").json()["runs"]
    assert [r["status"] for r in runs] == ["failed"]
    shown = invoke("show", doc["head_checkpoint_id"], "--store", store, "--json").json()["record"]
    assert shown["data"]["error"]["type"] == "WorkflowExitError"
    assert "SystemExit(0)" in shown["data"]["error"]["message"]
