# Report 000's reproduction, ported to wfctl by its import line only.
import asyncio

from wfctl import InMemoryCheckpointStorage, step, workflow


async def main() -> None:
    storage = InMemoryCheckpointStorage()
    predecessor_started = asyncio.Event()
    release_predecessor = asyncio.Event()
    branch_a_shared_completed = asyncio.Event()
    calls: list[str] = []

    @step
    async def predecessor(value: str) -> str:
        predecessor_started.set()
        await release_predecessor.wait()
        return value

    @step
    async def shared_step(value: str) -> str:
        calls.append(value)
        if value == "B":
            release_predecessor.set()
            await branch_a_shared_completed.wait()
        else:
            branch_a_shared_completed.set()
        return f"result:{value}"

    async def branch_a() -> str:
        await predecessor("A")
        return await shared_step("A")

    async def branch_b() -> str:
        await predecessor_started.wait()
        return await shared_step("B")

    @workflow
    async def parallel_workflow(_: str) -> list[str]:
        return list(await asyncio.gather(branch_a(), branch_b()))

    runnable = parallel_workflow.build(checkpoint_storage=storage)
    initial = await runnable.run("input")
    checkpoint = await storage.get_latest(workflow_name="parallel_workflow")
    assert checkpoint is not None
    replayed = await runnable.run(checkpoint_id=checkpoint.checkpoint_id)

    print("initial:", initial.get_outputs())
    print("replayed:", replayed.get_outputs())
    print("executed shared inputs:", calls)


asyncio.run(main())
