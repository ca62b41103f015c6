"""A DBOS app that writes the system database the DBOS reader's tests read (run as a script:
``python app.py SYSTEM_DATABASE_URL [long]``; DBOS is one per process).

With ``long``, it writes one workflow ``long`` of :data:`LONG_STEPS` steps returning
:data:`LONG_BYTES` characters each (the streaming check), and nothing else. Otherwise:

``wf-parent`` (steps, a retried step, a child workflow, an event set, a sleep, a
message received; completed), ``wf-failing`` (failed), a fork of ``wf-parent`` from its step 3
(its first two steps copied; it receives a message too) and ``wf-pending``, whose process ends
while it waits for a message that never comes (PENDING): its step 1 and its ``recv``'s timeout
sleep (3) are written, the ``recv`` (2) is not.
"""

from __future__ import annotations

import contextlib
import os
import sys
import time
from typing import Any

from dbos import DBOS, SetWorkflowID

DBOS(
    config={
        "name": "wfctl-test",
        "system_database_url": sys.argv[1],
        "run_admin_server": False,
        "notification_listener_polling_interval_sec": 0.01,
    }
)
attempts = {"flaky": 0}
LONG_STEPS, LONG_BYTES = 200, 20_000


@DBOS.step()
def add(a: int, b: int) -> int:
    return a + b


@DBOS.step(retries_allowed=True, max_attempts=3, interval_seconds=0.01)
def flaky() -> str:
    attempts["flaky"] += 1
    if attempts["flaky"] < 2:
        raise ValueError("the first try fails")
    return "ok after a retry"


@DBOS.workflow()
def child(n: int) -> int:
    return add(n, 1)


@DBOS.workflow()
def parent(n: int) -> dict[str, Any]:
    x = add(n, 2)
    y = flaky()
    c = child(x)
    DBOS.set_event("progress", {"x": x})
    DBOS.sleep(0.01)
    message = DBOS.recv("greeting", timeout_seconds=30)
    return {"x": x, "y": y, "child": c, "message": message}


@DBOS.workflow()
def failing() -> None:
    add(1, 1)
    raise RuntimeError("the workflow fails")


@DBOS.workflow()
def waiting() -> str:
    add(5, 5)
    return str(DBOS.recv("never", timeout_seconds=600))


@DBOS.step()
def big(i: int) -> str:
    return f"{i:08d}" + "x" * (LONG_BYTES - 8)


@DBOS.workflow()
def long() -> int:
    return sum(len(big(i)) for i in range(LONG_STEPS))


DBOS.launch()
if sys.argv[2:] == ["long"]:
    with SetWorkflowID("long"):
        long()
    os._exit(0)
with SetWorkflowID("wf-parent"):
    handle = DBOS.start_workflow(parent, 1)
DBOS.send("wf-parent", "hello", "greeting")
handle.get_result()
with SetWorkflowID("wf-failing"), contextlib.suppress(RuntimeError):
    failing()
fork = DBOS.fork_workflow("wf-parent", 3)
DBOS.send(fork.get_workflow_id(), "hello again", "greeting")
fork.get_result()
with SetWorkflowID("wf-pending"):
    DBOS.start_workflow(waiting)
# its step and the durable sleep of its recv's timeout, written when the recv starts waiting
while len(DBOS.list_workflow_steps("wf-pending")) < 2:
    time.sleep(0.01)  # polling DBOS's own record of the steps: no ordering between processes
os._exit(0)  # the process dies with wf-pending waiting: it stays PENDING
