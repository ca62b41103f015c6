"""Branches run through ``asyncio.as_completed`` keep their identity: their list's order.

``as_completed`` makes its tasks from a ``set`` of the coroutines it is given, in an order that
changes from process to process (and from one set to the next in one process). A branch (a
coroutine that is not a bare step call) took the next child scope as its task was made, so on
a restore branch 3 could find branch 7's records: an argument-less step's result, or a human's
answer, served to the wrong branch with the run reported completed. Twelve branches make an
unchanged order by chance (1 in 12!) out of the question.
"""

from __future__ import annotations

import asyncio
import itertools
from typing import Any

import pytest

from tests.conftest import arun, failure_of
from wfctl import InMemoryCheckpointStorage, RunContext, WorkflowDefinitionError, step, workflow

BRANCHES = 12


def _token_workflow() -> Any:
    counter = itertools.count(100)

    @step
    async def token() -> int:  # no argument: only the branch's scope tells the calls apart
        return next(counter)

    @step
    async def tag(i: int) -> int:
        return i

    async def branch(i: int) -> tuple[int, int]:
        await tag(i)
        return i, await token()

    @workflow
    async def fan() -> list[tuple[int, int]]:
        done = asyncio.as_completed([branch(i) for i in range(BRANCHES)])
        return sorted([await each for each in done])

    return fan


def test_each_branch_is_served_its_own_records_on_restore() -> None:
    async def main() -> None:
        wf = _token_workflow().build(checkpoint_storage=InMemoryCheckpointStorage())
        first = await wf.run()
        assert first.status == "completed"
        for seed in (None, 7):
            restored = await wf.run(checkpoint_id=first.checkpoint_id, shuffle_seed=seed)
            assert restored.status == "completed", restored.error
            assert restored.result == first.result  # every branch its own token
            assert restored.executed == () and len(restored.cached) == 2 * BRANCHES

    arun(main())


def test_a_branch_is_keyed_by_its_place_in_the_list() -> None:
    async def main() -> None:
        wf = _token_workflow().build(checkpoint_storage=InMemoryCheckpointStorage())
        result = await wf.run()
        tags = [e for e in result.events if e.kind == "step_started" and "/tag#" in e.key]
        assert len(tags) == BRANCHES
        for event in tags:  # branch i, in the list at i, runs in scope "i"
            assert event.key == f"{event.data['args'][0]}/tag#0", event.key

    arun(main())


def test_answers_reach_the_branch_that_asked() -> None:
    truth = {f"question {i}": f"answer {i}" for i in range(BRANCHES)}

    @step
    async def record(question: str, answer: str) -> str:
        return f"{question} -> {answer}"

    async def ask(ctx: RunContext, question: str) -> str:
        answer = await ctx.request_info({"question": question}, str)
        return await record(question, answer)

    @workflow
    async def quiz(ctx: RunContext) -> list[str]:
        asked = asyncio.as_completed([ask(ctx, q) for q in truth])
        return sorted([await each for each in asked])

    async def main() -> None:
        wf = quiz.build(checkpoint_storage=InMemoryCheckpointStorage())
        paused = await wf.run()
        assert paused.status == "paused"
        answers = {
            event.request_id: truth[event.request_data["question"]]
            for event in paused.get_request_info_events()
        }
        done = await wf.run(responses=answers)
        assert done.status == "completed", done.error
        assert done.result == sorted(f"{q} -> {a}" for q, a in truth.items())

    arun(main())


def test_branches_given_in_no_order_fail_when_they_key_a_call() -> None:
    @step
    async def work(i: int) -> int:
        return i

    async def keyed(i: int) -> int:
        return await work(i)

    async def plain(i: int) -> int:
        return i

    @workflow
    async def unordered(keyed_calls: bool) -> list[int]:
        make = keyed if keyed_calls else plain
        results, errors = [], []
        for each in asyncio.as_completed(map(make, range(3))):
            try:  # every branch's outcome taken: none left for asyncio to log
                results.append(await each)
            except WorkflowDefinitionError as error:
                errors.append(error)
        if errors:
            assert len(errors) == 3  # each branch refused its call
            raise errors[0]
        return sorted(results)

    async def main() -> None:
        wf = unordered.build(checkpoint_storage=InMemoryCheckpointStorage())
        calm = await wf.run(False)  # branches that key nothing have no identity to lose
        assert calm.status == "completed" and calm.result == [0, 1, 2]
        with pytest.raises(WorkflowDefinitionError, match=r"in a map.*list or a tuple") as caught:
            await wf.run(True)
        assert failure_of(caught).executed == ()  # nothing ran under a chance key

    arun(main())
