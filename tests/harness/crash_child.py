"""A fork server that runs one attempt of the harness pipeline per command, and may die on cue.

Usage: ``python -m tests.harness.crash_child serve`` (from the repository root).

Starting Python and importing wfctl costs ~200 ms, so this process does it once and then
``fork``s a fresh child for every attempt: each attempt is a real, separate process (its own
pid, its own file locks, its own event loop) that is killed with a real ``SIGKILL``. The server
waits for the child and answers how it ended.

Protocol: one JSON command per line on stdin, one JSON reply per line on stdout::

    {"store": DIR, "run_id": ID, "attempt": N, "spec": {...}, "fresh": bool,
     "responses": {...} | null, "kill": null | {"kind": K, "at": I, "frac": F, "delay": S}}
    -> {"pid": PID, "signal": 9 | null, "code": 0 | null}

``fresh`` starts the run (``run(spec, run_id=ID)``); otherwise the child resumes it from its
head (``run(checkpoint_id=head, responses=...)``). The child appends ``"N label"`` to
``DIR/ledger.txt`` (fsynced) as each step starts, writes ``DIR/attempt-N.json`` with its result if
it lives, and exits. Kill kinds (the child SIGKILLs itself, so each point is reproducible):

- ``before-write``   the ``at``-th journal write is about to happen
- ``partial-write``  after writing the first ``frac`` of the ``at``-th record (a torn tail)
- ``after-write``    after the ``at``-th write, before its ``fdatasync``
- ``after-sync``     after the ``at``-th record's ``fdatasync``, before the engine hears of it
- ``truncate``       right after recovery cut a torn tail (before its sync)
- ``mid-step``       inside the ``at``-th step executed, after its ledger entry
- ``timer``          ``delay`` seconds into the attempt, wherever it is

``"workload": "payment"`` runs the retry-limit case instead (``harness_workload.payment``):
``store`` may be a PostgreSQL URL, ``ledger`` names the ledger file, ``fresh`` starts the run
and anything else resumes it (``resume(run_id)``). Kill kinds:

- ``in-attempt``     inside an attempt of the charge, after its ledger entry
- ``in-backoff``     once a failed attempt is durable and the step backs off (its
                     ``step_retrying`` event)

A living child writes ``{"status", "error"}`` (the run's end, or the error it raised).
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sys
import threading
import time
import traceback
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from tests.harness import harness_workload as W
from wfctl import FileCheckpointStorage, WorkflowEvent
from wfctl._storage._fs import OsFileSystem
from wfctl.storage import open_storage


def die() -> None:
    """SIGKILL this process (and never return)."""
    os.kill(os.getpid(), signal.SIGKILL)
    while True:  # pragma: no cover - the signal is already on its way
        time.sleep(1)


class KillFS(OsFileSystem):
    """The real file system, except that it SIGKILLs the process at one chosen point."""

    def __init__(self, kind: str, at: int, frac: float) -> None:
        self.kind, self.at, self.frac = kind, at, frac
        self.writes = 0
        self.die_after_sync = False

    def writev(self, fd: int, buffers: Sequence[bytes | memoryview]) -> int:
        return self.write(fd, b"".join(buffers))  # one write, as the kernel sees it

    def write(self, fd: int, data: bytes | memoryview) -> int:
        index, self.writes = self.writes, self.writes + 1
        if index == self.at:
            if self.kind == "before-write":
                die()
            if self.kind == "partial-write":
                cut = min(len(data) - 1, max(1, int(len(data) * self.frac)))
                os.write(fd, data[:cut])
                die()
            if self.kind == "after-write":
                os.write(fd, data)
                die()
            if self.kind == "after-sync":
                self.die_after_sync = True
        return super().write(fd, data)

    def fdatasync(self, fd: int) -> None:
        super().fdatasync(fd)
        if self.die_after_sync:
            die()

    def ftruncate(self, fd: int, length: int) -> None:
        super().ftruncate(fd, length)
        if self.kind == "truncate":
            die()


def run_payment(cmd: dict[str, Any]) -> int:
    """Run one process of the retry-limit case (see the module docstring)."""
    kind = (cmd.get("kill") or {}).get("kind")
    W.HOOKS.reset()
    W.HOOKS.ledger = W.file_ledger(cmd["ledger"], str(cmd["attempt"]))
    if kind == "in-attempt":
        W.HOOKS.after_ledger = lambda label: die()

    def on_event(event: WorkflowEvent) -> None:
        # A failed attempt's backoff (a resume announces a cut-off attempt's too: not that).
        if (
            kind == "in-backoff"
            and event.kind == "step_retrying"
            and str(event.data["error"]).startswith("ConnectionError")
        ):
            die()

    async def main() -> dict[str, Any]:
        storage = open_storage(cmd["store"])
        wf = W.payment.build(checkpoint_storage=storage)
        try:
            if cmd["fresh"]:
                result = await wf.run("order-7", run_id=cmd["run_id"], on_event=on_event)
            else:
                result = await wf.resume(cmd["run_id"], on_event=on_event)
            return {"status": result.status, "error": None}
        except Exception as exc:  # a failed run raises its error
            return {"status": "failed", "error": type(exc).__name__}
        finally:
            await storage.aclose()

    outcome = asyncio.run(main())
    Path(cmd["ledger"]).with_name(f"attempt-{cmd['attempt']}.json").write_text(json.dumps(outcome))
    return 0


def run_attempt(cmd: dict[str, Any]) -> int:
    """Run one attempt in this (forked) process; return the exit code if it lives."""
    if cmd.get("workload") == "payment":
        return run_payment(cmd)
    store = Path(cmd["store"])
    attempt = str(cmd["attempt"])
    kill = cmd.get("kill") or {}
    kind = kill.get("kind")
    W.HOOKS.reset()
    W.HOOKS.ledger = W.file_ledger(store / "ledger.txt", attempt)
    fs = None
    if kind in ("before-write", "partial-write", "after-write", "after-sync", "truncate"):
        fs = KillFS(kind, int(kill.get("at", 0)), float(kill.get("frac", 0.5)))
    elif kind == "mid-step":
        executed = []

        def after_ledger(label: str) -> None:
            executed.append(label)
            if len(executed) - 1 == int(kill["at"]):
                die()

        W.HOOKS.after_ledger = after_ledger
    elif kind == "timer":
        timer = threading.Timer(float(kill["delay"]), die)
        timer.daemon = True
        timer.start()

    async def main() -> dict[str, Any]:
        storage = FileCheckpointStorage(store, fs=fs)
        wf = W.pipeline.build(checkpoint_storage=storage)
        if cmd["fresh"]:
            result = await wf.run(cmd["spec"], run_id=cmd["run_id"])
        else:
            head = await storage.get_latest(run_id=cmd["run_id"])
            assert head is not None, "nothing to resume"
            result = await wf.run(checkpoint_id=head.checkpoint_id, responses=cmd["responses"])
        return {
            "status": result.status,
            "outputs": result.get_outputs(),
            "error": repr(result.error) if result.error is not None else None,
            "executed": list(result.executed),
        }

    outcome = asyncio.run(main())
    (store / f"attempt-{attempt}.json").write_text(json.dumps(outcome))
    return 0


def serve() -> None:
    """Answer commands from stdin until it closes, one forked child per command."""
    for line in sys.stdin:
        cmd = json.loads(line)
        pid = os.fork()
        if pid == 0:  # the child: run the attempt, never return into this loop
            code = 3
            try:
                code = run_attempt(cmd)
            except BaseException:
                folder = Path(cmd.get("ledger") or Path(cmd["store"], "x")).parent
                folder.joinpath(f"attempt-{cmd['attempt']}.error").write_text(
                    traceback.format_exc()
                )
            finally:
                os._exit(code)
        _, status = os.waitpid(pid, 0)
        reply = {
            "pid": pid,
            "signal": os.WTERMSIG(status) if os.WIFSIGNALED(status) else None,
            "code": os.WEXITSTATUS(status) if os.WIFEXITED(status) else None,
        }
        sys.stdout.write(json.dumps(reply) + "\n")
        sys.stdout.flush()


if __name__ == "__main__":
    if sys.argv[1:] != ["serve"]:
        sys.exit(__doc__)
    serve()
