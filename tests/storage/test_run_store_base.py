"""A third-party storage written on ``wfctl.storage.RunStoreBase`` passes the conformance suite.

The storage below is what a storage author writes: the base class's primitives (run ids, a
run's root and head, ``read_run``, ``is_leased``), ``save``, ``delete``, leases and pause
requests, over a plain dict shared by every view of the store (as a server would be). Records
are kept as JSON text with a CRC, so the corruption tests have bytes to damage. It imports only
the public namespaces.
"""

from __future__ import annotations

import json
import zlib
from dataclasses import dataclass, field

import pytest

from tests.storage.helpers import arun, ckpt
from wfctl import Checkpoint, CheckpointCorruptError, RunLockedError, RunNotFoundError
from wfctl.storage import (
    FileCheckpointStorage,
    InMemoryCheckpointStorage,
    JournalProblem,
    RunJournal,
    RunStore,
    RunStoreBase,
    check_append,
    split_checkpoint_id,
    validate_run_id,
)
from wfctl.storage.testing import StorageConformance


@dataclass
class _Shared:
    """What every view of one store sees: each run's records, its lease holders, its pauses."""

    runs: dict[str, list[tuple[int, str]]] = field(default_factory=dict)
    leased: set[str] = field(default_factory=set)
    pauses: set[str] = field(default_factory=set)


def _decode(run_id: str, seq: int, record: tuple[int, str]) -> Checkpoint:
    crc, text = record
    where = f"dict:{run_id}:{seq}"
    if zlib.crc32(text.encode()) != crc:
        raise CheckpointCorruptError(where, "checksum mismatch")
    return Checkpoint.from_dict(json.loads(text), where)


class _Lease:
    def __init__(self, shared: _Shared, run_id: str) -> None:
        self._shared, self._run_id, self._held = shared, run_id, True

    @property
    def run_id(self) -> str:
        return self._run_id

    def pause_requested(self) -> bool:
        return self._run_id in self._shared.pauses

    async def release(self) -> None:
        if self._held:
            self._held = False
            self._shared.leased.discard(self._run_id)


class DictStore(RunStoreBase):
    """A storage author's dict-backed store: the primitives, save, delete, leases, pauses."""

    def __init__(self, shared: _Shared) -> None:
        self.shared = shared

    @property
    def location(self) -> str:
        return "dict:"

    async def run_ids(self) -> list[str]:
        return list(self.shared.runs)

    async def load_root(self, run_id: str) -> Checkpoint | None:
        records = self.shared.runs.get(run_id)
        return _decode(run_id, 0, records[0]) if records else None

    async def load_head(self, run_id: str) -> Checkpoint | None:
        records = self.shared.runs.get(run_id)
        return _decode(run_id, len(records) - 1, records[-1]) if records else None

    async def read_run(self, run_id: str) -> RunJournal:
        records = self.shared.runs.get(validate_run_id(run_id))
        if not records:
            raise RunNotFoundError(run_id)
        checkpoints: list[Checkpoint] = []
        problems: list[JournalProblem] = []
        for seq, record in enumerate(records):
            try:
                checkpoints.append(_decode(run_id, seq, record))
            except CheckpointCorruptError as exc:
                problems.append(JournalProblem.from_error(exc))
        return RunJournal(run_id, tuple(checkpoints), tuple(problems), source=f"dict:{run_id}")

    async def is_leased(self, run_id: str) -> bool:
        return run_id in self.shared.leased

    async def save(self, checkpoint: Checkpoint) -> None:
        text = json.dumps(checkpoint.to_dict())  # first: data that is not JSON changes nothing
        run_id = validate_run_id(checkpoint.run_id)
        head = await self.load_head(run_id)
        head_seq, head_id = (-1, None) if head is None else (head.seq, head.checkpoint_id)
        check_append(checkpoint, head_seq, head_id, f"dict:{run_id}")
        self.shared.runs.setdefault(run_id, []).append((zlib.crc32(text.encode()), text))

    async def delete(self, checkpoint_id: str) -> bool:
        run_id, seq = split_checkpoint_id(checkpoint_id)
        records = self.shared.runs.get(run_id)
        if not records or seq >= len(records):
            return False
        if run_id in self.shared.leased:
            raise RunLockedError(run_id, "another holder")
        del records[seq:]
        if not records:
            del self.shared.runs[run_id]
            self.shared.pauses.discard(run_id)
        return True

    async def lease_run(self, run_id: str) -> _Lease:
        if validate_run_id(run_id) in self.shared.leased:
            raise RunLockedError(run_id, "another holder")
        self.shared.leased.add(run_id)
        return _Lease(self.shared, run_id)

    async def request_pause(self, run_id: str) -> None:
        if not self.shared.runs.get(validate_run_id(run_id)):
            raise RunNotFoundError(run_id)
        self.shared.pauses.add(run_id)

    async def clear_pause(self, run_id: str) -> None:
        self.shared.pauses.discard(run_id)


class TestDictStore(StorageConformance):
    """The whole suite, a second view on the same dict included, and corruption by bytes."""

    def make_storage(self) -> RunStore:
        return DictStore(_Shared())

    def make_second_view(self, storage: RunStore) -> RunStore | None:
        assert isinstance(storage, DictStore)
        return DictStore(storage.shared)

    async def corrupt_record(self, storage: RunStore, run_id: str, seq: int) -> None:
        assert isinstance(storage, DictStore)
        records = storage.shared.runs[run_id]
        crc, text = records[seq]
        records[seq] = (crc, text.replace('"kind":', '"kind": ', 1))  # valid JSON, wrong CRC


def test_a_store_missing_a_primitive_cannot_be_made() -> None:
    class NoHead(DictStore):
        load_head = RunStoreBase.load_head  # what an author who forgot it would inherit

    with pytest.raises(TypeError, match="load_head"):
        NoHead(_Shared())


def test_the_shipped_stores_are_subclasses() -> None:
    assert issubclass(FileCheckpointStorage, RunStoreBase)
    assert issubclass(InMemoryCheckpointStorage, RunStoreBase)


def test_a_worker_claims_a_queued_run_of_the_dict_store() -> None:
    store = DictStore(_Shared())

    async def scenario() -> None:
        for minute, run_id in enumerate(("old", "new")):
            await store.save(ckpt(run_id, 0, minute=minute))
            await store.save(ckpt(run_id, 1, minute=minute))
        await store.save(ckpt("old", 2, "completed"))
        lease = await store.claim_run()
        assert lease is not None and lease.run_id == "new"  # "old" ended
        assert [(r.run_id, r.status) for r in await store.list_runs()] == [
            ("old", "completed"),
            ("new", "running"),
        ]
        assert await store.claim_run() is None
        await lease.release()

    arun(scenario())
