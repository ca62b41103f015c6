"""What every storage guarantees (SPEC §4): one linear chain per run, refusals, queries."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from tests.storage.helpers import arun, build_run, ckpt, pause_data
from wfctl import _storage
from wfctl._errors import (
    CheckpointCorruptError,
    CheckpointNotFoundError,
    InvalidIdError,
    RunLockedError,
    RunNotFoundError,
)
from wfctl._records._checkpoint import Checkpoint, split_checkpoint_id
from wfctl._storage import CheckpointStorage


def test_exports_are_complete() -> None:
    assert sorted(_storage.__all__) == [
        "CheckpointStorage",
        "FileCheckpointStorage",
        "InMemoryCheckpointStorage",
        "JournalProblem",
        "RunJournal",
        "RunLock",
        "RunStatus",
        "RunSummary",
        "open_store",
    ]
    for name in _storage.__all__:
        assert getattr(_storage, name) is not None


def test_storages_follow_the_protocol(any_storage: Any) -> None:
    assert isinstance(any_storage, CheckpointStorage)


def test_save_load_round_trip(any_storage: Any) -> None:
    data = {"text": "héllo ✓ \u2028", "nested": {"list": [1, 2.5, None, True]}, "n": -3}

    async def scenario() -> None:
        root = ckpt("r1", 0, origin=("src", "src.4"))
        step = ckpt("r1", 1, data=data, origin=("src", "src.4"))
        await any_storage.save(root)
        await any_storage.save(step)
        assert await any_storage.load("r1.0") == root
        loaded = await any_storage.load("r1.1")
        assert loaded == step
        assert loaded.checkpoint_id == "r1.1"
        assert loaded.previous_checkpoint_id == "r1.0"
        assert (loaded.origin_run_id, loaded.origin_checkpoint_id) == ("src", "src.4")

    arun(scenario())


def test_missing_checkpoints_are_not_found(any_storage: Any) -> None:
    async def scenario() -> None:
        await build_run(any_storage, "r1", 2)
        with pytest.raises(CheckpointNotFoundError):
            await any_storage.load("r1.2")
        with pytest.raises(CheckpointNotFoundError):
            await any_storage.load("nope.0")
        assert await any_storage.get_latest(run_id="nope") is None
        assert await any_storage.list_checkpoints(run_id="nope") == []
        with pytest.raises(RunNotFoundError):
            await any_storage.read_run("nope")

    arun(scenario())


def test_runs_are_listed_in_chain_order_oldest_run_first(any_storage: Any) -> None:
    async def scenario() -> None:
        await build_run(any_storage, "newer", 3, minute=5)
        await build_run(any_storage, "older", 4, minute=1)
        assert await any_storage.list_checkpoint_ids() == [
            *(f"older.{i}" for i in range(4)),
            *(f"newer.{i}" for i in range(3)),
        ]
        chain = await any_storage.list_checkpoints(run_id="older")
        assert [c.seq for c in chain] == [0, 1, 2, 3]
        assert [c.previous_checkpoint_id for c in chain] == [None, "older.0", "older.1", "older.2"]
        assert await any_storage.load_chain("older") == chain

    arun(scenario())


@pytest.mark.parametrize(
    ("bad", "fragment"),
    [
        (ckpt("r1", 4), "seq 4"),  # a gap
        (ckpt("r1", 2, data={"other": True}), "seq 2"),  # a second writer at the same position
        (ckpt("r1", 3, parent="r1.1"), "seq 3"),
        (ckpt("r1", 0), "already exists"),  # a second root
        (ckpt("r1", 3, parent=None), "seq 3"),
        (ckpt("r1", 3, kind="root"), "only root"),
    ],
    ids=["gap", "same-position", "wrong-parent", "second-root", "orphan", "root-kind"],
)
def test_a_save_that_would_fork_the_chain_is_refused(
    any_storage: Any, bad: Any, fragment: str
) -> None:
    async def scenario() -> None:
        await build_run(any_storage, "r1", 3)
        with pytest.raises(CheckpointCorruptError) as info:
            await any_storage.save(bad)
        message = str(info.value)
        assert "'r1'" in message
        assert fragment in message
        assert await any_storage.list_checkpoint_ids(run_id="r1") == ["r1.0", "r1.1", "r1.2"]
        await any_storage.save(ckpt("r1", 3))  # the right next link still commits
        assert len(await any_storage.load_chain("r1")) == 4

    arun(scenario())


def test_refusal_names_the_run_and_both_seqs(any_storage: Any) -> None:
    async def scenario() -> None:
        await build_run(any_storage, "r1", 5)
        with pytest.raises(CheckpointCorruptError) as info:
            await any_storage.save(ckpt("r1", 2, data={"late": 1}))
        assert "'r1'" in str(info.value)
        assert "seq 2" in str(info.value)
        assert "seq 4" in str(info.value)

    arun(scenario())


def test_first_save_must_be_a_root_at_seq_zero(any_storage: Any) -> None:
    async def scenario() -> None:
        with pytest.raises(CheckpointCorruptError):
            await any_storage.save(ckpt("r1", 1))
        with pytest.raises(CheckpointCorruptError):
            await any_storage.save(ckpt("r1", 0, kind="step"))
        assert await any_storage.list_runs() == []

    arun(scenario())


def test_two_writers_racing_for_one_position_cannot_both_commit(any_storage: Any) -> None:
    """Report 004's shape: both read head 1, both try to write seq 2; one must lose."""

    async def scenario() -> None:
        await build_run(any_storage, "r1", 2)
        results: list[BaseException | None] = []
        for data in ({"writer": "a"}, {"writer": "b"}):
            try:
                await any_storage.save(ckpt("r1", 2, data=data))
                results.append(None)
            except CheckpointCorruptError as exc:
                results.append(exc)
        assert results[0] is None
        assert isinstance(results[1], CheckpointCorruptError)
        chain = await any_storage.load_chain("r1")
        assert [c.data for c in chain][-1] == {"writer": "a"}

    arun(scenario())


def test_get_latest_per_run_and_per_workflow(any_storage: Any) -> None:
    async def scenario() -> None:
        await build_run(any_storage, "a1", 3, workflow="alpha", minute=1)
        await build_run(any_storage, "b1", 2, workflow="beta", minute=2)
        await build_run(any_storage, "a2", 4, workflow="alpha", minute=3)
        latest = await any_storage.get_latest(run_id="a1")
        assert latest is not None
        assert latest.checkpoint_id == "a1.2"
        alpha = await any_storage.get_latest(workflow_name="alpha")
        assert alpha is not None
        assert alpha.checkpoint_id == "a2.3"
        beta = await any_storage.get_latest(workflow_name="beta")
        assert beta is not None
        assert beta.checkpoint_id == "b1.1"
        newest = await any_storage.get_latest()
        assert newest is not None
        assert newest.checkpoint_id == "a2.3"
        assert await any_storage.get_latest(workflow_name="gamma") is None
        assert await any_storage.get_latest(run_id="a1", workflow_name="beta") is None
        ids = await any_storage.list_checkpoint_ids(workflow_name="beta")
        assert ids == ["b1.0", "b1.1"]

    arun(scenario())


def test_list_runs_statuses(any_storage: Any) -> None:
    async def scenario() -> None:
        await build_run(
            any_storage,
            "paused",
            3,
            minute=1,
            last_kind="pause",
            last_data=pause_data("/request#0", "/1/request#0"),
        )
        await build_run(any_storage, "done", 3, minute=2, last_kind="completed")
        await build_run(any_storage, "broke", 2, minute=3, last_kind="failed")
        await build_run(any_storage, "crashed", 2, minute=4)
        await build_run(any_storage, "live", 2, minute=5, workflow="other")
        lock = any_storage.lock_run("live")
        try:
            runs = await any_storage.list_runs()
        finally:
            lock.release()
        assert [r.run_id for r in runs] == ["paused", "done", "broke", "crashed", "live"]
        by_id = {r.run_id: r for r in runs}
        assert by_id["paused"].status == "paused"
        assert by_id["paused"].pending == ("/request#0", "/1/request#0")
        assert by_id["done"].status == "completed"
        assert by_id["done"].pending == ()
        assert by_id["broke"].status == "failed"
        assert by_id["crashed"].status == "interrupted"
        assert by_id["live"].status == "running"
        assert by_id["done"].head_checkpoint_id == "done.2"
        assert by_id["done"].head_seq == 2
        assert by_id["done"].created < by_id["done"].updated
        assert by_id["done"].problem is None
        after = {r.run_id: r.status for r in await any_storage.list_runs()}
        assert after["live"] == "interrupted"  # the lock went with the holder
        assert [r.run_id for r in await any_storage.list_runs(workflow_name="other")] == ["live"]

    arun(scenario())


def test_summary_carries_the_origin(any_storage: Any) -> None:
    async def scenario() -> None:
        await any_storage.save(ckpt("copy", 0, origin=("src", "src.3")))
        [summary] = await any_storage.list_runs()
        assert (summary.origin_run_id, summary.origin_checkpoint_id) == ("src", "src.3")

    arun(scenario())


def test_delete_cuts_the_chain(any_storage: Any) -> None:
    async def scenario() -> None:
        await build_run(any_storage, "r1", 5)
        assert await any_storage.delete("r1.2") is True
        assert await any_storage.list_checkpoint_ids(run_id="r1") == ["r1.0", "r1.1"]
        head = await any_storage.get_latest(run_id="r1")
        assert head is not None
        assert head.seq == 1
        await any_storage.save(ckpt("r1", 2, data={"again": True}))  # the chain goes on
        assert [c.seq for c in await any_storage.load_chain("r1")] == [0, 1, 2]
        assert await any_storage.delete("r1.7") is False
        assert await any_storage.delete("nope.1") is False
        assert await any_storage.delete("r1.0") is True
        assert await any_storage.list_runs() == []
        assert await any_storage.list_checkpoints() == []
        await any_storage.save(ckpt("r1", 0))  # the id is free again
        assert await any_storage.delete_run("r1") is True
        assert await any_storage.delete_run("r1") is False

    arun(scenario())


def test_delete_refuses_a_locked_run(any_storage: Any) -> None:
    async def scenario() -> None:
        await build_run(any_storage, "r1", 3)
        lock = any_storage.lock_run("r1")
        try:
            with pytest.raises(RunLockedError):
                await any_storage.delete("r1.1")
            with pytest.raises(RunLockedError):
                await any_storage.delete_run("r1")
        finally:
            lock.release()
        assert len(await any_storage.load_chain("r1")) == 3

    arun(scenario())


BAD_RUN_IDS = ["../x", "a/b", "a\x00b", "", ".", "..", "a\\b", "a.b", " x", "x" * 101]


@pytest.mark.parametrize("bad", BAD_RUN_IDS)
def test_invalid_ids_are_refused_before_touching_files(any_storage: Any, bad: str) -> None:
    async def scenario() -> None:
        with pytest.raises(InvalidIdError):
            await any_storage.save(dataclasses.replace(ckpt("ok", 0), run_id=bad))
        with pytest.raises(InvalidIdError):
            await any_storage.load(f"{bad}.0")
        with pytest.raises(InvalidIdError):
            await any_storage.delete(f"{bad}.0")
        with pytest.raises(InvalidIdError):
            await any_storage.get_latest(run_id=bad)
        with pytest.raises(InvalidIdError):
            await any_storage.list_checkpoints(run_id=bad)
        with pytest.raises(InvalidIdError):
            await any_storage.read_run(bad)
        with pytest.raises(InvalidIdError):
            any_storage.lock_run(bad)
        with pytest.raises(InvalidIdError):
            await any_storage.delete_run(bad)

    arun(scenario())
    root = getattr(any_storage, "root", None)
    if root is not None:
        assert not root.exists()


@pytest.mark.parametrize("bad", ["r1", "r1.", "r1.x", "r1.-1", "../r1.0", "r1/.0", "r1.0/..", 7])
def test_malformed_checkpoint_ids_are_invalid(any_storage: Any, bad: Any) -> None:
    with pytest.raises(InvalidIdError):
        arun(any_storage.load(bad))


def test_a_seq_with_a_leading_zero_names_no_checkpoint(any_storage: Any) -> None:
    async def scenario() -> None:
        await build_run(any_storage, "r1", 2)
        assert (await any_storage.load("r1.1")).checkpoint_id == "r1.1"
        for bad in ("r1.01", "r1.00", "r1.0001"):
            with pytest.raises(InvalidIdError) as info:
                await any_storage.load(bad)
            assert info.value.value == bad
        with pytest.raises(InvalidIdError, match=r"leading zeros \(r1\.1\)"):
            await any_storage.delete("r1.01")
        assert [c.seq for c in await any_storage.list_checkpoints(run_id="r1")] == [0, 1]

    arun(scenario())
    assert split_checkpoint_id("r1.0") == ("r1", 0)
    assert split_checkpoint_id("r1.10") == ("r1", 10)


def test_a_record_whose_id_has_a_leading_zero_is_corrupt() -> None:
    record = {**ckpt("r1", 1).to_dict(), "id": "r1.01"}
    with pytest.raises(CheckpointCorruptError, match="invalid id"):
        Checkpoint.from_dict(record, "journal.jsonl:2")


def test_second_lock_in_process_is_refused(any_storage: Any) -> None:
    lock = any_storage.lock_run("r1")
    with pytest.raises(RunLockedError) as info:
        any_storage.lock_run("r1")
    assert info.value.run_id == "r1"
    assert "this process" in info.value.holder
    other = any_storage.lock_run("r2")  # other runs are independent
    other.release()
    lock.release()
    lock.release()  # idempotent
    any_storage.lock_run("r1").release()


def test_pause_requests(any_storage: Any) -> None:
    with pytest.raises(RunNotFoundError):
        arun(any_storage.request_pause("r1"))
    arun(build_run(any_storage, "r1", 2))
    lease = arun(any_storage.lease_run("r1"))
    assert lease.pause_requested() is False
    arun(any_storage.request_pause("r1"))
    assert lease.pause_requested() is True
    arun(any_storage.clear_pause("r1"))
    arun(any_storage.clear_pause("r1"))
    assert lease.pause_requested() is False
    arun(lease.release())
