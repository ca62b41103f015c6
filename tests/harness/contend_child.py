"""A child process for the contention harness: contend for runs of one store at a signal.

Usage (from the repository root): ``python -m tests.harness.contend_child MODE STORE ...``

MODE:
  resume-hold STORE RUN_ID DIR   wait for DIR/go; resume RUN_ID from its head, answering
                                 ``approve``; step g0 writes DIR/holding-<pid>, then waits
                                 for DIR/release
  start-hold STORE RUN_ID DIR    wait for DIR/go; start run RUN_ID; step s0 holds as above
  many STORE COUNT DIR           wait for DIR/go; start COUNT runs one after another

Prints one JSON line: ``{"pid", "results": [{"run_id", "status", "outputs"}]}``, or, on a
wfctl error, ``{"pid", "error": <class>, "message": <str>}`` and exits 2.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

from tests.harness import harness_workload as W
from wfctl import FileCheckpointStorage, WfctlError


def wait_for(path: Path, deadline: float = 60.0) -> None:
    """Poll for a file another process creates (cross-process signal, bounded)."""
    end = time.monotonic() + deadline
    while not path.exists():
        if time.monotonic() > end:
            raise SystemExit(f"{path} never appeared")
        time.sleep(0.002)


async def main(mode: str, store: Path, arg: str, signals: Path) -> list[dict[str, Any]]:
    storage = FileCheckpointStorage(store)
    wf = W.pipeline.build(checkpoint_storage=storage)
    W.HOOKS.ledger = W.file_ledger(signals / f"ledger-{os.getpid()}.txt", str(os.getpid()))
    wait_for(signals / "go")
    if mode == "resume-hold":
        W.HOOKS.after_ledger = W.hold_at("g0", signals)
        head = await storage.get_latest(run_id=arg)
        assert head is not None
        results = [await wf.run(checkpoint_id=head.checkpoint_id, responses={"approve": "yes"})]
    elif mode == "start-hold":
        W.HOOKS.after_ledger = W.hold_at("s0", signals)
        results = [await wf.run(W.spec_for(7, seq=2, pause=False), run_id=arg)]
    else:
        results = [
            await wf.run(W.spec_for(os.getpid() + i, seq=3, pause=False)) for i in range(int(arg))
        ]
    return [{"run_id": r.run_id, "status": r.status, "outputs": r.get_outputs()} for r in results]


if __name__ == "__main__":
    mode, store_arg, arg, signals_arg = sys.argv[1:5]
    try:
        done = asyncio.run(main(mode, Path(store_arg), arg, Path(signals_arg)))
    except WfctlError as exc:
        print(json.dumps({"pid": os.getpid(), "error": type(exc).__name__, "message": str(exc)}))
        sys.exit(2)
    print(json.dumps({"pid": os.getpid(), "results": done}))
