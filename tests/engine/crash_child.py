"""A child process for crash and lock tests: a ledgered workflow that can die on cue.

Usage: python crash_child.py STORE RUN_ID MODE N K

MODE:
  run-block     start run RUN_ID; step K appends to the ledger, writes STORE/ready, then blocks
                (the parent SIGKILLs it there: mid-step, result not committed)
  run-torn      start run RUN_ID; the commit of step K writes half its record, then SIGKILLs
                itself (a torn tail, mid-commit)
  run-gate      start run RUN_ID; step K writes STORE/ready, then waits for STORE/gate to exist
  resume        continue run RUN_ID from its head; prints the outputs as JSON

The storage commits with the durability mode named by $CRASH_CHILD_DURABILITY (default full).
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sys
import time
from pathlib import Path
from typing import Any

from wfctl import Checkpoint, Durability, FileCheckpointStorage, step, workflow
from wfctl._storage._journal import encode_record  # internal: to write a torn record on purpose

STORE, RUN_ID, MODE = Path(sys.argv[1]), sys.argv[2], sys.argv[3]
N, K = int(sys.argv[4]), int(sys.argv[5])
LEDGER = STORE / "ledger.txt"


def ledger(entry: str) -> None:
    with open(LEDGER, "a") as f:
        f.write(entry + "\n")
        f.flush()
        os.fsync(f.fileno())


@step
async def work(i: int) -> str:
    ledger(f"work:{i}")
    if i == K and MODE == "run-block":
        (STORE / "ready").write_text("ready")
        while True:
            time.sleep(1)  # noqa: ASYNC251  # block the whole process: the parent kills it here
    if i == K and MODE == "run-gate":
        (STORE / "ready").write_text("ready")
        while not (STORE / "gate").exists():  # noqa: ASYNC110  # a file another process writes
            await asyncio.sleep(0.01)  # the gate is a file another process writes
    return f"done:{i}"


@workflow(name="ledgered")
async def ledgered(n: int) -> list[str]:
    return [await work(i) for i in range(n)]


class TearingStorage(FileCheckpointStorage):
    """Writes half of the record that commits step K, then dies."""

    async def save(self, checkpoint: Checkpoint) -> None:
        steps = checkpoint.data.get("steps", [])
        if MODE == "run-torn" and any(s["key"] == f"work#{K}" for s in steps):
            record = encode_record(checkpoint)
            journal = self.root / "runs" / checkpoint.run_id / "journal.jsonl"
            with open(journal, "ab") as f:  # noqa: ASYNC230  # about to die anyway
                f.write(record[: len(record) // 2])
                f.flush()
                os.fsync(f.fileno())
            os.kill(os.getpid(), signal.SIGKILL)
        await super().save(checkpoint)


async def main() -> Any:
    mode = os.environ.get("CRASH_CHILD_DURABILITY", "full")
    storage = TearingStorage(STORE, durability=Durability(mode))  # type: ignore[arg-type]
    wf = ledgered.build(checkpoint_storage=storage)
    if MODE == "resume":
        head = await storage.get_latest(run_id=RUN_ID)
        assert head is not None
        result = await wf.run(checkpoint_id=head.checkpoint_id)
    else:
        result = await wf.run(N, run_id=RUN_ID)
    print(json.dumps({"status": result.status, "outputs": result.get_outputs()}))


asyncio.run(main())
