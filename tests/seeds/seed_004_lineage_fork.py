# Report 004's reproduction, ported to wfctl by its import line only.
import asyncio
import tempfile
from pathlib import Path

from wfctl import FileCheckpointStorage, step, workflow


@step
async def left(value: int) -> int:
    return value + 1


@step
async def right(value: int) -> int:
    return value + 2


async def main() -> None:
    with tempfile.TemporaryDirectory() as directory:
        storage = FileCheckpointStorage(Path(directory))

        @workflow(checkpoint_storage=storage)
        async def parallel(value: int) -> list[int]:
            return await asyncio.gather(left(value), right(value))

        await parallel.run(1)
        checkpoints = await storage.list_checkpoints(workflow_name="parallel")
        by_id = {checkpoint.checkpoint_id: checkpoint for checkpoint in checkpoints}
        latest = await storage.get_latest(workflow_name="parallel")
        reachable = set()
        while latest is not None:
            reachable.add(latest.checkpoint_id)
            latest = (
                by_id.get(latest.previous_checkpoint_id) if latest.previous_checkpoint_id else None
            )
        print("checkpoint count:", len(checkpoints))
        print(
            "root count:",
            sum(checkpoint.previous_checkpoint_id is None for checkpoint in checkpoints),
        )
        print("unreachable from latest:", len(checkpoints) - len(reachable))


asyncio.run(main())
