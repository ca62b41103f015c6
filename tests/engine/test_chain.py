"""The locked chain (SPEC §4): one linear lineage per run, whatever the concurrency."""

from __future__ import annotations

import asyncio
import contextlib
import itertools
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

import wfctl._engine._chain
from tests.conftest import ObservedStorage, arun, assert_one_chain
from wfctl import InMemoryCheckpointStorage, step, workflow
from wfctl._engine._chain import CheckpointChain, utc_now
from wfctl._records._checkpoint import Checkpoint


@step
async def add_one(x: int) -> int:
    return x + 1


@workflow
async def fan_out(n: int) -> list[int]:
    return list(await asyncio.gather(*(add_one(i) for i in range(n))))


@pytest.mark.parametrize("n", [2, 10, 200])
def test_gather_keeps_one_chain(storage: Any, n: int) -> None:
    async def main() -> None:
        result = await fan_out.build(checkpoint_storage=storage).run(n)
        assert result.get_outputs() == [[i + 1 for i in range(n)]]
        checkpoints = await storage.list_checkpoints(run_id=result.run_id)
        assert_one_chain(checkpoints)
        assert checkpoints[-1].checkpoint_id == result.checkpoint_id
        latest = await storage.get_latest(workflow_name="fan_out")
        assert latest is not None and latest.checkpoint_id == result.checkpoint_id
        committed = [s["key"] for c in checkpoints if c.kind == "step" for s in c.data["steps"]]
        # Tasks that only wrap a step call are keyed in the creating scope.
        assert sorted(committed) == sorted(f"add_one#{i}" for i in range(n))
        if n >= 10:  # steps finishing in one loop iteration share one commit
            assert sum(c.kind == "step" for c in checkpoints) < n

    arun(main())


def test_slow_first_save_cannot_fork_the_chain() -> None:
    """Hold the first step save; later steps finish meanwhile and commit after it, together."""

    async def main() -> None:
        observed = ObservedStorage(InMemoryCheckpointStorage())
        hold_first = asyncio.Event()
        observed.gates[1] = hold_first  # save 0 is the root; save 1 holds step a's result
        b_done = asyncio.Event()
        durable_on_return: dict[str, bool] = {}

        def committed(key: str) -> bool:
            return any(
                key == s["key"] for c in observed.saved if c.kind == "step" for s in c.data["steps"]
            )

        @step
        async def a() -> str:
            return "a"

        @step
        async def b() -> str:
            await observed.save_started(1).wait()  # finish only while a's save is held
            b_done.set()
            return "b"

        @step
        async def c() -> str:
            await b_done.wait()
            hold_first.set()  # release the first save only after b and c are queued behind it
            return "c"

        async def call(fn: Any, key: str) -> str:
            value: str = await fn()
            durable_on_return[key] = committed(key)
            return value

        @workflow
        async def three() -> list[str]:
            return list(await asyncio.gather(call(a, "0/a#0"), call(b, "1/b#0"), call(c, "2/c#0")))

        result = await three.build(checkpoint_storage=observed).run()
        assert result.get_outputs() == [["a", "b", "c"]]
        assert durable_on_return == {"0/a#0": True, "1/b#0": True, "2/c#0": True}
        assert observed.max_concurrent_saves == 1
        kinds = [(c.kind, [s["key"] for s in c.data.get("steps", [])]) for c in observed.saved]
        assert kinds == [
            ("root", []),
            ("step", ["0/a#0"]),
            ("step", ["1/b#0", "2/c#0"]),  # group commit
            ("completed", []),
        ]
        assert_one_chain(await observed.list_checkpoints(run_id=result.run_id))

    arun(main())


def test_a_cancelled_caller_does_not_lose_its_save() -> None:
    async def main() -> None:
        observed = ObservedStorage(InMemoryCheckpointStorage())
        hold = asyncio.Event()
        observed.gates[1] = hold
        started = asyncio.Event()

        @step
        async def slow_to_save() -> str:
            started.set()
            return "kept"

        @workflow
        async def cancel_me() -> str:
            task = asyncio.create_task(slow_to_save())
            await started.wait()  # the step has returned and queued its commit by now
            task.cancel()
            hold.set()
            with contextlib.suppress(asyncio.CancelledError):
                await task
            return "done"

        result = await cancel_me.build(checkpoint_storage=observed).run()
        assert result.status == "completed"
        steps = [s["key"] for c in observed.saved if c.kind == "step" for s in c.data["steps"]]
        assert steps == ["slow_to_save#0"]
        assert_one_chain(await observed.list_checkpoints(run_id=result.run_id))

    arun(main())


def _commit_tasks(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Count the tasks the chain starts to commit step results (their coroutines' names)."""
    started: list[str] = []
    real = asyncio.Task

    def counting(coro: Any, **kwargs: Any) -> asyncio.Task[Any]:
        name = getattr(coro, "__qualname__", "")
        if name.startswith("CheckpointChain._commit") or name == "_resume":
            started.append(name)
        return real(coro, **kwargs)

    monkeypatch.setattr(wfctl._engine._chain.asyncio, "Task", counting)
    return started


def test_sequential_steps_commit_in_their_caller(monkeypatch: pytest.MonkeyPatch) -> None:
    """A store that saves without waiting: a sequential step starts no committer task."""
    started = _commit_tasks(monkeypatch)

    @workflow
    async def ten() -> list[int]:
        return [await add_one(i) for i in range(10)]

    async def main() -> None:
        storage = InMemoryCheckpointStorage()
        result = await ten.build(checkpoint_storage=storage).run()
        assert result.get_outputs() == [list(range(1, 11))]
        checkpoints = await storage.list_checkpoints(run_id=result.run_id)
        assert_one_chain(checkpoints)
        steps = [[s["key"] for s in c.data["steps"]] for c in checkpoints if c.kind == "step"]
        assert steps == [[f"add_one#{i}"] for i in range(10)]

    arun(main())
    assert started == []


def test_fan_out_still_commits_as_a_group(monkeypatch: pytest.MonkeyPatch) -> None:
    """Sibling tasks alive: steps finishing in one loop iteration share one commit."""
    started = _commit_tasks(monkeypatch)

    async def lane(i: int) -> int:
        total = i
        for _ in range(3):
            total = await add_one(total)
        return total

    @workflow
    async def lanes(n: int) -> list[int]:
        return list(await asyncio.gather(*(lane(i) for i in range(n))))

    async def main() -> None:
        storage = InMemoryCheckpointStorage()
        result = await lanes.build(checkpoint_storage=storage).run(50)
        assert result.get_outputs() == [[i + 3 for i in range(50)]]
        checkpoints = await storage.list_checkpoints(run_id=result.run_id)
        assert_one_chain(checkpoints)
        assert [len(c.data["steps"]) for c in checkpoints if c.kind == "step"] == [50, 50, 50]

    arun(main())
    assert started == ["CheckpointChain._commit_queued"] * 3


class WaitsAfterAll(ObservedStorage):
    """Declares that its saves never wait, and waits: the commit started in the caller goes on
    in the committer task."""

    _SAVES_WITHOUT_WAITING = True

    async def save(self, checkpoint: Checkpoint) -> None:
        await super().save(checkpoint)


class WaitsOnAFuture(ObservedStorage):
    """Declares its save may start anywhere, and waits on a plain future in every save (as a
    PostgreSQL save waits for its reply)."""

    _SAVE_STARTS_ANYWHERE = True

    async def save(self, checkpoint: Checkpoint) -> None:
        loop = asyncio.get_running_loop()
        reply = loop.create_future()
        loop.call_soon(reply.set_result, None)
        await reply
        await super().save(checkpoint)


class YieldsBare(ObservedStorage):
    """Declares its save may start anywhere, and waits by a bare ``yield`` (``sleep(0)``)."""

    _SAVE_STARTS_ANYWHERE = True

    async def save(self, checkpoint: Checkpoint) -> None:
        await asyncio.sleep(0)
        await super().save(checkpoint)


def _chain_tasks(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Every task started for the chain's coroutines (``asyncio.Task`` is patched for all)."""
    started: list[str] = []
    real = asyncio.Task

    def counting(coro: Any, **kwargs: Any) -> asyncio.Task[Any]:
        name = getattr(coro, "__qualname__", "")
        if name.startswith(("CheckpointChain.", "_SoloSave.", "_resume")):
            started.append(name)
        return real(coro, **kwargs)

    monkeypatch.setattr(wfctl._engine._chain.asyncio, "Task", counting)
    return started


@pytest.mark.parametrize(
    ("storage_class", "tasks"), [(WaitsOnAFuture, []), (YieldsBare, ["_SoloSave._in_task"] * 5)]
)
def test_a_sequential_save_that_waits_on_futures_needs_no_task(
    monkeypatch: pytest.MonkeyPatch, storage_class: type[ObservedStorage], tasks: list[str]
) -> None:
    """A solo commit whose save waits only on futures is resumed by them, with no task; one
    that waits otherwise (a bare yield) goes on in a task. Either way: one chain, a record per
    step, each step's await returning after its record was saved."""
    started = _chain_tasks(monkeypatch)

    async def main() -> None:
        observed = storage_class(InMemoryCheckpointStorage())
        saved_before: list[int] = []

        @step
        async def counted(i: int) -> int:
            return i

        @workflow
        async def five() -> list[int]:
            out = []
            for i in range(5):
                out.append(await counted(i))
                saved_before.append(len(observed.saved))
            return out

        result = await five.build(checkpoint_storage=observed).run()
        assert result.get_outputs() == [[0, 1, 2, 3, 4]]
        assert saved_before == [2, 3, 4, 5, 6]  # the root, then one step record each
        steps = [[s["key"] for s in c.data["steps"]] for c in observed.saved if c.kind == "step"]
        assert steps == [[f"counted#{i}"] for i in range(5)]
        assert_one_chain(await observed.list_checkpoints(run_id=result.run_id))

    arun(main())
    # Besides the run-level saves (the root, the end), each in a task of its own.
    assert [name for name in started if name != "CheckpointChain._save"] == tasks


def test_only_a_store_whose_save_declares_it_commits_in_the_caller() -> None:
    """A save that might enter a context bound to its task (``asyncio.timeout``) is not begun
    in the caller's task; a subclass overriding ``save`` does not inherit the declaration."""

    class Overrides(InMemoryCheckpointStorage):
        async def save(self, checkpoint: Checkpoint) -> None:
            await super().save(checkpoint)

    def inline(storage: Any) -> bool:
        return CheckpointChain(storage, "r", "w")._inline

    assert inline(InMemoryCheckpointStorage())
    assert inline(WaitsAfterAll(InMemoryCheckpointStorage()))
    assert not inline(ObservedStorage(InMemoryCheckpointStorage()))
    assert not inline(Overrides())


@pytest.mark.parametrize(
    "storage_class", [ObservedStorage, WaitsAfterAll, WaitsOnAFuture, YieldsBare]
)
def test_a_save_that_waits_goes_on_when_its_sequential_caller_is_cancelled(
    storage_class: type[ObservedStorage],
) -> None:
    """The commit waits in the storage (begun in the caller, or in the committer task):
    cancelling the caller does not cancel it, and the run drains it before its failed
    ending."""

    async def main() -> None:
        observed = storage_class(InMemoryCheckpointStorage())
        hold = asyncio.Event()
        observed.gates[1] = hold  # save 0 is the root; save 1 holds the step's result
        body: list[asyncio.Task[Any]] = []

        @step
        async def kept() -> str:
            body.append(asyncio.current_task())  # type: ignore[arg-type]
            return "kept"

        @workflow
        async def cancelled() -> str:
            return await kept()

        async def cancel_the_body() -> None:
            await observed.save_started(1).wait()
            body[0].cancel()
            await asyncio.sleep(0)  # the cancellation lands while the save is held
            hold.set()

        canceller = asyncio.create_task(cancel_the_body())
        with pytest.raises(asyncio.CancelledError, match="the run was cancelled"):
            await cancelled.build(checkpoint_storage=observed).run()
        await canceller
        kinds = [(c.kind, [s["key"] for s in c.data.get("steps", [])]) for c in observed.saved]
        assert kinds[:2] == [("root", []), ("step", ["kept#0"])]
        assert kinds[2][0] == "failed" and len(kinds) == 3
        assert observed.max_concurrent_saves == 1
        assert_one_chain(await observed.list_checkpoints(run_id=observed.saved[0].run_id))

    arun(main())


@pytest.mark.parametrize(
    "storage_class", [ObservedStorage, WaitsAfterAll, WaitsOnAFuture, YieldsBare]
)
def test_steps_made_while_a_waiting_save_goes_on_are_committed_after_it(
    storage_class: type[ObservedStorage],
) -> None:
    """The body goes on after its step's caller was cancelled while the save waited: its
    next step queues behind that save and is committed after it, by the same committer."""

    async def main() -> None:
        observed = storage_class(InMemoryCheckpointStorage())
        hold = asyncio.Event()
        observed.gates[1] = hold  # save 0 is the root; save 1 holds the first step's result
        body: list[asyncio.Task[Any]] = []

        @step
        async def first() -> str:
            body.append(asyncio.current_task())  # type: ignore[arg-type]
            return "first"

        @step
        async def second() -> str:
            hold.set()  # queued behind the held save, which may now end
            return "second"

        @workflow
        async def goes_on() -> str:
            try:
                return await first()
            except asyncio.CancelledError:
                return await second()

        async def cancel_the_caller() -> None:
            await observed.save_started(1).wait()
            body[0].cancel()

        canceller = asyncio.create_task(cancel_the_caller())
        # A guard against a hang (a queued step nobody commits), not a timing threshold.
        result = await asyncio.wait_for(goes_on.build(checkpoint_storage=observed).run(), 10)
        await canceller
        assert result.get_outputs() == ["second"]
        kinds = [(c.kind, [s["key"] for s in c.data.get("steps", [])]) for c in observed.saved]
        assert kinds == [
            ("root", []),
            ("step", ["first#0"]),
            ("step", ["second#0"]),
            ("completed", []),
        ]
        assert observed.max_concurrent_saves == 1
        assert_one_chain(await observed.list_checkpoints(run_id=result.run_id))

    arun(main())


@pytest.mark.parametrize(
    "ns",
    [0, 999_999_999, 1_700_000_000_123_456_789, 1_700_000_001_000_000_000, 4_102_444_799 * 10**9],
)
def test_checkpoint_timestamps_read_as_datetime_writes_them(
    monkeypatch: pytest.MonkeyPatch, ns: int
) -> None:
    expected = datetime(1970, 1, 1, tzinfo=UTC) + timedelta(microseconds=ns // 1000)
    monkeypatch.setattr(wfctl._engine._chain.time, "time_ns", lambda: ns)
    assert utc_now() == expected.isoformat(timespec="microseconds")
    assert utc_now() == expected.isoformat(timespec="microseconds")  # the second, cached


@pytest.mark.parametrize("clock_moves", [True, False])
def test_a_sequential_run_lets_the_loop_turn_every_turn_every_seconds(
    monkeypatch: pytest.MonkeyPatch, clock_moves: bool
) -> None:
    """Steps committed in their caller let the loop turn once ``TURN_EVERY`` has passed,
    and not before: a task outside the run counts the turns each step sees."""
    ticks = itertools.count(1.0, 2 * wfctl._engine._chain.TURN_EVERY if clock_moves else 0.0)
    monkeypatch.setattr(wfctl._engine._chain, "_monotonic", lambda: next(ticks))
    turns = 0
    seen: list[int] = []

    @step
    async def look() -> int:
        seen.append(turns)
        return turns

    @workflow
    async def sequential() -> None:
        for _ in range(20):
            await look()

    async def count_turns() -> None:
        nonlocal turns
        while True:
            await asyncio.sleep(0)
            turns += 1

    async def main() -> None:
        counter = asyncio.create_task(count_turns())
        await sequential.build(checkpoint_storage=InMemoryCheckpointStorage()).run()
        counter.cancel()

    arun(main())
    # The first commit made in its caller always lets the loop turn.
    steps_apart = [b - a for a, b in itertools.pairwise(seen)]
    assert steps_apart == [1] + [1 if clock_moves else 0] * 18
