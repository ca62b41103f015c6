"""The replay report's shape: codec-rendered outputs, stable JSON, row pairing, live events.

Tests import ``wfctl._inspect._replay`` directly: it is the library function the CLI's ``wfctl replay``
wraps.
"""

from __future__ import annotations

import asyncio
import json
from datetime import date
from typing import Any

from tests.conftest import arun
from wfctl import InMemoryCheckpointStorage, step, workflow
from wfctl._inspect._replay import replay


def test_outputs_render_through_the_codec_and_to_json_is_stable() -> None:
    async def main() -> None:
        storage = InMemoryCheckpointStorage()
        day = {"value": date(2024, 1, 2)}

        @step
        async def stamp(tag: str) -> dict[str, Any]:
            return {"tag": tag, "raw": tag.encode(), "day": day["value"]}

        @workflow(name="typed")
        async def wf(tag: str) -> dict[str, Any]:
            return await stamp(tag)

        runnable = wf.build(checkpoint_storage=storage)
        first = await runnable.run("x")
        same = await replay(runnable, first.checkpoint_id)
        assert same.identical and same.outputs_source == [
            {"tag": "x", "raw": b"x", "day": date(2024, 1, 2)}
        ]
        day["value"] = date(2024, 1, 3)
        report = await replay(runnable, first.run_id + ".0")
        assert "2024-01-02" in report.outputs_diff and "2024-01-03" in report.outputs_diff
        assert (
            report.steps[0].replay_preview is not None
            and "2024-01-03" in report.steps[0].replay_preview
        )
        document = json.loads(json.dumps(report.to_json()))
        # The rows come right after the checkpoint's ids, before all the replay decided:
        # --json writes them as they are compared, some while the replay runs.
        assert list(document) == [
            "schema", "source_run_id", "source_checkpoint_id", "steps", "source_status",
            "replay_run_id", "replay_head_checkpoint_id", "replay_status", "error",
            "error_type", "reused_answer_ids", "code_changed", "target", "target_recorded",
            "outputs_equal", "source_outputs", "replay_outputs", "outputs_diff",
            "step_counts", "identical",
        ]  # fmt: skip
        assert document["schema"] == "wfctl/replay@1"
        assert document["identical"] is False and document["step_counts"]["changed"] == 1
        assert document["code_changed"] is False
        assert list(document["step_counts"]) == [
            "cached",
            "same",
            "changed",
            "new",
            "not_reached",
            "failed",
        ]
        assert list(document["steps"][0]) == [
            "key", "status", "source_key", "source_digest", "replay_digest",
            "source_result", "replay_result", "error", "source_error",
        ]  # fmt: skip
        # Results are values in the codec's encoding, never their repr.
        row = document["steps"][0]
        assert row["source_result"]["day"] == {"$t": "date", "v": "2024-01-02"}
        assert row["replay_result"]["day"] == {"$t": "date", "v": "2024-01-03"}
        assert document["replay_outputs"][0]["raw"] == {"$t": "bytes", "v": "eA=="}

    arun(main())


def test_completion_ordered_calls_keep_their_counterparts() -> None:
    """``as_completed`` numbers calls in an order that changes from run to run; rows pair by
    argument digest, so a faithful replay shows no change."""

    async def main() -> None:
        @step
        async def produce(i: int) -> int:
            return i * i

        @step
        async def consume(i: int) -> str:
            return f"consumed:{i}"

        @workflow(name="completion_ordered")
        async def wf(n: int) -> list[str]:
            out = [
                await consume(await done)
                for done in asyncio.as_completed([produce(i) for i in range(n)])
            ]
            return sorted(out)

        storage = InMemoryCheckpointStorage()
        runnable = wf.build(checkpoint_storage=storage)
        first = await runnable.run(6)
        for checkpoint in await storage.list_checkpoints(run_id=first.run_id):
            report = await replay(runnable, checkpoint.checkpoint_id)
            assert report.identical, report.steps
            assert len(report.steps) == 12

    arun(main())


def test_events_stream_to_the_listener() -> None:
    async def main() -> None:
        @step
        async def one(x: int) -> int:
            return x

        @workflow(name="listened")
        async def wf(x: int) -> int:
            return await one(x)

        runnable = wf.build(checkpoint_storage=InMemoryCheckpointStorage())
        first = await runnable.run(1)
        seen: list[str] = []
        await replay(runnable, first.checkpoint_id, on_event=lambda e: seen.append(e.kind))
        assert seen[0] == "run_started" and "step_cached" in seen and seen[-1] == "run_completed"

    arun(main())
