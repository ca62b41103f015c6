"""What every harness checks about a store after the fact, read back with the real file system.

Each check reads through a *fresh* :class:`~wfctl.FileCheckpointStorage` (no cached head, the
default OS seam), so it sees exactly what a new process would see.
"""

from __future__ import annotations

import asyncio
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tests.conftest import assert_one_chain
from wfctl import Checkpoint, FileCheckpointStorage, RunNotFoundError
from wfctl._inspect._lineage import verify_lineage
from wfctl._records._codec import decode
from wfctl._storage._protocol import RunJournal


@dataclass(frozen=True)
class StoreState:
    """One run as a fresh reader sees it."""

    journal: RunJournal | None
    #: label -> how many step records commit it (must never exceed 1).
    committed: Counter[str]
    #: label -> the value its committed record holds.
    values: dict[str, int]
    #: the keys of every committed step record.
    keys: frozenset[str] = frozenset()

    @property
    def head(self) -> Checkpoint | None:
        if self.journal is None or not self.journal.checkpoints:
            return None
        return self.journal.checkpoints[-1]


def read_state(store: Path, run_id: str) -> StoreState:
    """Read a run's journal and the step labels it commits; assert it is sound.

    Sound: no record anywhere fails verification (only a torn tail is allowed), and the
    records form one linear chain from one root.
    """
    storage = FileCheckpointStorage(store)
    try:
        journal = asyncio.run(storage.read_run(run_id))
    except RunNotFoundError:
        return StoreState(None, Counter(), {})
    assert journal.problems == (), f"{run_id}: {journal.problems}"
    committed: Counter[str] = Counter()
    values: dict[str, int] = {}
    keys: set[str] = set()
    if journal.checkpoints:
        assert_one_chain(list(journal.checkpoints))
        chain = asyncio.run(storage.load_chain(run_id))
        assert [c.checkpoint_id for c in chain] == [c.checkpoint_id for c in journal.checkpoints]
    for checkpoint in journal.checkpoints:
        if checkpoint.kind != "step":
            continue
        for record in checkpoint.data["steps"]:
            result = decode(record["result"])
            keys.add(record["key"])
            if not isinstance(result, dict):  # retell's text: no ledgered work
                continue
            committed[result["label"]] += 1
            values[result["label"]] = result["value"]
    return StoreState(journal, committed, values, frozenset(keys))


def completed_output(state: StoreState) -> Any:
    """The output a completed run recorded (its return value), decoded."""
    head = state.head
    assert head is not None and head.kind == "completed", head
    return decode(head.data["result"])


def assert_lineage_ok(store: Path, run_ids: list[str]) -> None:
    """Run lineage verification over ``run_ids``; every run must pass."""
    report = asyncio.run(verify_lineage(FileCheckpointStorage(store), run_ids))
    bad = [(v.run_id, v.problems) for v in report.runs if not v.ok]
    assert report.ok and len(report.runs) == len(run_ids), bad
