"""Fresh run ids: 32 random bits, and one that is taken already is replaced, not refused.

A run started without a run id never fails because of an id it did not choose: the fresh id
is replaced when a run holds it or another process is admitting one under it. A run id the
caller gave is refused when it is taken, by a restore into a new run too.

The id generator is replaced (``wfctl._engine._admission.new_run_id``, an internal) to make the
collision happen; the lease is held with the engine's own helper (``lease_run``).
"""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import arun
from wfctl import CheckpointStorage, FileCheckpointStorage, RunStateError, step, workflow
from wfctl._engine._admission import submit_run
from wfctl._ids import new_run_id
from wfctl._storage._capabilities import lease_run


@step
async def bump(x: int) -> int:
    return x + 1


@workflow(name="ids")
async def ids_wf(x: int) -> int:
    return await bump(await bump(x))


def test_a_fresh_id_is_its_second_then_32_random_bits() -> None:
    made = {new_run_id() for _ in range(100)}
    assert len(made) == 100
    assert all(re.fullmatch(r"\d{8}-\d{6}-[0-9a-f]{8}", run_id) for run_id in made)


def _ids(monkeypatch: pytest.MonkeyPatch, *given: str) -> Iterator[str]:
    """Make the engine's fresh ids ``given``, in order; return what is left of them."""
    left = iter(given)
    monkeypatch.setattr("wfctl._engine._admission.new_run_id", lambda: next(left))
    return left


async def _start(storage: CheckpointStorage) -> str:
    return (await ids_wf.build(checkpoint_storage=storage).run(1)).run_id


async def _submit(storage: CheckpointStorage) -> str:
    bound = ids_wf.build(checkpoint_storage=storage)
    return (await submit_run(bound, 1, None)).run_id


async def _restore(storage: CheckpointStorage) -> str:
    bound = ids_wf.build(checkpoint_storage=storage)
    return (await bound.run(checkpoint_id="origin.1", new_run=True)).run_id


ADMISSIONS: dict[str, Callable[[CheckpointStorage], Awaitable[str]]] = {
    "start": _start,
    "submit": _submit,
    "restore": _restore,
}


async def _heads(storage: CheckpointStorage) -> dict[str, Any]:
    return {
        run_id: (await storage.get_latest(run_id=run_id)).checkpoint_id  # type: ignore[union-attr]
        for run_id in ("origin", "taken")
    }


async def taken_fresh_id_is_replaced(
    storage: CheckpointStorage, monkeypatch: pytest.MonkeyPatch, admit: str
) -> None:
    """The shared body of the taken-id test (the PostgreSQL suite runs it too)."""
    bound = ids_wf.build(checkpoint_storage=storage)
    await bound.run(1, run_id="origin")
    await bound.run(2, run_id="taken")
    before = await _heads(storage)
    left = _ids(monkeypatch, "taken", "fresh", "unused")
    assert await ADMISSIONS[admit](storage) == "fresh"
    assert next(left) == "unused"  # one replacement, no more
    assert await _heads(storage) == before  # the run holding the id is untouched
    assert (await storage.get_latest(run_id="fresh")) is not None


async def held_fresh_id_is_replaced(
    storage: CheckpointStorage, monkeypatch: pytest.MonkeyPatch, admit: str
) -> None:
    """The shared body of the held-id test: another admission holds the id's lease."""
    await ids_wf.build(checkpoint_storage=storage).run(1, run_id="origin")
    held = await lease_run(storage, "busy")
    try:
        _ids(monkeypatch, "busy", "fresh")
        assert await ADMISSIONS[admit](storage) == "fresh"
        assert await storage.get_latest(run_id="busy") is None  # nothing written under it
    finally:
        await held.release()


@pytest.mark.parametrize("admit", list(ADMISSIONS))
def test_a_fresh_id_a_run_holds_is_replaced(
    storage: CheckpointStorage, monkeypatch: pytest.MonkeyPatch, admit: str
) -> None:
    arun(taken_fresh_id_is_replaced(storage, monkeypatch, admit))


@pytest.mark.parametrize("admit", list(ADMISSIONS))
def test_a_fresh_id_whose_lease_is_held_is_replaced(
    storage: CheckpointStorage, monkeypatch: pytest.MonkeyPatch, admit: str
) -> None:
    arun(held_fresh_id_is_replaced(storage, monkeypatch, admit))


def test_a_given_id_that_exists_is_refused_by_a_restore_into_a_new_run(
    storage: CheckpointStorage,
) -> None:
    async def main() -> None:
        bound = ids_wf.build(checkpoint_storage=storage)
        await bound.run(1, run_id="origin")
        await bound.run(2, run_id="taken")
        before = await _heads(storage)
        with pytest.raises(RunStateError, match="'taken': exists already"):
            await bound.run(checkpoint_id="origin.1", run_id="taken", new_run=True)
        assert await _heads(storage) == before

    arun(main())


def test_a_fresh_id_a_corrupt_run_holds_is_replaced(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A run whose records do not verify still holds its id: a fresh id is replaced, the
    corrupt run left as it was (``wfctl runs`` and ``verify-lineage`` name its problem)."""
    storage = FileCheckpointStorage(tmp_path / "store")
    arun(ids_wf.build(checkpoint_storage=storage).run(2, run_id="taken"))
    journal = tmp_path / "store" / "runs" / "taken" / "journal.jsonl"
    damaged = journal.read_bytes().replace(b'"result":4', b'"result":5')
    journal.write_bytes(damaged)
    _ids(monkeypatch, "taken", "fresh")

    assert arun(_start(storage)) == "fresh"
    assert journal.read_bytes() == damaged
