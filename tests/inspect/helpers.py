"""Builders for the lineage tests (imported as ``tests.inspect.helpers``).

Tests import wfctl internals here on purpose: the verifier and the journal model are internal
until the CLI exposes them.
"""

from __future__ import annotations

import shutil
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from wfctl._errors import RunNotFoundError
from wfctl._records._checkpoint import Checkpoint, checkpoint_id_for
from wfctl._storage._protocol import RunJournal, RunSummary

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"


def copy_fixture(name: str, tmp_path: Path) -> Path:
    """Copy a golden store into ``tmp_path`` (for tests that change it) and return the copy."""
    target = tmp_path / name
    shutil.copytree(FIXTURES / name, target)
    return target


#: The least data a record of each kind needs to read as one (the others need none).
_LEAST_DATA: dict[str, dict[str, Any]] = {
    "root": {"signature": "s1", "workflow": "m:wf"},
    "step": {"steps": []},
}


def rec(
    run_id: str,
    seq: int,
    kind: str | None = None,
    *,
    parent: str | bool | None = True,
    workflow: str = "wf",
    data: dict[str, Any] | None = None,
    origin: tuple[str, str] | None = None,
) -> Checkpoint:
    """Build checkpoint ``seq`` of ``run_id``; its parent is the previous seq unless given.

    Without ``data``, a record holds the least its kind needs to read as one.
    """
    if kind is None:
        kind = "root" if seq == 0 else "step"
    if data is None:
        data = dict(_LEAST_DATA.get(kind, {}))
    return Checkpoint(
        run_id=run_id,
        seq=seq,
        kind=kind,
        workflow_name=workflow,
        timestamp=f"2026-01-01T00:00:{seq % 60:02d}+00:00",
        previous_checkpoint_id=(checkpoint_id_for(run_id, seq - 1) if seq else None)
        if parent is True
        else (parent or None),
        origin_run_id=origin[0] if origin else None,
        origin_checkpoint_id=origin[1] if origin else None,
        data=data,
    )


def chain(run_id: str, kinds: Sequence[str], **kwargs: Any) -> list[Checkpoint]:
    """Build a linear chain whose records have the given kinds (the first should be root)."""
    return [rec(run_id, seq, kind, **kwargs) for seq, kind in enumerate(kinds)]


class JournalStorage:
    """A fake storage serving hand-made journals: what a broken or foreign storage could hold.

    ``read_run`` returns the journal as given (problems and torn tail included); ``get_latest``
    returns the journal's last record unless ``heads`` says otherwise.
    """

    def __init__(self, *journals: RunJournal, heads: dict[str, Checkpoint | None] | None = None):
        self.journals = {j.run_id: j for j in journals}
        self.heads = heads or {}
        self.reads: list[str] = []

    @classmethod
    def of(cls, *runs: list[Checkpoint], **kwargs: Any) -> JournalStorage:
        """Build one from record lists (each run's id is its first record's)."""
        return cls(
            *(RunJournal(r[0].run_id, tuple(r), source=f"fake:{r[0].run_id}") for r in runs),
            **kwargs,
        )

    async def read_run(self, run_id: str) -> RunJournal:
        self.reads.append(run_id)
        if run_id not in self.journals:
            raise RunNotFoundError(run_id)
        return self.journals[run_id]

    async def get_latest(
        self, *, workflow_name: str | None = None, run_id: str | None = None
    ) -> Checkpoint | None:
        assert run_id is not None
        if run_id in self.heads:
            return self.heads[run_id]
        records = self.journals[run_id].checkpoints
        return records[-1] if records else None

    async def list_runs(self, *, workflow_name: str | None = None) -> list[RunSummary]:
        return [RunSummary(run_id, "wf", "completed", "", 0, "", "") for run_id in self.journals]
