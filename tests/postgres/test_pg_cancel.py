"""``wfctl cancel`` of a run driven on a PostgreSQL store, through the installed executable.

The driver is a real ``wfctl run`` process stopped at a file gate (``workflows/gated.py``), the
canceller another process: the request reaches the driver through the database (its row and a
notification), as it would from another machine. The tests wait for the request in the run's
row and for the gate's ``started`` file, never for a time.
"""

from __future__ import annotations

import json
import signal
from pathlib import Path

import psycopg

from tests.cli.conftest import wfctl
from tests.cli.test_cancel_running import cancelling, check_cancelled_by, gated, refused


def _asked(url: str, run_id: str) -> bool:
    with psycopg.connect(url, autocommit=True) as conn:
        row = conn.execute(
            "SELECT pause_requested AND cancel_request IS NOT NULL FROM wfctl_runs"
            " WHERE run_id = %s",
            (run_id,),
        ).fetchone()
    return row is not None and row[0] is True


def test_cancel_of_a_run_driven_on_postgresql(pg_url: str, tmp_path: Path) -> None:
    driver, gate = gated(pg_url, tmp_path, "live")
    canceller = cancelling(
        pg_url, "live", "--reason", "superseded", asked=lambda: _asked(pg_url, "live")
    )
    assert canceller.poll() is None  # the gated step is running: nothing recorded yet
    (gate / "gate").touch()
    out, err = canceller.communicate(timeout=120)
    assert canceller.returncode == 0, err
    doc = json.loads(out)
    assert (doc["status"], doc["previous_status"], doc["head_checkpoint_id"]) == (
        "cancelled",
        "running",
        "live.2",
    )
    check_cancelled_by(pg_url, "live", driver, canceller.pid)
    assert not _asked(pg_url, "live")  # withdrawn with the run's end


def test_ctrl_c_and_no_wait_leave_the_request_on_postgresql(pg_url: str, tmp_path: Path) -> None:
    driver, gate = gated(pg_url, tmp_path, "live")
    # Signalled once its request is in the row: it is waiting, its handlers installed.
    canceller = cancelling(pg_url, "live", asked=lambda: _asked(pg_url, "live"))
    canceller.send_signal(signal.SIGINT)
    assert refused(canceller, 130).startswith("wfctl: interrupted: the cancel request stays")
    assert _asked(pg_url, "live")
    asked = wfctl(
        "cancel", "live", "--no-wait", "--reason", "superseded", "--store", pg_url, "--json"
    )
    assert asked.code == 0, asked.stderr  # returned while the gate is shut
    doc = asked.json()
    assert (doc["status"], doc["head_checkpoint_id"]) == ("running", None)
    (gate / "gate").touch()
    pid = int(doc["requested_by"].rsplit("pid ", 1)[1].rstrip(")"))  # the last to ask
    check_cancelled_by(pg_url, "live", driver, pid)
