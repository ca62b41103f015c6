"""``replay`` when the code or the data changed since the source run, and the report's shape.

Tests import ``wfctl._inspect._replay`` directly: it is the library function the CLI's ``wfctl replay``
wraps. Each test defines a workflow twice under one name: ``v1`` writes the history, ``v2`` is
the edited code that replays it.
"""

from __future__ import annotations

import pytest

from tests.conftest import arun, failure_of
from wfctl import (
    CheckpointStorage,
    InMemoryCheckpointStorage,
    Workflow,
    WorkflowChangedError,
    step,
    workflow,
)
from wfctl._inspect._replay import replay


def _versions() -> tuple[Workflow, Workflow]:
    """v1 and v2 of one workflow: v2's ``scale`` step returns ten times more."""

    @step
    async def fetch(x: int) -> int:
        return x + 1

    @step
    async def scale(x: int) -> int:
        return x * 10

    @step(name="scale")
    async def scale_v2(x: int) -> int:
        return x * 100

    @step
    async def label(x: int) -> str:
        return f"value={x}"

    @workflow(name="pipeline")
    async def v1(x: int) -> str:
        return await label(await scale(await fetch(x)))

    @workflow(name="pipeline")
    async def v2(x: int) -> str:
        return await label(await scale_v2(await fetch(x)))

    return v1, v2


async def _source(storage: CheckpointStorage) -> tuple[Workflow, list[str]]:
    v1, v2 = _versions()
    first = await v1.build(checkpoint_storage=storage).run(1)
    assert first.get_outputs() == ["value=20"]
    checkpoints = await storage.list_checkpoints(run_id=first.run_id)
    return v2.build(checkpoint_storage=storage), [c.checkpoint_id for c in checkpoints]


def test_changed_code_is_refused_before_any_run_unless_allowed(storage: CheckpointStorage) -> None:
    async def main() -> None:
        v2, checkpoints = await _source(storage)
        runs = len(await storage.list_runs())
        with pytest.raises(WorkflowChangedError):
            await replay(v2, checkpoints[-1])
        assert len(await storage.list_runs()) == runs  # nothing to diff: no replay run exists

    arun(main())


def test_changed_step_rerun_from_the_root_is_reported_changed(storage: CheckpointStorage) -> None:
    async def main() -> None:
        v2, checkpoints = await _source(storage)
        report = await replay(v2, checkpoints[0], allow_changed=True)
        assert report.replay_status == "completed" and not report.identical
        rows = {row.key: row for row in report.steps}
        assert [row.key for row in report.steps] == ["fetch#0", "scale#0", "label#0"]
        assert rows["fetch#0"].status == "same"
        # Same arguments, another result.
        assert rows["scale#0"].status == "changed"
        assert rows["scale#0"].source_digest == rows["scale#0"].replay_digest
        assert (rows["scale#0"].source_preview, rows["scale#0"].replay_preview) == ("20", "200")
        # Its new result is the next step's argument: another digest.
        assert rows["label#0"].status == "changed"
        assert rows["label#0"].source_digest != rows["label#0"].replay_digest
        assert report.outputs_source == ["value=20"] and report.outputs_replay == ["value=200"]
        assert report.outputs_diff.splitlines() == [
            "--- source",
            "+++ replay",
            "@@ -1,3 +1,3 @@",
            " [",
            '-  "value=20"',
            '+  "value=200"',
            " ]",
        ]
        assert report.counts["changed"] == 2

    arun(main())


def test_changed_step_with_unchanged_arguments_is_served_from_the_record() -> None:
    """A record is matched by step, scope and argument digest: editing a step's body alone
    does not invalidate it. Replaying from the end therefore serves every step."""

    async def main() -> None:
        v2, checkpoints = await _source(InMemoryCheckpointStorage())
        report = await replay(v2, checkpoints[-1], allow_changed=True)
        assert report.identical and report.counts["cached"] == 3
        assert report.code_changed  # ... which the report says, so a reader is not misled

    arun(main())


def test_changed_arguments_diverge_or_run_live_when_allowed() -> None:
    async def main() -> None:
        offset = {"value": 0}

        @step
        async def double(x: int) -> int:
            return x * 2

        @workflow(name="data_driven")
        async def wf(x: int) -> int:
            return await double(x + offset["value"])

        storage = InMemoryCheckpointStorage()
        runnable = wf.build(checkpoint_storage=storage)
        first = await runnable.run(1)
        offset["value"] = 1  # the code is the same; what it passes is not
        strict = await replay(runnable, first.checkpoint_id)
        assert strict.replay_status == "failed" and not strict.identical
        assert strict.error_type == "ReplayDivergenceError" and "double#0" in (strict.error or "")
        assert [(r.key, r.status) for r in strict.steps] == [("double#0", "failed")]
        allowed = await replay(runnable, first.checkpoint_id, allow_changed=True)
        assert not allowed.code_changed  # the signature covers code, not the data it reads
        assert [(r.key, r.status) for r in allowed.steps] == [("double#0", "changed")]
        assert allowed.outputs_replay == [4] and not allowed.identical

    arun(main())


def test_a_new_step_differs_an_unreached_one_only_through_outputs() -> None:
    async def main() -> None:
        storage = InMemoryCheckpointStorage()

        @step
        async def compute(x: int) -> int:
            return x + 1

        @step
        async def audit(x: int) -> str:
            return f"audited {x}"

        @workflow(name="audited")
        async def v1(x: int) -> int:
            await audit(x)  # its result is not used
            return await compute(x)

        @workflow(name="audited")
        async def v2(x: int) -> int:
            return await compute(x)

        @workflow(name="audited")
        async def v3(x: int) -> int:
            await audit(x)
            result = await compute(x)
            await audit(result)
            return result

        first = await v1.build(checkpoint_storage=storage).run(1)
        dropped = await replay(
            v2.build(checkpoint_storage=storage), first.run_id + ".0", allow_changed=True
        )
        assert [(r.key, r.status) for r in dropped.steps] == [
            ("audit#0", "not reached"),
            ("compute#0", "same"),
        ]
        assert dropped.identical  # what the replay skipped changed nothing it returned
        added = await replay(
            v3.build(checkpoint_storage=storage), first.checkpoint_id, allow_changed=True
        )
        assert [(r.key, r.status) for r in added.steps] == [
            ("audit#0", "cached"),
            ("compute#0", "cached"),
            ("audit#1", "new"),
        ]
        assert added.outputs_diff == "" and not added.identical

    arun(main())


def test_replaying_a_failed_run_after_the_fix() -> None:
    async def main() -> None:
        storage = InMemoryCheckpointStorage()

        @step
        async def load(x: int) -> int:
            return x

        @step
        async def divide(x: int) -> float:
            return 1 / x

        @step(name="divide")
        async def divide_fixed(x: int) -> float:
            return 1 / x if x else 0.0

        @workflow(name="fragile")
        async def v1(x: int) -> float:
            return await divide(await load(x))

        @workflow(name="fragile")
        async def v2(x: int) -> float:
            return await divide_fixed(await load(x))

        with pytest.raises(ZeroDivisionError) as caught:
            await v1.build(checkpoint_storage=storage).run(0)
        failed = failure_of(caught)
        report = await replay(
            v2.build(checkpoint_storage=storage), failed.checkpoint_id, allow_changed=True
        )
        assert report.source_status == "failed" and report.outputs_source is None
        assert report.replay_status == "completed" and report.outputs_replay == [0.0]
        assert [(r.key, r.status) for r in report.steps] == [
            ("load#0", "cached"),
            ("divide#0", "new"),
        ]
        assert report.outputs_diff.startswith("--- source\n+++ replay\n") and not report.identical

    arun(main())


def _fragile() -> tuple[Workflow, Workflow]:
    @step
    async def divide(x: int) -> float:
        return 1 / x

    @step(name="divide")
    async def divide_fixed(x: int) -> float:
        return 1 / x if x else 0.0

    @workflow(name="fragile")
    async def v1(x: int) -> float:
        return await divide(x)

    @workflow(name="fragile")
    async def v2(x: int) -> float:
        return await divide_fixed(x)

    return v1, v2


def test_code_changed_follows_a_retry_that_recorded_the_new_code() -> None:
    async def main() -> None:
        storage = InMemoryCheckpointStorage()
        v1, v2 = (w.build(checkpoint_storage=storage) for w in _fragile())
        with pytest.raises(ZeroDivisionError) as caught:
            await v1.run(0)
        failed = failure_of(caught)
        fixed = await v2.run(checkpoint_id=failed.checkpoint_id, allow_changed=True)
        assert fixed.status == "completed" and fixed.run_id == failed.run_id
        before = await replay(v2, failed.checkpoint_id, allow_changed=True)
        assert before.code_changed  # written by v1
        after = await replay(v2, fixed.checkpoint_id, allow_changed=True)
        assert not after.code_changed and after.identical  # written by v2, after the retry

    arun(main())


def test_a_checkpoint_written_by_the_current_code_replays_without_allow_changed() -> None:
    async def main() -> None:
        storage = InMemoryCheckpointStorage()
        v1, v2 = (w.build(checkpoint_storage=storage) for w in _fragile())
        with pytest.raises(ZeroDivisionError) as caught:
            await v1.run(0)
        failed = failure_of(caught)
        fixed = await v2.run(checkpoint_id=failed.checkpoint_id, allow_changed=True)
        assert (await replay(v2, fixed.checkpoint_id)).identical

    arun(main())


def test_a_step_of_the_users_named_sleep_has_its_result_compared() -> None:
    # A durable sleep's result is its wake-up time, never compared; a step the user named
    # "sleep" returns a value like any other. The diff skipped comparing every record named
    # "sleep", so this replay was reported identical with the step's result changed.
    async def main() -> None:
        hours = {"value": 7}

        @step(name="sleep")
        async def log_sleep(day: str) -> int:
            return hours["value"]

        @step
        async def notify(day: str) -> str:
            return f"notified {day}"

        @workflow(name="tracker")
        async def tracker(day: str) -> str:
            await log_sleep(day)
            return await notify(day)

        storage = InMemoryCheckpointStorage()
        runnable = tracker.build(checkpoint_storage=storage)
        first = await runnable.run("mon")
        hours["value"] = 3
        report = await replay(runnable, f"{first.run_id}.0")
        assert [(r.key, r.status) for r in report.steps] == [
            ("sleep#0", "changed"),
            ("notify#0", "same"),
        ]
        assert not report.identical

    arun(main())
