"""The conformance suite: every duty of :class:`~._protocol.RunStore`, as pytest tests.

A storage author subclasses :class:`StorageConformance` in a test module and says how to make
an empty store::

    from wfctl.storage.testing import StorageConformance

    class TestMyStore(StorageConformance):
        def make_storage(self) -> RunStore:
            return MyStore(...)

Each test is synchronous and runs its body in one ``asyncio.run``: the store is made inside
that event loop (a store with connections binds to the loop it first uses) and closed with
``aclose`` at the end. Two optional hooks widen what is checked: :meth:`make_second_view`
(another object on the same store, for exclusion between processes) and
:meth:`corrupt_record` (damage one stored record, for corruption reporting); a test that
needs a hook the subclass does not implement is skipped, saying which.
"""

from __future__ import annotations

import asyncio
import dataclasses
import time
from collections.abc import Awaitable, Callable
from typing import Any, Final

from wfctl._errors import (
    CheckpointCorruptError,
    CheckpointNotFoundError,
    InvalidIdError,
    RunLockedError,
    RunNotFoundError,
    WfctlError,
)
from wfctl._records._checkpoint import Checkpoint, Kind, RunStatus, checkpoint_id_for
from wfctl._records._packing import pack_against
from wfctl._records._payloads import CancelRequest

from ._capabilities import cancel_request, chain_records, load_chain, request_cancel
from ._protocol import RunLease, RunStore

__all__ = ["StorageConformance"]

#: How long a storage may take to learn of a pause request (a notification) before it fails.
PAUSE_WAIT: Final = 1.0
_POLL: Final = 0.005


def _checkpoint(
    run_id: str,
    seq: int,
    kind: str | None = None,
    *,
    workflow: str = "wf",
    minute: int = 0,
    parent: str | bool | None = True,
    data: dict[str, Any] | None = None,
) -> Checkpoint:
    """Checkpoint ``seq`` of ``run_id`` (its parent the previous seq unless given)."""
    if parent is True:
        parent_id = checkpoint_id_for(run_id, seq - 1) if seq else None
    else:
        parent_id = parent or None
    return Checkpoint(
        run_id=run_id,
        seq=seq,
        kind=Kind(kind or (Kind.ROOT if seq == 0 else Kind.STEP)),
        workflow_name=workflow,
        timestamp=f"2026-01-01T00:{minute:02d}:{seq % 60:02d}.{seq:06d}+00:00",
        previous_checkpoint_id=parent_id,
        data={"n": seq, "text": "ünïcode"} if data is None else data,
    )


def _pause_data(*request_ids: str) -> dict[str, Any]:
    return {
        "reason": "request",
        "requests": [{"request_id": rid, "request_data": {"q": rid}} for rid in request_ids],
    }


async def _build(
    storage: RunStore,
    run_id: str,
    length: int,
    *,
    workflow: str = "wf",
    minute: int = 0,
    last_kind: str | None = None,
    last_data: dict[str, Any] | None = None,
) -> list[Checkpoint]:
    """Save a run of ``length`` records under its lease: a root, steps, optionally another last."""
    saved: list[Checkpoint] = []
    lease = await storage.lease_run(run_id)
    try:
        await _save_each(storage, run_id, length, workflow, minute, last_kind, last_data, saved)
    finally:
        await lease.release()
    return saved


async def _save_each(
    storage: RunStore,
    run_id: str,
    length: int,
    workflow: str,
    minute: int,
    last_kind: str | None,
    last_data: dict[str, Any] | None,
    saved: list[Checkpoint],
) -> None:
    for seq in range(length):
        last = seq == length - 1 and seq > 0
        checkpoint = _checkpoint(
            run_id,
            seq,
            last_kind if last else None,
            workflow=workflow,
            minute=minute,
            data=last_data if last else None,
        )
        await storage.save(checkpoint)
        saved.append(checkpoint)


async def _leased_save(storage: RunStore, *checkpoints: Checkpoint) -> None:
    """Save ``checkpoints`` (of one run, in order) as a writer does: holding their run's lease
    (released after)."""
    lease = await storage.lease_run(checkpoints[0].run_id)
    try:
        for checkpoint in checkpoints:
            await storage.save(checkpoint)
    finally:
        await lease.release()


async def _ids(storage: RunStore, run_id: str) -> list[str]:
    return await storage.list_checkpoint_ids(run_id=run_id)


async def _eventually(probe: Callable[[], bool], expected: bool) -> bool:
    """Poll ``probe`` every few ms until it returns ``expected`` or :data:`PAUSE_WAIT` passes."""
    deadline = time.monotonic() + PAUSE_WAIT
    while probe() != expected:
        if time.monotonic() >= deadline:
            return False
        await asyncio.sleep(_POLL)
    return True


def _id_of(checkpoint: Checkpoint | None) -> str | None:
    return None if checkpoint is None else checkpoint.checkpoint_id


def _raises(exc_type: type[BaseException] | tuple[type[BaseException], ...]) -> Any:
    import pytest  # the suite runs under pytest; importing the module needs no pytest

    return pytest.raises(exc_type)


class StorageConformance:
    """Tests of every duty of a :class:`RunStore`; subclass it and implement :meth:`make_storage`.

    Not collected itself (its name does not start with ``Test``); a subclass named ``Test...``
    is. Each test makes its stores with :meth:`make_storage`, which must return an empty store
    each time it is called.
    """

    # -- hooks ------------------------------------------------------------------------------

    def make_storage(self) -> RunStore:
        """Return a new, empty store (called inside the test's event loop)."""
        raise NotImplementedError("a StorageConformance subclass must implement make_storage")

    def make_second_view(self, storage: RunStore) -> RunStore | None:
        """Return another object on the same store as ``storage`` (None: it cannot be shared).

        What another process (or machine) would open: leases must exclude between the two, and
        each sees what the other saved. The suite closes it with ``aclose``.
        """
        return None

    async def corrupt_record(self, storage: RunStore, run_id: str, seq: int) -> None:
        """Damage the stored record ``seq`` of ``run_id`` so that its checksum fails.

        Not implemented by default: the corruption tests are then skipped (a store that keeps
        objects in memory has no bytes to damage).
        """
        raise NotImplementedError

    # -- running a test ---------------------------------------------------------------------

    def run_with(self, body: Callable[[RunStore], Awaitable[None]]) -> None:
        """Run ``body(storage)`` in one event loop, with a fresh store closed after it."""

        async def main() -> None:
            storage = self.make_storage()
            try:
                await body(storage)
            finally:
                await storage.aclose()

        asyncio.run(main())

    def run_shared(self, body: Callable[[RunStore, RunStore], Awaitable[None]]) -> None:
        """Run ``body(storage, second_view)``; skip when the store cannot be shared."""

        async def main(storage: RunStore) -> None:
            other = self.make_second_view(storage)
            if other is None:
                import pytest

                pytest.skip("make_second_view returns None: the store is not shared")
            try:
                await body(storage, other)
            finally:
                await other.aclose()

        self.run_with(main)

    async def _corrupt(self, storage: RunStore, run_id: str, seq: int) -> None:
        try:
            await self.corrupt_record(storage, run_id, seq)
        except NotImplementedError:
            import pytest

            pytest.skip("corrupt_record is not implemented for this store")

    # -- an empty store ---------------------------------------------------------------------

    def test_a_new_store_is_empty(self) -> None:
        async def body(storage: RunStore) -> None:
            assert isinstance(storage, RunStore)
            assert await storage.list_runs() == []
            assert await storage.list_checkpoints() == []
            assert await storage.list_checkpoint_ids() == []
            assert await storage.get_latest() is None
            with _raises(RunNotFoundError):
                await storage.read_run("nope")
            with _raises(RunNotFoundError):
                await storage.run_summary("nope")
            with _raises(CheckpointNotFoundError):
                await storage.load("nope.0")

        self.run_with(body)

    def test_location_names_the_store(self) -> None:
        async def body(storage: RunStore) -> None:
            assert isinstance(storage.location, str)
            assert storage.location

        self.run_with(body)

    # -- chain rules on save ----------------------------------------------------------------

    def test_saved_checkpoints_read_back_equal(self) -> None:
        async def body(storage: RunStore) -> None:
            saved = await _build(storage, "r1", 3, last_kind="completed")
            for checkpoint in saved:
                assert await storage.load(checkpoint.checkpoint_id) == checkpoint
            assert await storage.list_checkpoints(run_id="r1") == saved
            assert await _ids(storage, "r1") == ["r1.0", "r1.1", "r1.2"]
            journal = await storage.read_run("r1")
            assert list(journal.checkpoints) == saved
            assert list(journal.problems) == []
            assert journal.run_id == "r1"

        self.run_with(body)

    def test_a_run_starts_with_a_root_at_seq_0(self) -> None:
        async def body(storage: RunStore) -> None:
            refused = [
                _checkpoint("r1", 1),  # no root yet
                _checkpoint("r1", 0, "step"),  # seq 0 that is not a root
                _checkpoint("r1", 0, parent="x.3"),  # a root with a parent
            ]
            for checkpoint in refused:
                with _raises(CheckpointCorruptError):
                    await _leased_save(storage, checkpoint)
            with _raises(RunNotFoundError):
                await storage.read_run("r1")
            assert await storage.list_runs() == []
            assert await storage.list_checkpoints() == []

        self.run_with(body)

    def test_each_save_extends_the_head_by_one_link(self) -> None:
        async def body(storage: RunStore) -> None:
            saved = await _build(storage, "r1", 2)
            refused = [
                _checkpoint("r1", 0),  # a second root
                _checkpoint("r1", 1, data={"stale": True}),  # a stale save at the head's seq
                saved[1],  # the same save again
                _checkpoint("r1", 3),  # a gap
                _checkpoint("r1", 2, parent="r1.0"),  # the wrong parent
                _checkpoint("r1", 2, parent=None),  # no parent
                _checkpoint("r1", 2, "root"),  # a root after seq 0
            ]
            for checkpoint in refused:
                with _raises(CheckpointCorruptError):
                    await _leased_save(storage, checkpoint)
            assert await storage.list_checkpoints(run_id="r1") == saved
            assert list((await storage.read_run("r1")).checkpoints) == saved
            assert (await storage.run_summary("r1")).head_seq == 1
            nxt = _checkpoint("r1", 2)
            await _leased_save(storage, nxt)  # the refusals left the head where it was
            assert await storage.list_checkpoints(run_id="r1") == [*saved, nxt]

        self.run_with(body)

    def test_data_that_is_not_json_is_refused_and_nothing_stored(self) -> None:
        async def body(storage: RunStore) -> None:
            await _build(storage, "r1", 1)
            with _raises((TypeError, ValueError)):
                await _leased_save(storage, _checkpoint("r1", 1, data={"x": object()}))
            assert await _ids(storage, "r1") == ["r1.0"]
            await _leased_save(storage, _checkpoint("r1", 1))

        self.run_with(body)

    def test_a_stale_writer_on_another_view_is_refused(self) -> None:
        async def body(storage: RunStore, other: RunStore) -> None:
            await _build(storage, "r1", 2)
            await _leased_save(other, _checkpoint("r1", 2, data={"by": "other"}))
            with _raises(CheckpointCorruptError):
                await _leased_save(storage, _checkpoint("r1", 2, data={"by": "stale"}))
            for view in (storage, other):
                chain = await view.list_checkpoints(run_id="r1")
                assert [cp.checkpoint_id for cp in chain] == ["r1.0", "r1.1", "r1.2"]
                assert chain[2].data == {"by": "other"}

        self.run_shared(body)

    def test_a_run_handed_over_between_views_goes_on_from_its_head(self) -> None:
        async def body(storage: RunStore, other: RunStore) -> None:
            await _build(storage, "r1", 2)
            for seq, view in enumerate((other, storage, other), start=2):
                lease = await view.lease_run("r1")
                try:
                    await view.save(_checkpoint("r1", seq))
                finally:
                    await lease.release()
            expected = [f"r1.{seq}" for seq in range(5)]
            assert await _ids(storage, "r1") == expected
            assert await _ids(other, "r1") == expected

        self.run_shared(body)

    def test_malformed_ids_are_refused(self) -> None:
        async def body(storage: RunStore) -> None:
            with _raises(InvalidIdError):
                await _leased_save(storage, _checkpoint("bad id", 0))
            for read in (storage.read_run, storage.run_summary, storage.lease_run):
                with _raises(InvalidIdError):
                    await read("../x")
            with _raises(InvalidIdError):
                await storage.load("no-seq")
            with _raises(InvalidIdError):
                await storage.delete_runs(["ok", "bad/id"])
            assert await storage.list_runs() == []

        self.run_with(body)

    # -- reads ------------------------------------------------------------------------------

    def test_load_of_a_missing_checkpoint(self) -> None:
        async def body(storage: RunStore) -> None:
            await _build(storage, "r1", 2)
            for missing in ("r1.2", "r2.0"):
                with _raises(CheckpointNotFoundError):
                    await storage.load(missing)

        self.run_with(body)

    def test_listing_filters_and_orders_runs_oldest_first(self) -> None:
        async def body(storage: RunStore) -> None:
            b = await _build(storage, "b", 2, workflow="one", minute=1)
            a = await _build(storage, "a", 3, workflow="two", minute=2)
            c = await _build(storage, "c", 1, workflow="one", minute=3)
            assert await storage.list_checkpoints() == [*b, *a, *c]
            assert await storage.list_checkpoint_ids(workflow_name="one") == [
                cp.checkpoint_id for cp in (*b, *c)
            ]
            assert await storage.list_checkpoints(workflow_name="two") == a
            assert await storage.list_checkpoints(run_id="a", workflow_name="one") == []
            assert await storage.list_checkpoints(workflow_name="none") == []
            assert [r.run_id for r in await storage.list_runs()] == ["b", "a", "c"]
            assert [r.run_id for r in await storage.list_runs(workflow_name="one")] == ["b", "c"]

        self.run_with(body)

    def test_get_latest_is_the_newest_head(self) -> None:
        async def body(storage: RunStore) -> None:
            await _build(storage, "old", 3, workflow="one", minute=1)
            await _build(storage, "new", 2, workflow="two", minute=5)
            await _build(storage, "mid", 2, workflow="one", minute=3)
            assert _id_of(await storage.get_latest()) == "new.1"
            assert _id_of(await storage.get_latest(workflow_name="one")) == "mid.1"
            assert _id_of(await storage.get_latest(run_id="old")) == "old.2"
            assert await storage.get_latest(run_id="old", workflow_name="two") is None
            assert await storage.get_latest(run_id="gone") is None
            assert await storage.get_latest(workflow_name="none") is None

        self.run_with(body)

    def test_a_journal_names_the_head_get_latest_returns(self) -> None:
        """A ``head_seq`` read with the records is the head's seq; ``verify-lineage`` trusts it
        instead of asking ``get_latest``. A store that reads whole runs a page at a time
        (``stream_runs``) reads each run as ``read_run`` does, in ``list_runs``'s order (or
        gives the id of a run too long for its page, which the caller reads by itself)."""

        async def body(storage: RunStore) -> None:
            await _build(storage, "b", 3, workflow="one", minute=1)
            await _build(storage, "a", 2, workflow="two", minute=2)
            for run_id in ("a", "b"):
                journal = await storage.read_run(run_id)
                latest = await storage.get_latest(run_id=run_id)
                assert latest is not None
                assert journal.head_seq in (None, latest.seq)
            stream = getattr(storage, "stream_runs", None)
            if stream is None:
                return
            for workflow in (None, "one"):
                listed = [r.run_id for r in await storage.list_runs(workflow_name=workflow)]
                streamed = [journal async for journal in stream(workflow_name=workflow)]
                ids = [j if isinstance(j, str) else j.run_id for j in streamed]
                assert ids == listed
                for run_id, journal in zip(listed, streamed, strict=True):
                    assert journal == run_id or journal == await storage.read_run(run_id)

        self.run_with(body)

    def test_summaries_say_how_each_run_ended(self) -> None:
        async def body(storage: RunStore) -> None:
            await _build(storage, "done", 3, last_kind="completed", minute=1)
            await _build(storage, "bad", 2, last_kind="failed", minute=2)
            await _build(
                storage, "asks", 2, last_kind="pause", last_data=_pause_data("q1"), minute=3
            )
            await _build(storage, "off", 2, last_kind="cancelled", minute=4)
            await _build(storage, "died", 2, minute=5)
            stop = {"reason": "interrupt", "requests": []}  # Ctrl-C, a signal, wfctl pause
            await _build(storage, "stopped", 2, last_kind="pause", last_data=stop, minute=6)
            expected = {
                "done": RunStatus.COMPLETED,
                "bad": RunStatus.FAILED,
                "asks": RunStatus.PAUSED,
                "off": RunStatus.CANCELLED,
                "died": RunStatus.INTERRUPTED,
                "stopped": RunStatus.INTERRUPTED,  # nothing to answer: not paused for answers
            }
            listed = await storage.list_runs()
            assert {r.run_id: r.status for r in listed} == expected
            for summary in listed:
                assert await storage.run_summary(summary.run_id) == summary
            asks = await storage.run_summary("asks")
            assert asks.pending == ("q1",)
            assert asks.head_checkpoint_id == "asks.1"
            assert asks.head_seq == 1
            assert asks.workflow_name == "wf"
            assert asks.created == _checkpoint("asks", 0, minute=3).timestamp
            assert asks.updated == _checkpoint("asks", 1, minute=3).timestamp
            assert asks.problem is None

        self.run_with(body)

    def test_a_restored_run_keeps_its_origin(self) -> None:
        async def body(storage: RunStore) -> None:
            await _build(storage, "src", 2)
            root = _checkpoint("copy", 0)
            restored = dataclasses.replace(root, origin_run_id="src", origin_checkpoint_id="src.1")
            await _leased_save(storage, restored)
            assert await storage.load("copy.0") == restored
            summary = await storage.run_summary("copy")
            assert (summary.origin_run_id, summary.origin_checkpoint_id) == ("src", "src.1")

        self.run_with(body)

    # -- leases -----------------------------------------------------------------------------

    def test_a_lease_is_exclusive_until_released(self) -> None:
        async def body(storage: RunStore) -> None:
            await _build(storage, "r1", 2)
            lease = await storage.lease_run("r1")
            assert isinstance(lease, RunLease)
            assert lease.run_id == "r1"
            with _raises(RunLockedError):
                await storage.lease_run("r1")
            other = await storage.lease_run("r2")  # other runs are free
            await other.release()
            await lease.release()
            await lease.release()  # idempotent
            again = await storage.lease_run("r1")
            await again.release()

        self.run_with(body)

    def test_a_leased_run_is_running(self) -> None:
        async def body(storage: RunStore) -> None:
            await _build(storage, "r1", 2)
            assert (await storage.run_summary("r1")).status == RunStatus.INTERRUPTED
            lease = await storage.lease_run("r1")
            try:
                assert (await storage.run_summary("r1")).status == RunStatus.RUNNING
                assert [r.status for r in await storage.list_runs()] == [RunStatus.RUNNING]
            finally:
                await lease.release()
            assert (await storage.run_summary("r1")).status == RunStatus.INTERRUPTED

        self.run_with(body)

    def test_a_run_with_no_records_can_be_leased_and_started(self) -> None:
        async def body(storage: RunStore) -> None:
            lease = await storage.lease_run("new")
            try:
                assert await storage.list_runs() == []
                with _raises(RunNotFoundError):
                    await storage.read_run("new")
                with _raises(RunNotFoundError):
                    await storage.request_pause("new")
                with _raises(RunNotFoundError):
                    await storage.run_summary("new")
                await _save_each(storage, "new", 2, "wf", 0, None, None, [])
                assert (await storage.run_summary("new")).status == RunStatus.RUNNING
            finally:
                await lease.release()

        self.run_with(body)

    def test_a_lease_excludes_another_view_of_the_store(self) -> None:
        async def body(storage: RunStore, other: RunStore) -> None:
            await _build(storage, "r1", 2)
            lease = await storage.lease_run("r1")
            try:
                with _raises(RunLockedError):
                    await other.lease_run("r1")
                assert (await other.run_summary("r1")).status == RunStatus.RUNNING
                with _raises(RunLockedError):
                    await other.delete_run("r1")
            finally:
                await lease.release()
            taken = await other.lease_run("r1")
            try:
                with _raises(RunLockedError):
                    await storage.lease_run("r1")
            finally:
                await taken.release()

        self.run_shared(body)

    def test_a_lease_outlives_aclose(self) -> None:
        async def body(storage: RunStore, other: RunStore) -> None:
            await _build(storage, "r1", 1)
            lease = await storage.lease_run("r1")
            await storage.aclose()
            try:
                with _raises(RunLockedError):
                    await other.lease_run("r1")
            finally:
                await lease.release()
            taken = await other.lease_run("r1")
            await taken.release()

        self.run_shared(body)

    # -- pause requests ---------------------------------------------------------------------

    def test_a_pause_request_needs_a_run(self) -> None:
        async def body(storage: RunStore) -> None:
            with _raises(RunNotFoundError):
                await storage.request_pause("nope")
            await storage.clear_pause("nope")  # nothing to withdraw: no error

        self.run_with(body)

    def test_a_pause_request_reaches_the_lease(self) -> None:
        async def body(storage: RunStore) -> None:
            await _build(storage, "r1", 2)
            lease = await storage.lease_run("r1")
            try:
                assert not lease.pause_requested()
                await storage.request_pause("r1")
                assert await _eventually(lease.pause_requested, True)
                await storage.clear_pause("r1")
                assert await _eventually(lease.pause_requested, False)
                await storage.clear_pause("r1")  # idempotent
            finally:
                await lease.release()

        self.run_with(body)

    # -- cancel requests --------------------------------------------------------------------

    async def _ask_cancel(self, storage: RunStore, run_id: str, request: CancelRequest) -> None:
        try:
            await request_cancel(storage, run_id, request)
        except WfctlError as exc:
            if "does not support cancel requests" not in str(exc):
                raise
            import pytest

            pytest.skip("request_cancel is not implemented for this store")

    def test_a_cancel_request_is_a_pause_request_that_names_who_asked(self) -> None:
        async def body(storage: RunStore) -> None:
            await _build(storage, "r1", 2)
            asked = CancelRequest("ann@host (pid 7)", "2026-12-06T06:00:00+00:00", "superseded")
            with _raises(RunNotFoundError):
                await self._ask_cancel(storage, "nope", asked)
            lease = await storage.lease_run("r1")
            try:
                await self._ask_cancel(storage, "r1", asked)
                assert await _eventually(lease.pause_requested, True)
                assert await cancel_request(storage, "r1") == asked
                await storage.request_pause("r1")  # a pause asked after it: still a cancel
                assert await cancel_request(storage, "r1") == asked
                await storage.clear_pause("r1")  # withdraws both
                assert await _eventually(lease.pause_requested, False)
                assert await cancel_request(storage, "r1") is None
                await storage.request_pause("r1")  # a plain pause names nobody
                assert await cancel_request(storage, "r1") is None
            finally:
                await lease.release()

        self.run_with(body)

    def test_a_cancel_request_from_another_view_reaches_the_driver(self) -> None:
        async def body(storage: RunStore, other: RunStore) -> None:
            await _build(storage, "r1", 2)
            lease = await storage.lease_run("r1")
            try:
                asked = CancelRequest("ann@host (pid 7)", "2026-12-06T06:00:00+00:00")
                await self._ask_cancel(other, "r1", asked)
                assert await _eventually(lease.pause_requested, True)
                assert await cancel_request(storage, "r1") == asked
            finally:
                await lease.release()

        self.run_shared(body)

    def test_a_pause_request_from_another_view_reaches_the_lease(self) -> None:
        async def body(storage: RunStore, other: RunStore) -> None:
            await _build(storage, "r1", 2)
            await _build(storage, "r2", 2)
            lease = await storage.lease_run("r1")
            bystander = await storage.lease_run("r2")
            try:
                await other.request_pause("r1")
                assert await _eventually(lease.pause_requested, True)
                assert not bystander.pause_requested()
                await other.clear_pause("r1")
                assert await _eventually(lease.pause_requested, False)
            finally:
                await lease.release()
                await bystander.release()

        self.run_shared(body)

    # -- what format versions 3 and 4 store -----------------------------------------------

    def test_big_data_references_and_changes_read_back_as_saved(self) -> None:
        """A record of big data (stored compressed by the file and PostgreSQL stores), a step
        argument stored as a reference to an earlier result, and a result stored as its change
        from that argument, read back as the values."""
        text = "every value is stored once, and big data is stored compressed; " * 400
        changed = text.replace("once", "twice", 1)
        first = {"steps": [{"key": "a#0", "digest": "0" * 16, "args": [1], "result": text}]}
        ref = {"$t": "ref", "v": [1, "a#0"]}
        packed = pack_against(changed.encode(), text.encode())
        assert packed is not None
        change = {"$t": "zd", "v": [[1, "a#0"]], "z": packed.decode()}
        second = {"steps": [{"key": "b#0", "digest": "1" * 16, "args": [ref], "result": change}]}

        async def body(storage: RunStore) -> None:
            saved = [
                _checkpoint("r1", 0),
                _checkpoint("r1", 1, Kind.STEP, data=first),
                _checkpoint("r1", 2, Kind.STEP, data=second),
            ]
            await _leased_save(storage, *saved)
            resolved = {**second["steps"][0], "args": [text], "result": changed}
            # read_run gives the records as stored, or resolved (the file and PostgreSQL
            # stores resolve as they read); every other read resolves them.
            stored = (await storage.read_run("r1")).checkpoints
            assert [c.checkpoint_id for c in stored] == ["r1.0", "r1.1", "r1.2"]
            assert stored[1].data == first
            assert stored[2].data in ({"steps": [resolved]}, second)
            chain = await load_chain(storage, "r1")
            assert [c.data for c in chain[1:]] == [first, {"steps": [resolved]}]
            listed = await storage.list_checkpoints(run_id="r1")
            assert [c.data for c in listed[1:]] == [first, {"steps": [resolved]}]
            assert (await storage.load("r1.2")).data == {"steps": [resolved]}
            latest = await storage.get_latest(run_id="r1")
            assert latest is not None
            assert latest.data == {"steps": [resolved]}
            streamed = [c.data async for c in chain_records(storage, "r1")]
            assert streamed[1:] == [first, {"steps": [resolved]}]
            stream = getattr(storage, "stream_chain", None)  # what a resume reads
            if stream is not None:
                assert [c.data for c in stream("r1")[1]][1:] == [first, {"steps": [resolved]}]

        self.run_with(body)

    # -- corruption -------------------------------------------------------------------------

    def test_a_corrupt_record_is_reported_not_raised(self) -> None:
        async def body(storage: RunStore) -> None:
            await _build(storage, "good", 2, minute=1)
            await _build(storage, "r1", 3, minute=2)
            await self._corrupt(storage, "r1", 1)
            journal = await storage.read_run("r1")
            assert journal.problems, "read_run must name the damaged record"
            assert [cp.seq for cp in journal.checkpoints] == [0, 2]
            listed = {r.run_id: r for r in await storage.list_runs()}
            assert listed["good"].status == RunStatus.INTERRUPTED
            assert listed["r1"].status == RunStatus.CORRUPT
            assert listed["r1"].problem
            assert (await storage.run_summary("r1")).status == RunStatus.CORRUPT

        self.run_with(body)

    def test_a_corrupt_record_is_the_only_problem_of_the_records_that_refer_to_it(self) -> None:
        """Records 2 and 3 refer to (and change from) record 1's result, which is damaged: the
        damage is one problem, and records 2 and 3 stay in the chain, as stored (a store that
        has no bytes to damage skips this)."""
        text = "every value is stored once, and big data is stored compressed; " * 400
        changed = text.replace("once", "twice", 1)
        packed = pack_against(changed.encode(), text.encode())
        assert packed is not None

        def entry(key: str, args: list[Any], result: Any) -> dict[str, Any]:
            return {"steps": [{"key": key, "digest": "0" * 16, "args": args, "result": result}]}

        ref = {"$t": "ref", "v": [1, "a#0"]}
        change = {"$t": "zd", "v": [[1, "a#0"]], "z": packed.decode()}
        saved = [
            _checkpoint("r1", 0),
            _checkpoint("r1", 1, Kind.STEP, data=entry("a#0", [1], text)),
            _checkpoint("r1", 2, Kind.STEP, data=entry("b#0", [ref], change)),
            _checkpoint("r1", 3, Kind.STEP, data=entry("c#0", [ref], 3)),
        ]

        async def body(storage: RunStore) -> None:
            await _leased_save(storage, *saved)
            await self._corrupt(storage, "r1", 1)
            journal = await storage.read_run("r1")
            assert len(journal.problems) == 1, journal.problems
            assert [c.seq for c in journal.checkpoints] == [0, 2, 3]
            assert [c.data for c in journal.checkpoints[1:]] == [saved[2].data, saved[3].data]
            with _raises(CheckpointCorruptError):  # a strict read still stops at record 1
                await load_chain(storage, "r1")

        self.run_with(body)

    def test_strict_reads_of_a_corrupt_run_raise(self) -> None:
        async def body(storage: RunStore) -> None:
            await _build(storage, "r1", 3)
            await self._corrupt(storage, "r1", 1)
            with _raises(CheckpointCorruptError):
                await load_chain(storage, "r1")
            with _raises(CheckpointCorruptError):
                await storage.list_checkpoints(run_id="r1")
            with _raises(CheckpointCorruptError):
                await storage.load("r1.1")

        self.run_with(body)

    def test_a_corrupt_head_is_never_skipped(self) -> None:
        async def body(storage: RunStore) -> None:
            await _build(storage, "r1", 3)
            await self._corrupt(storage, "r1", 2)
            with _raises(CheckpointCorruptError):
                await storage.get_latest(run_id="r1")
            # Whether a save past a corrupt head is refused is the store's own choice (the file
            # store refuses it; a database trusts its head pointer): a writer reads the run
            # strictly before it goes on, and that read refuses the run.
            assert (await storage.run_summary("r1")).status == RunStatus.CORRUPT

        self.run_with(body)

    # -- deletion ---------------------------------------------------------------------------

    def test_delete_cuts_the_chain(self) -> None:
        async def body(storage: RunStore) -> None:
            await _build(storage, "r1", 4)
            assert await storage.delete("r1.2") is True
            assert await _ids(storage, "r1") == ["r1.0", "r1.1"]
            assert await storage.delete("r1.5") is False
            assert await storage.delete("r2.0") is False
            again = _checkpoint("r1", 2, data={"after": "cut"})
            await _leased_save(storage, again)  # the head is the cut's parent now
            assert await storage.load("r1.2") == again
            assert await storage.delete("r1.0") is True  # seq 0: the whole run
            with _raises(RunNotFoundError):
                await storage.read_run("r1")
            assert await storage.list_runs() == []

        self.run_with(body)

    def test_delete_run_and_delete_runs(self) -> None:
        async def body(storage: RunStore) -> None:
            for minute, run_id in enumerate(("a", "b", "c", "d")):
                await _build(storage, run_id, 2, minute=minute)
            assert await storage.delete_run("a") is True
            assert await storage.delete_run("a") is False
            removed, locked = await storage.delete_runs(["b", "c", "zz"])
            assert sorted(removed) == ["b", "c"]
            assert locked == []
            assert [r.run_id for r in await storage.list_runs()] == ["d"]
            with _raises(RunNotFoundError):
                await storage.request_pause("b")

        self.run_with(body)

    def test_deletion_is_refused_while_leased(self) -> None:
        async def body(storage: RunStore) -> None:
            await _build(storage, "a", 3, minute=1)
            await _build(storage, "b", 2, minute=2)
            lease = await storage.lease_run("a")
            try:
                with _raises(RunLockedError):
                    await storage.delete_run("a")
                with _raises(RunLockedError):
                    await storage.delete("a.1")
                removed, locked = await storage.delete_runs(["a", "b"])
                assert removed == ["b"]
                assert [exc.run_id for exc in locked] == ["a"]
                assert await _ids(storage, "a") == ["a.0", "a.1", "a.2"]
            finally:
                await lease.release()
            assert await storage.delete_run("a") is True
            assert await storage.list_runs() == []

        self.run_with(body)
