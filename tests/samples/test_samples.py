"""Every sample runs through the library and returns what its docstring promises (SPEC §7).

(The same samples through the installed ``wfctl`` are the CLI tests' job.)
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import arun, assert_one_chain
from tests.samples.cases import CASES, SAMPLES_DIR, Case, load_sample, run_to_end, sample_workflow
from wfctl import Workflow


@pytest.mark.parametrize("stem", sorted(p.stem for p in SAMPLES_DIR.glob("*.py")))
def test_each_sample_defines_one_workflow_and_says_how_to_run_it(stem: str) -> None:
    module = load_sample(stem)
    own = [v for v in vars(module).values() if isinstance(v, Workflow)]
    assert len(own) == 1, "`wfctl run FILE` needs exactly one workflow in the file"
    assert own[0].name == stem
    assert module.__doc__ and f"wfctl run sample_workflows/{stem}.py" in module.__doc__


def test_every_sample_has_a_case() -> None:
    assert {c.stem for c in CASES} == {p.stem for p in SAMPLES_DIR.glob("*.py")}


@pytest.mark.parametrize("case", CASES, ids=str)
def test_sample_runs_and_keeps_one_chain(case: Case, storage: Any, tmp_path: Path) -> None:
    async def main() -> None:
        wf = sample_workflow(case.stem, storage)
        result = await run_to_end(wf, case.message(tmp_path), case.answers)
        if case.expected is not None:
            assert result.get_outputs() == case.expected(tmp_path)
        assert_one_chain(await storage.list_checkpoints(run_id=result.run_id))

    arun(main())


def test_concurrent_branches_replays_without_trading_results(storage: Any) -> None:
    module = load_sample("concurrent_branches")

    async def main() -> None:
        wf = sample_workflow("concurrent_branches", storage)
        module.shared_calls.clear()
        first = await wf.run(["left", "right"])
        assert first.get_outputs() == [["result:left", "result:right"]]
        # The gates make branch B's shared step start first in the first run (report 000).
        assert module.shared_calls == ["right", "left"]
        for checkpoint in await storage.list_checkpoints(run_id=first.run_id):
            replay = await wf.run(checkpoint_id=checkpoint.checkpoint_id, new_run=True)
            assert replay.get_outputs() == first.get_outputs(), checkpoint.checkpoint_id

    arun(main())


@pytest.mark.parametrize(
    ("message", "expected"), [(None, [2, 3]), (5, [6, 7]), ({"fan_out": 2}, [2, 3, 10, 11])]
)
def test_parallel_steps_inputs(message: Any, expected: list[int]) -> None:
    from wfctl import InMemoryCheckpointStorage

    async def main() -> None:
        result = await sample_workflow("parallel_steps", InMemoryCheckpointStorage()).run(message)
        assert result.get_outputs() == [expected]

    arun(main())


def test_fan_out_default_is_a_hundred_parallel_steps_then_a_reduce(storage: Any) -> None:
    async def main() -> None:
        result = await sample_workflow("fan_out", storage).run()
        assert result.get_outputs() == [{"count": 100, "sum_of_squares": 328350}]
        assert sorted(result.executed) == sorted([f"square#{i}" for i in range(100)] + ["total#0"])
        assert_one_chain(await storage.list_checkpoints(run_id=result.run_id))

    arun(main())


def test_human_review_pauses_then_publishes_or_rejects(storage: Any) -> None:
    async def main() -> None:
        wf = sample_workflow("human_review", storage)
        paused = await wf.run({"topic": "cats"})
        assert paused.status == "paused"
        [request] = paused.get_request_info_events()
        assert request.request_id == "request#0" and request.response_type is str
        assert request.request_data["draft"].startswith("Cats. Why cats matter")
        published = await wf.run(checkpoint_id=paused.checkpoint_id, responses={"request#0": "yes"})
        assert published.status == "completed" and published.run_id == paused.run_id
        [out] = published.get_outputs()
        assert out["status"] == "published" and out["title"] == "Cats" and out["words"] == 26
        # Only what follows the question ran on resume; the draft came from the record.
        assert list(published.executed) == ["publish#0"]
        assert sorted(published.cached) == ["draft#0", "outline#0"]
        assert_one_chain(await storage.list_checkpoints(run_id=paused.run_id))

        again = await wf.run()
        rejected = await wf.run(checkpoint_id=again.checkpoint_id, responses={"request#0": "no"})
        assert rejected.get_outputs() == [
            {"status": "rejected", "title": "Durable Workflows", "reason": "no"}
        ]

    arun(main())


def test_af_review_loop_answering_runs_no_agent_again(storage: Any) -> None:
    async def main() -> None:
        wf = sample_workflow("af_review_loop", storage)
        paused = await wf.run()
        [request] = paused.get_request_info_events()
        assert request.request_id == "approval"
        assert request.request_data["draft"] == (
            "Durable workflows matter. Here is an example (add an example)."
        )
        rejected = await wf.run(responses={"approval": "not yet"})
        [out] = rejected.get_outputs()
        assert out["status"] == "rejected" and out["reason"] == "not yet"
        assert list(rejected.executed) == []
        assert sorted(rejected.cached) == ["review#0", "review#1", "write#0", "write#1"]
        assert_one_chain(await storage.list_checkpoints(run_id=paused.run_id))

    arun(main())


def test_file_pipeline_summarises_and_writes_outside_the_repo(storage: Any, tmp_path: Path) -> None:
    source = tmp_path / "in"
    source.mkdir()
    (source / "a.txt").write_text("one two two\nthree\n", encoding="utf-8")
    (source / "b.txt").write_text("two three\n", encoding="utf-8")
    (source / "ignored.md").write_text("not a text file for this pipeline", encoding="utf-8")

    async def main() -> dict[str, Any]:
        wf = sample_workflow("file_pipeline", storage)
        result = await wf.run({"source": str(source), "output": str(tmp_path / "out")})
        assert result.status == "completed", result.error
        assert {"read_file@a.txt", "read_file@b.txt", "count_words@a.txt"} <= set(result.executed)
        [summary] = result.get_outputs()
        assert isinstance(summary, dict)
        return summary

    summary = arun(main())
    assert summary["files"] == 2 and summary["lines"] == 3 and summary["words"] == 6
    assert summary["top_words"] == [["two", 3], ["three", 2], ["one", 1]]
    assert summary["per_file"] == {
        "a.txt": {"lines": 2, "words": 4},
        "b.txt": {"lines": 1, "words": 2},
    }
    written = Path(summary["output"])
    assert written == tmp_path / "out" / "summary.json"
    on_disk = json.loads(written.read_text(encoding="utf-8"))
    assert on_disk == {k: v for k, v in summary.items() if k != "output"}


def test_file_pipeline_default_data_and_output(storage: Any) -> None:
    module = load_sample("file_pipeline")

    async def main() -> dict[str, Any]:
        result = await sample_workflow("file_pipeline", storage).run()
        [summary] = result.get_outputs()
        assert isinstance(summary, dict)
        return summary

    summary = arun(main())
    assert summary["source"] == str(SAMPLES_DIR / "data")
    assert summary["files"] == 3 and summary["lines"] == 8 and summary["words"] == 88
    output = Path(summary["output"])
    assert output.parent == module.default_output_dir().resolve()
    assert not output.resolve().is_relative_to(SAMPLES_DIR.parent), "never write into the repo"


def test_samples_do_not_sleep() -> None:
    for path in SAMPLES_DIR.glob("*.py"):
        assert "sleep(" not in path.read_text(encoding="utf-8"), path.name


def test_outside_a_run_the_steps_are_plain_calls() -> None:
    module = load_sample("fan_out")
    assert asyncio.run(module.square(7)) == 49
