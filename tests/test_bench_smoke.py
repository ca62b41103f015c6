"""The benchmark harness runs end to end on wfctl alone (tiny N, one run, no peers needed).

This checks that ``bench/run.py`` works and reports every wfctl row, not how fast anything is:
timings on a shared CI machine prove nothing, so no assertion here looks at a time.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_quick_benchmark_reports_every_wfctl_row(tmp_path: Path) -> None:
    out, markdown = tmp_path / "results.json", tmp_path / "RESULTS.md"
    command = [sys.executable, str(ROOT / "bench" / "run.py"), "--quick", "--only", "wfctl"]
    command += ["--out", str(out), "--markdown", str(markdown), "--workdir", str(tmp_path)]

    done = subprocess.run(
        command, cwd=ROOT, capture_output=True, text=True, timeout=120, check=False
    )

    assert done.returncode == 0, done.stderr
    report = json.loads(out.read_text(encoding="utf-8"))
    rows = {(row["scenario"], row["engine"]): row for row in report["rows"]}
    for scenario in ("sequential", "restore", "fanout", "pause", "resume"):
        row = rows[scenario, "wfctl"]
        assert row["status"] == "ok", row
        assert row["seconds"]["median"] >= 0
        assert row["records"] > 0
    assert rows["sequential", "floor"]["status"] == "ok"
    assert rows["restore", "wfctl"]["executed"] == 0  # every step served from the record
    assert rows["fanout", "wfctl"]["roots"] == 1
    assert rows["fanout", "wfctl"]["unreachable"] == 0
    # The CLI rows exist; a command that is not there yet says so instead of failing the run.
    assert rows["verify_lineage", "wfctl"]["status"] in ("ok", "unavailable")
    assert rows["startup", "wfctl --help"]["status"] in ("ok", "unavailable")
    assert not any(
        row["engine"] in ("agent_framework", "langgraph_sqlite") for row in report["rows"]
    )
    assert {t["verdict"] for t in report["targets"]} <= {"met", "missed", "n/a"}
    assert "## Targets" in markdown.read_text(encoding="utf-8")


def test_startup_benchmark_times_every_command() -> None:
    command = [sys.executable, str(ROOT / "bench" / "startup.py"), "--rounds", "1"]
    done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    for name in ("--help", "runs (empty store)", "run (one step)"):
        assert f"  {name} " in done.stdout, done.stdout
