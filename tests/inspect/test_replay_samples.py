"""``replay`` over every sample: from the end, from the middle, without executing, shuffled.

Tests import ``wfctl._inspect._replay`` directly: it is the library function the CLI's ``wfctl replay``
wraps.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.conftest import arun
from tests.samples.cases import CASES, Case, load_sample, run_to_end, sample_workflow
from wfctl import Checkpoint, CheckpointStorage, InMemoryCheckpointStorage, Workflow
from wfctl._inspect._replay import ReplayReport, replay


async def _first_run(case: Case, storage: Any, tmp_path: Path) -> tuple[Workflow, list[Checkpoint]]:
    wf = sample_workflow(case.stem, storage)
    result = await run_to_end(wf, case.message(tmp_path), case.answers)
    return wf, await storage.list_checkpoints(run_id=result.run_id)


BRANCHES = next(c for c in CASES if c.stem == "concurrent_branches")


def _middle(checkpoints: list[Checkpoint]) -> Checkpoint:
    """The first step checkpoint after which some steps are still to be recorded, else the root."""
    total = sum(len(c.data.get("steps", [])) for c in checkpoints)
    recorded = 0
    for checkpoint in checkpoints:
        recorded += len(checkpoint.data.get("steps", []))
        if checkpoint.kind == "step" and 0 < recorded < total:
            return checkpoint
    return checkpoints[0]


def _assert_identical(report: ReplayReport) -> None:
    assert report.identical, (report.error, report.outputs_diff, report.steps)
    assert report.replay_status == "completed" and report.error is None
    assert report.outputs_diff == "" and report.outputs_source == report.outputs_replay


@pytest.mark.parametrize("case", CASES, ids=str)
def test_replay_from_the_final_checkpoint_serves_every_step(
    case: Case, storage: CheckpointStorage, tmp_path: Path
) -> None:
    async def main() -> None:
        wf, checkpoints = await _first_run(case, storage, tmp_path)
        final = checkpoints[-1]
        report = await replay(wf, final.checkpoint_id)
        _assert_identical(report)
        assert report.source_run_id == final.run_id and report.replay_run_id != final.run_id
        assert report.steps and all(row.status == "cached" for row in report.steps)
        assert report.counts["cached"] == len(report.steps)
        # The replay is a new run whose root names its origin; the source is untouched.
        replay_root = await storage.load(f"{report.replay_run_id}.0")
        assert replay_root.origin_checkpoint_id == final.checkpoint_id
        assert await storage.list_checkpoints(run_id=final.run_id) == checkpoints

    arun(main())


@pytest.mark.parametrize("case", CASES, ids=str)
def test_replay_from_an_intermediate_checkpoint_reruns_the_rest(
    case: Case, storage: CheckpointStorage, tmp_path: Path
) -> None:
    async def main() -> None:
        wf, checkpoints = await _first_run(case, storage, tmp_path)
        middle = _middle(checkpoints)
        report = await replay(wf, middle.checkpoint_id)
        _assert_identical(report)
        assert report.counts["same"] >= 1
        assert report.counts["same"] + report.counts["cached"] == len(report.steps)
        if middle.kind == "step":
            assert report.counts["cached"] >= 1
        # Every row names its digests and previews on both sides.
        for row in report.steps:
            assert row.source_digest == row.replay_digest and row.source_preview is not None
            assert row.replay_preview == row.source_preview and len(row.replay_preview) <= 60

    arun(main())


@pytest.mark.parametrize("case", CASES, ids=str)
def test_no_execute_from_the_final_checkpoint_is_deterministic(
    case: Case, storage: CheckpointStorage, tmp_path: Path
) -> None:
    async def main() -> None:
        wf, checkpoints = await _first_run(case, storage, tmp_path)
        _assert_identical(await replay(wf, checkpoints[-1].checkpoint_id, execute=False))

    arun(main())


@pytest.mark.parametrize("case", CASES, ids=str)
def test_no_execute_from_an_intermediate_checkpoint_is_a_divergence(
    case: Case, storage: CheckpointStorage, tmp_path: Path
) -> None:
    async def main() -> None:
        wf, checkpoints = await _first_run(case, storage, tmp_path)
        report = await replay(wf, _middle(checkpoints).checkpoint_id, execute=False)
        assert not report.identical
        assert report.replay_status == "failed" and report.outputs_replay is None
        assert report.error_type == "ReplayDivergenceError"
        assert report.error is not None and "replay diverged at" in report.error
        assert report.counts["failed"] >= 1 and report.outputs_diff

    arun(main())


@pytest.mark.parametrize("seed", range(8))
def test_shuffled_replays_of_concurrent_branches_are_identical(seed: int) -> None:
    async def main() -> None:
        storage = InMemoryCheckpointStorage()
        wf, checkpoints = await _first_run(BRANCHES, storage, Path("."))
        for checkpoint in checkpoints:
            report = await replay(wf, checkpoint.checkpoint_id, shuffle_seed=seed)
            _assert_identical(report)

    arun(main())


def test_report_000_scenario_replays_as_cached_branches() -> None:
    """Report 000: once ``predecessor`` is cached, branch A reaches ``shared`` first."""
    module = load_sample("concurrent_branches")

    async def main() -> None:
        storage = InMemoryCheckpointStorage()
        wf, checkpoints = await _first_run(BRANCHES, storage, Path("."))
        [after_predecessor] = [
            c
            for c in checkpoints
            if [s["key"] for s in c.data.get("steps", [])] == ["0/predecessor#0"]
        ]
        module.shared_calls.clear()
        report = await replay(wf, after_predecessor.checkpoint_id)
        assert module.shared_calls == ["A", "B"]  # the order flipped ...
        _assert_identical(report)  # ... and each branch still got its own result
        assert {row.key: row.status for row in report.steps} == {
            "0/predecessor#0": "cached",
            "0/shared#0": "same",
            "1/shared#0": "same",
        }

    arun(main())


def test_human_review_replay_reuses_the_recorded_answer(storage: CheckpointStorage) -> None:
    async def main() -> None:
        wf = sample_workflow("human_review", storage)
        paused = await wf.run("cats")
        await wf.run(checkpoint_id=paused.checkpoint_id, responses={"request#0": "yes"})
        report = await replay(wf, paused.checkpoint_id)
        _assert_identical(report)
        assert report.answers_reused == ("request#0",)
        assert report.counts == {
            "cached": 2,
            "same": 1,
            "changed": 0,
            "new": 0,
            "not reached": 0,
            "failed": 0,
        }
        # Without the recorded answer the replay stops at the same question: not identical.
        asked = await replay(wf, paused.checkpoint_id, reuse_answers=False)
        assert asked.replay_status == "paused" and not asked.identical
        assert asked.answers_reused == () and asked.outputs_replay is None
        assert {row.key: row.status for row in asked.steps}["publish#0"] == "not reached"

    arun(main())
