"""The keyed engine (SPEC §3): results stay with their logical call whatever the scheduling."""

from __future__ import annotations

import asyncio
from collections import Counter
from typing import Any

import pytest

from tests.conftest import arun, failure_of
from wfctl import (
    DuplicateStepKeyError,
    InMemoryCheckpointStorage,
    ReplayDivergenceError,
    RunContext,
    step,
    workflow,
)


def _gated_branches(n: int) -> tuple[Any, Counter[str]]:
    """Build report 000's shape with ``n`` branches, forcing the shared step in reverse order.

    Every branch runs ``predecessor(i)`` then ``shared(i)``. Branch ``i``'s predecessor is held
    until branch ``i + 1``'s shared step has started, so in the first run the shared steps start
    last-branch-first. On restore the cached predecessors no longer wait, so the order flips.
    """
    runs: Counter[str] = Counter()
    shared_started = [asyncio.Event() for _ in range(n)]

    @step
    async def predecessor(i: int) -> int:
        runs[f"predecessor:{i}"] += 1
        if i + 1 < n:
            await shared_started[i + 1].wait()
        return i

    @step
    async def shared(value: str) -> str:
        runs[f"shared:{value}"] += 1
        shared_started[int(value)].set()
        return f"result:{value}"

    async def branch(i: int) -> str:
        await predecessor(i)
        return await shared(str(i))

    @workflow(name="branches")
    async def branches(_: str) -> list[str]:
        return list(await asyncio.gather(*(branch(i) for i in range(n))))

    return branches, runs


@pytest.mark.parametrize("n", [2, 3, 5])
def test_restore_from_every_checkpoint_keeps_branch_results(n: int) -> None:
    async def main() -> None:
        wf, runs = _gated_branches(n)
        storage = InMemoryCheckpointStorage()
        wf = wf.build(checkpoint_storage=storage)
        first = await wf.run("go")
        expected = [f"result:{i}" for i in range(n)]
        assert first.get_outputs() == [expected]
        assert all(count == 1 for count in runs.values()) and len(runs) == 2 * n
        for checkpoint in await storage.list_checkpoints(run_id=first.run_id):
            runs.clear()
            replay = await wf.run(checkpoint_id=checkpoint.checkpoint_id)
            assert replay.status == "completed", replay.error
            assert replay.get_outputs() == [expected], checkpoint.checkpoint_id
            # Exactly the steps not yet recorded at that checkpoint ran again, once each.
            assert sum(runs.values()) == len(replay.executed)
            assert all(count == 1 for count in runs.values())
            assert len(replay.cached) + len(replay.executed) == 2 * n

    arun(main())


def test_keys_follow_task_lineage_not_timing() -> None:
    async def main() -> list[str | None]:
        wf, _ = _gated_branches(2)
        result = await wf.build(checkpoint_storage=InMemoryCheckpointStorage()).run("go")
        return [e.key for e in result.events if e.kind == "step_completed"]

    keys = arun(main())
    assert sorted(keys, key=str) == [
        "0/predecessor#0",
        "0/shared#0",
        "1/predecessor#0",
        "1/shared#0",
    ]


def test_identical_calls_in_different_branches_never_trade_results() -> None:
    async def main() -> None:
        counter = iter(range(100))
        gates = [asyncio.Event(), asyncio.Event()]

        @step
        async def fetch(value: str) -> str:
            return f"{value}:{next(counter)}"

        async def branch(i: int) -> list[str]:
            if i == 0:
                await gates[0].wait()  # branch 1 fetches first in the first run
            first = await fetch("same")
            second = await fetch("same")
            gates[0].set()
            return [first, second]

        @workflow
        async def twice(_: None) -> list[list[str]]:
            return list(await asyncio.gather(branch(0), branch(1)))

        storage = InMemoryCheckpointStorage()
        wf = twice.build(checkpoint_storage=storage)
        first = await wf.run(None)
        assert first.get_outputs() == [[["same:2", "same:3"], ["same:0", "same:1"]]]
        for checkpoint in await storage.list_checkpoints(run_id=first.run_id):
            replay = await wf.run(checkpoint_id=checkpoint.checkpoint_id)
            if checkpoint.kind == "completed":
                assert replay.get_outputs() == first.get_outputs()
                assert not replay.executed
            else:
                # Calls recorded before the checkpoint come back to the branch that made them.
                out = replay.get_outputs()[0]
                recorded = {
                    s["key"]: s["result"]
                    for c in await storage.list_checkpoints(run_id=first.run_id)
                    if c.seq <= checkpoint.seq and c.kind == "step"
                    for s in c.data["steps"]
                }
                for b, values in enumerate(out):
                    for n, value in enumerate(values):
                        key = f"{b}/fetch#{n}"
                        if key in recorded:
                            assert value == recorded[key]

    arun(main())


def test_nested_gather_and_steps_calling_steps() -> None:
    async def main() -> None:
        runs: Counter[str] = Counter()

        @step
        async def leaf(x: int) -> int:
            runs[f"leaf:{x}"] += 1
            return x * 10

        @step
        async def outer(x: int) -> int:
            runs[f"outer:{x}"] += 1
            a, b = await asyncio.gather(leaf(x * 10), leaf(x * 10 + 1))
            return a + b

        async def branch(x: int) -> list[int]:
            return list(await asyncio.gather(outer(x), leaf(x + 100)))

        @workflow
        async def nested(_: None) -> list[list[int]]:
            return list(await asyncio.gather(branch(1), branch(2)))

        storage = InMemoryCheckpointStorage()
        wf = nested.build(checkpoint_storage=storage)
        first = await wf.run(None)
        expected = [[210, 1010], [410, 1020]]
        assert first.get_outputs() == [expected]
        keys = {e.key for e in first.events if e.kind == "step_completed"}
        assert {"0/outer#0/leaf#0", "0/outer#0/leaf#1", "1/leaf#0", "1/outer#0"} <= keys
        for checkpoint in await storage.list_checkpoints(run_id=first.run_id):
            runs.clear()
            replay = await wf.run(checkpoint_id=checkpoint.checkpoint_id)
            assert replay.get_outputs() == [expected]
            assert all(c == 1 for c in runs.values())
            # An outer step that is cached does not run its inner steps again.
            for x in (1, 2):
                if f"outer:{x}" not in runs:
                    assert f"leaf:{x * 10}" not in runs

    arun(main())


def test_as_completed_consumers_find_their_own_results() -> None:
    async def main() -> None:
        runs: Counter[str] = Counter()
        release = [asyncio.Event() for _ in range(4)]

        @step
        async def produce(i: int) -> int:
            runs[f"produce:{i}"] += 1
            await release[i].wait()
            if i > 0:
                release[i - 1].set()  # completion order in the first run: 3, 2, 1, 0
            return i

        @step
        async def consume(i: int) -> str:
            runs[f"consume:{i}"] += 1
            return f"consumed:{i}"

        @workflow
        async def fan(_: None) -> list[str]:
            release[3].set()
            out = []
            for next_done in asyncio.as_completed([produce(i) for i in range(4)]):
                out.append(await consume(await next_done))
            return sorted(out)

        storage = InMemoryCheckpointStorage()
        wf = fan.build(checkpoint_storage=storage)
        first = await wf.run(None)
        assert first.get_outputs() == [[f"consumed:{i}" for i in range(4)]]
        # Calls are keyed where they are made (program order), not when as_completed's
        # set-ordered tasks start: produce#i is always produce(i).
        chain = await storage.list_checkpoints(run_id=first.run_id)
        produced = {
            s["key"]: s["result"] for c in chain if c.kind == "step" for s in c.data["steps"]
        }
        assert {k: v for k, v in produced.items() if k.startswith("produce")} == {
            f"produce#{i}": i for i in range(4)
        }
        for checkpoint in chain:
            runs.clear()
            replay = await wf.run(checkpoint_id=checkpoint.checkpoint_id, shuffle_seed=7)
            assert replay.status == "completed", replay.error
            assert replay.get_outputs() == first.get_outputs()
            assert all(c == 1 for c in runs.values())

    arun(main())


def test_changed_arguments_are_a_loud_divergence() -> None:
    async def main() -> None:
        suffix = ["a"]

        @step
        async def echo(value: str) -> str:
            return value

        @workflow
        async def wf_(_: None) -> str:
            return await echo("x" + suffix[0])

        storage = InMemoryCheckpointStorage()
        wf = wf_.build(checkpoint_storage=storage)
        first = await wf.run(None)
        suffix[0] = "b"
        with pytest.raises(ReplayDivergenceError) as caught:
            await wf.run(checkpoint_id=first.checkpoint_id)
        replay = failure_of(caught)
        assert caught.value.key == "echo#0"
        assert caught.value.recorded and caught.value.digest not in caught.value.recorded
        assert replay.cached == () and replay.executed == ()  # nothing served, nothing ran
        allowed = await wf.run(checkpoint_id=first.checkpoint_id, allow_changed=True)
        assert allowed.status == "completed"
        assert allowed.get_outputs() == ["xb"] and list(allowed.changed) == ["echo#0"]

    arun(main())


def test_user_code_cannot_swallow_a_divergence() -> None:
    async def main() -> None:
        arg = [1]

        @step
        async def inc(x: int) -> int:
            return x + 1

        @workflow
        async def swallow(_: None) -> str:
            try:
                await inc(arg[0])
            except Exception:
                return "swallowed"
            return "ok"

        storage = InMemoryCheckpointStorage()
        wf = swallow.build(checkpoint_storage=storage)
        first = await wf.run(None)
        arg[0] = 2
        with pytest.raises(ReplayDivergenceError) as caught:
            await wf.run(checkpoint_id=first.checkpoint_id)
        assert failure_of(caught).get_outputs() == []  # not "swallowed"

    arun(main())


def test_explicit_keys_and_replay_key() -> None:
    async def main() -> None:
        runs: Counter[str] = Counter()

        @step(replay_key=lambda item: item["id"])
        async def handle(item: dict[str, str]) -> str:
            runs[item["id"]] += 1
            return item["id"].upper()

        @step(name="named")
        async def other(x: int, ctx: RunContext) -> str:
            assert ctx.run_id
            return f"{x}"

        items = [{"id": "a"}, {"id": "b"}]

        @workflow
        async def keyed(_: None) -> list[str]:
            out = [await handle(item) for item in items]
            out.append(await other.keyed("only")(1))
            return out

        storage = InMemoryCheckpointStorage()
        wf = keyed.build(checkpoint_storage=storage)
        first = await wf.run(None)
        assert first.get_outputs() == [["A", "B", "1"]]
        keys = [e.key for e in first.events if e.kind == "step_completed"]
        assert keys == ["handle@a", "handle@b", "named@only"]
        items.reverse()  # the explicit key, not the call order, finds each result
        replay = await wf.run(checkpoint_id=first.checkpoint_id)
        assert replay.get_outputs() == [["B", "A", "1"]] and runs == {"a": 1, "b": 1}

        @workflow
        async def dup(_: None) -> None:
            await other.keyed("k")(1)
            await other.keyed("k")(2)

        with pytest.raises(DuplicateStepKeyError) as caught:
            await dup.build(checkpoint_storage=storage).run(None)
        assert failure_of(caught).executed == ("named@k",)

    arun(main())


def test_no_execute_reports_any_call_that_would_run() -> None:
    async def main() -> None:
        @step
        async def one(x: int) -> int:
            return x

        @workflow
        async def wf_(n: int) -> int:
            total = 0
            for i in range(n):
                total += await one(i)
            return total

        storage = InMemoryCheckpointStorage()
        wf = wf_.build(checkpoint_storage=storage)
        first = await wf.run(3)
        ok = await wf.run(checkpoint_id=first.checkpoint_id, execute=False)
        assert ok.status == "completed" and len(ok.cached) == 3 and not ok.executed
        middle = (await storage.list_checkpoints(run_id=first.run_id))[2]
        with pytest.raises(ReplayDivergenceError) as caught:
            await wf.run(checkpoint_id=middle.checkpoint_id, execute=False)
        assert not failure_of(caught).executed

    arun(main())


def test_taskgroup_and_create_task_branches_get_lineage_scopes() -> None:
    async def main() -> None:
        order = asyncio.Event()

        @step
        async def tag(value: str) -> str:
            return f"tag:{value}"

        async def late() -> str:
            await order.wait()  # the first-created branch finishes last
            return await tag("late")

        async def early() -> str:
            out = await tag("early")
            order.set()
            return out

        @workflow
        async def grouped() -> list[str]:
            async with asyncio.TaskGroup() as group:
                first = group.create_task(late())
                second = group.create_task(early())
            third = await asyncio.create_task(tag("direct"))
            return [first.result(), second.result(), third]

        storage = InMemoryCheckpointStorage()
        wf = grouped.build(checkpoint_storage=storage)
        first = await wf.run()
        keys = [e.key for e in first.events if e.kind == "step_completed"]
        assert keys == ["1/tag#0", "0/tag#0", "tag#0"]
        for checkpoint in await storage.list_checkpoints(run_id=first.run_id):
            replay = await wf.run(checkpoint_id=checkpoint.checkpoint_id)
            assert replay.get_outputs() == [["tag:late", "tag:early", "tag:direct"]]

    arun(main())


def test_an_existing_task_factory_is_chained_and_restored() -> None:
    async def main() -> None:
        loop = asyncio.get_running_loop()
        seen: list[str] = []

        def factory(loop: asyncio.AbstractEventLoop, coro: Any, **kwargs: Any) -> asyncio.Task[Any]:
            seen.append(getattr(coro, "__qualname__", "?"))
            return asyncio.Task(coro, loop=loop, **kwargs)

        loop.set_task_factory(factory)

        @step
        async def one(x: int) -> int:
            return x

        @workflow
        async def chained() -> list[int]:
            return list(await asyncio.gather(one(1), one(2)))

        result = await chained.build(checkpoint_storage=InMemoryCheckpointStorage()).run()
        assert result.get_outputs() == [[1, 2]]
        assert len(seen) >= 2  # the user's factory still made the run's tasks
        assert loop.get_task_factory() is factory  # and is back in place afterwards

    arun(main())


def test_a_replaced_call_that_raised_is_neither_executed_nor_changed() -> None:
    # Restored from a checkpoint in the middle, a call whose arguments changed runs live and is
    # settled when the body completes: one that returned is a changed step, one that raised
    # (the body caught it) is neither. Before, settling it raised a bare ValueError.
    async def main() -> None:
        argument = [1]

        @step
        async def fragile(x: int) -> int:
            if x < 0:
                raise ValueError("refused")
            return x

        @step
        async def steady(x: int) -> int:
            return x

        @workflow
        async def wf_(_: None) -> int:
            try:
                first = await fragile(argument[0])
            except ValueError:
                first = 0
            return first + await steady(1) + await steady(2)

        storage = InMemoryCheckpointStorage()
        wf = wf_.build(checkpoint_storage=storage)
        source = await wf.run(None)
        middle = f"{source.run_id}.1"  # after fragile#0's record, before steady's
        argument[0] = 5
        returned = await wf.run(checkpoint_id=middle, allow_changed=True)
        assert returned.status == "completed" and returned.result == 8
        assert list(returned.changed) == ["fragile#0"]
        assert list(returned.executed) == ["steady#0", "steady#1"]
        argument[0] = -1
        raised = await wf.run(checkpoint_id=middle, allow_changed=True)
        assert raised.status == "completed" and raised.result == 3
        assert raised.changed == () and list(raised.executed) == ["steady#0", "steady#1"]

    arun(main())
