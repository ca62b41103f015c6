"""The engine's view of any storage: ours, a user's protocol-only one, or a delegating wrapper."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.storage.helpers import arun, build_run, ckpt
from wfctl._errors import CheckpointCorruptError, RunLockedError, RunNotFoundError, WfctlError
from wfctl._records._checkpoint import Checkpoint
from wfctl._storage import (
    CheckpointStorage,
    FileCheckpointStorage,
    InMemoryCheckpointStorage,
    RunJournal,
)
from wfctl._storage import _capabilities as caps


class ProtocolOnly:
    """A user's storage with exactly the protocol's seven methods (backed by a memory one)."""

    def __init__(self) -> None:
        self._inner = InMemoryCheckpointStorage()

    async def save(self, checkpoint: Checkpoint) -> None:
        await self._inner.save(checkpoint)

    async def load(self, checkpoint_id: str) -> Checkpoint:
        return await self._inner.load(checkpoint_id)

    async def delete(self, checkpoint_id: str) -> bool:
        return await self._inner.delete(checkpoint_id)

    async def list_checkpoints(
        self, *, workflow_name: str | None = None, run_id: str | None = None
    ) -> list[Checkpoint]:
        return await self._inner.list_checkpoints(workflow_name=workflow_name, run_id=run_id)

    async def list_checkpoint_ids(
        self, *, workflow_name: str | None = None, run_id: str | None = None
    ) -> list[str]:
        return await self._inner.list_checkpoint_ids(workflow_name=workflow_name, run_id=run_id)

    async def get_latest(
        self, *, workflow_name: str | None = None, run_id: str | None = None
    ) -> Checkpoint | None:
        return await self._inner.get_latest(workflow_name=workflow_name, run_id=run_id)

    async def list_runs(self, *, workflow_name: str | None = None) -> list[Any]:
        return await self._inner.list_runs(workflow_name=workflow_name)


class Forking(ProtocolOnly):
    """A broken custom storage that hands back two checkpoints at the same seq."""

    async def list_checkpoints(
        self, *, workflow_name: str | None = None, run_id: str | None = None
    ) -> list[Checkpoint]:
        chain = await super().list_checkpoints(workflow_name=workflow_name, run_id=run_id)
        return [*chain, ckpt("r1", len(chain) - 1, data={"fork": True})]


class Delegating:
    """A wrapper that observes saves and delegates everything else through ``__getattr__``."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.saved: list[str] = []

    async def save(self, checkpoint: Checkpoint) -> None:
        await self.inner.save(checkpoint)
        self.saved.append(checkpoint.checkpoint_id)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


def test_a_protocol_only_storage_gets_fallbacks() -> None:
    storage = ProtocolOnly()
    assert isinstance(storage, CheckpointStorage)
    saved = arun(build_run(storage, "r1", 3))
    journal = arun(caps.read_run(storage, "r1"))
    assert isinstance(journal, RunJournal)
    assert list(journal.checkpoints) == saved
    assert journal.problems == ()
    assert arun(caps.load_chain(storage, "r1")) == saved
    with pytest.raises(RunNotFoundError):
        arun(caps.load_chain(storage, "nope"))
    lease = arun(caps.lease_run(storage, "r1"))
    with pytest.raises(RunLockedError):
        arun(caps.lease_run(storage, "r1"))
    arun(arun(caps.lease_run(ProtocolOnly(), "r1")).release())  # another storage, namespace
    assert lease.pause_requested() is False
    arun(lease.release())
    arun(arun(caps.lease_run(storage, "r1")).release())
    arun(caps.clear_pause(storage, "r1"))
    with pytest.raises(WfctlError, match="does not support pause"):
        arun(caps.request_pause(storage, "r1"))


def test_a_custom_storage_cannot_hand_back_a_fork() -> None:
    storage = Forking()
    arun(build_run(storage, "r1", 3))
    with pytest.raises(CheckpointCorruptError, match="seq 2"):
        arun(caps.load_chain(storage, "r1"))


def test_a_delegating_wrapper_reaches_the_file_storage(tmp_path: Path) -> None:
    inner = FileCheckpointStorage(tmp_path / "store")
    wrapper = Delegating(inner)
    arun(build_run(wrapper, "r1", 3))
    assert wrapper.saved == ["r1.0", "r1.1", "r1.2"]
    inner.close()
    with (inner.root / "runs" / "r1" / "journal.jsonl").open("ab") as f:
        f.write(b'{"v":1,"id"')
    journal = arun(caps.read_run(wrapper, "r1"))
    assert journal.torn_tail == 11  # only the file storage can see this
    assert [c.seq for c in arun(caps.load_chain(wrapper, "r1"))] == [0, 1, 2]
    lease = arun(caps.lease_run(wrapper, "r1"))  # the OS lock, not a process-local one
    with pytest.raises(RunLockedError):
        inner.lock_run("r1")
    arun(caps.request_pause(wrapper, "r1"))
    assert lease.pause_requested() is True
    arun(caps.clear_pause(wrapper, "r1"))
    assert lease.pause_requested() is False
    arun(lease.release())
    inner.close()


def test_a_synchronous_read_run_is_accepted() -> None:
    class SyncReader(ProtocolOnly):
        def read_run(self, run_id: str) -> RunJournal:
            return RunJournal(run_id, (ckpt(run_id, 0),), source="sync")

    assert [c.seq for c in arun(caps.load_chain(SyncReader(), "r1"))] == [0]


def test_the_memory_storage_keeps_its_own_copy() -> None:
    storage = InMemoryCheckpointStorage()
    data: dict[str, Any] = {"items": [1]}
    arun(storage.save(ckpt("r1", 0, data=data)))
    data["items"].append(2)
    assert arun(storage.load("r1.0")).data == {"items": [1]}
    with pytest.raises(TypeError):
        arun(storage.save(ckpt("r1", 1, data={"bad": object()})))
    assert arun(storage.list_checkpoint_ids()) == ["r1.0"]


def test_a_problem_is_raised_with_its_own_where_and_reason() -> None:
    """A problem is a record: nothing parses ``where: reason`` back, so a ``where`` that holds
    ``": "`` (a store under such a directory) stays whole, and an empty one names the run."""
    from wfctl._storage._base import strict_chain
    from wfctl._storage._protocol import JournalProblem, RunJournal

    marker = "/data: old/store/runs/r1/end.json"
    journal = RunJournal("r1", (ckpt("r1", 0),), (JournalProblem(marker, "end marker bad"),))
    with pytest.raises(CheckpointCorruptError) as caught:
        strict_chain(journal)
    assert (caught.value.where, caught.value.reason) == (marker, "end marker bad")
    unplaced = RunJournal("r1", (), (JournalProblem("", "cannot read: denied"),), source="s")
    with pytest.raises(CheckpointCorruptError) as caught:
        strict_chain(unplaced)
    assert (caught.value.where, caught.value.reason) == ("s", "cannot read: denied")
    assert str(JournalProblem("", "cannot read: denied")) == "cannot read: denied"
