"""bench/af_inspect.py runs end to end on a tiny directory written by agent-framework: every row
is measured, none fails (no assertion looks at a time: a shared machine's timings prove
nothing)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent.parent


def test_the_agent_framework_inspect_benchmark_measures_every_row(tmp_path: Path) -> None:
    report_file = tmp_path / "report.json"
    command = [sys.executable, str(ROOT / "bench" / "af_inspect.py"), str(tmp_path)]
    command += ["--runs", "3", "--iterations", "4", "--rounds", "1", "--json", str(report_file)]
    done = subprocess.run(command, capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    report = json.loads(report_file.read_text(encoding="utf-8"))
    assert report["store"]["checkpoints"] == 3 * (4 + 2)
    assert report["failed"] == {}
    assert set(report["rows"]) == {
        "wfctl runs",
        "list_checkpoints",
        "wfctl log",
        "wfctl du",
        "wfctl verify-lineage",
    }
    assert report["rows"]["wfctl log"]["first_line_seconds"]["median"] > 0
    assert report["ratios"]["list_checkpoints / wfctl runs"] > 0
