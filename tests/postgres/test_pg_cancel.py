"""``wfctl cancel`` of a run driven on a PostgreSQL store, through the installed executable.

The driver is a real ``wfctl run`` process stopped at a file gate (``workflows/gated.py``) that
is never opened, the canceller another process: the request reaches the driver through the
database (its row and a notification), as it would from another machine. What happens after
the request is decided by the driver's drain timeout, never by when its notification arrives:
with no drain the gated step is cancelled as soon as the driver sees the request; with a drain
longer than the test it cannot end, and killing it is what lets the run go. The tests wait for
the request in the run's row and for the gate's ``started`` file, never for a time.
"""

from __future__ import annotations

import json
import signal
from pathlib import Path

import psycopg

from tests.cli.conftest import wfctl
from tests.cli.test_cancel_running import (
    _reap,  # noqa: F401  # the fixture that kills what a failed test left running
    cancelling,
    check_cancelled_by,
    gated,
    refused,
)
from tests.cli.test_json_documents import _check as check_schema


def _asked(url: str, run_id: str) -> bool:
    with psycopg.connect(url, autocommit=True) as conn:
        row = conn.execute(
            "SELECT pause_requested AND cancel_request IS NOT NULL FROM wfctl_runs"
            " WHERE run_id = %s",
            (run_id,),
        ).fetchone()
    return row is not None and row[0] is True


def test_cancel_of_a_run_driven_on_postgresql(pg_url: str, tmp_path: Path) -> None:
    driver, _gate = gated(pg_url, tmp_path, "live", drain=("--drain-timeout", "0"))
    canceller = cancelling(
        pg_url, "live", "--reason", "superseded", asked=lambda: _asked(pg_url, "live")
    )
    out, err = canceller.communicate(timeout=120)
    assert canceller.returncode == 0, err
    doc = json.loads(out)
    check_schema(doc, "cancel")
    # The gated step, still running when the driver saw the request, was drained: not recorded.
    assert (doc["status"], doc["previous_status"], doc["head_checkpoint_id"]) == (
        "cancelled",
        "running",
        "live.1",
    )
    check_cancelled_by(pg_url, "live", driver, canceller.pid)
    assert not _asked(pg_url, "live")  # withdrawn with the run's end


def test_ctrl_c_no_wait_and_a_killed_driver_on_postgresql(pg_url: str, tmp_path: Path) -> None:
    driver, _gate = gated(pg_url, tmp_path, "live")
    # Signalled once its request is in the row: it is waiting, its handlers installed.
    canceller = cancelling(pg_url, "live", asked=lambda: _asked(pg_url, "live"))
    canceller.send_signal(signal.SIGINT)
    assert refused(canceller, 130).startswith("wfctl: interrupted: the cancel request stays")
    assert _asked(pg_url, "live")
    asked = wfctl("cancel", "live", "--no-wait", "--store", pg_url, "--json")
    assert asked.code == 0, asked.stderr
    check_schema(asked.json(), "cancel")
    assert (asked.json()["status"], asked.json()["head_checkpoint_id"]) == ("running", None)
    # A driver that does not answer (a step longer than its drain) is stopped by killing it:
    # the server ends its session and its lease, and cancel ends the run from its last record.
    driver.send_signal(signal.SIGKILL)
    driver.communicate(timeout=120)
    done = wfctl("cancel", "live", "--store", pg_url, "--json")
    assert done.code == 0, done.stderr
    assert (done.json()["previous_status"], done.json()["head_checkpoint_id"]) == (
        "interrupted",
        "live.1",
    )
    assert wfctl("verify-lineage", "live", "--store", pg_url).code == 0
    assert not _asked(pg_url, "live")
