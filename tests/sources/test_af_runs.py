"""An agent-framework directory written by the real engine, read as runs: chains of a
workflow's checkpoints (a fork's roots one run, two runs of a workflow two), their states, the
facts ``log`` shows of each checkpoint (iterations, messages, requests, the step cache), ids by
their start, a checkpoint the framework skipped, ties on timestamps, and Cosmos DB exports."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from tests.sources.af_stores import ASK, af_store, cosmos_copy
from wfctl import CheckpointNotFoundError, RunNotFoundError, WfctlError
from wfctl._errors import AmbiguousRunError
from wfctl.sources import Entry, RunInfo, open_source

__all__ = ["af_store"]  # the session's store, a fixture of these tests


def _runs(directory: Path) -> dict[str, list[RunInfo]]:
    with open_source(directory) as source:
        runs: dict[str, list[RunInfo]] = {}
        for info in sorted(source.runs(), key=lambda i: i.created_at):
            runs.setdefault(info.workflow, []).append(info)
        return runs


def _records(directory: Path, run_id: str) -> list[Entry]:
    with open_source(directory) as source:
        return list(source.records(run_id))


def test_runs_are_chains_of_a_workflow(af_store: Path) -> None:
    runs = _runs(af_store)
    states = {name: [(r.status, r.record_count) for r in infos] for name, infos in runs.items()}
    assert states == {
        "approval": [("completed", 5), ("paused", 3)],  # answered; then one left waiting
        "skip": [("completed", 3)],
        "fan": [("completed", 4), ("completed", 3)],  # parallel steps: 3 roots, then 2
        "review": [("completed", 3), ("paused", 2)],  # answered, then one left waiting
    }
    assert len({info for infos in runs.values() for info in infos}) == 7  # hashable, with facts
    answered, waiting = runs["approval"]
    assert answered.details == {"iterations": 3} and answered.problem is None
    assert waiting.details == {"iterations": 2, "pending_requests": 1}
    assert [r.details for r in runs["fan"]] == [{"steps": 3}, {"steps": 2}]
    assert [r.details for r in runs["review"]] == [
        {"steps": 1},
        {"steps": 1, "pending_requests": 1},
    ]
    first, second = runs["fan"]
    assert first.problem is not None and first.problem.startswith("3 roots (exactly one")
    assert second.problem is not None and second.problem.startswith("2 roots (exactly one")
    answered_review = runs["review"][0]  # answers alone start a new root: still its run
    assert answered_review.problem is not None
    assert answered_review.problem.startswith("2 roots (exactly one")
    kinds = [(e.kind, len(e.parent_ids)) for e in _records(af_store, answered_review.run_id)]
    assert kinds == [("checkpoint", 0), ("request", 1), ("checkpoint", 0)]
    for infos in runs.values():
        for info in infos:  # a run is named by its first checkpoint
            assert _records(af_store, info.run_id)[0].entry_id == info.run_id
            assert info.size_bytes == sum(e.size_bytes for e in _records(af_store, info.run_id))


def test_a_paused_then_answered_graph_run(af_store: Path) -> None:
    answered = _runs(af_store)["approval"][0]
    entries = _records(af_store, answered.run_id)
    assert [e.summary["iteration"] for e in entries] == [0, 1, 2, 2, 3]  # pause, then answer
    assert [e.parent_ids for e in entries[1:]] == [(e.entry_id,) for e in entries[:-1]]
    start, upper, asked, answer, end = (e.summary for e in entries)
    assert (start["nodes"], start["messages"]) == ([], ['internal:upper → upper: "hello"'])
    assert (upper["nodes"], upper["messages"]) == (["upper"], ['upper → *: "HELLO"'])
    (request_id,) = asked["pending_request_ids"]
    assert asked["requests"] == [
        f'{request_id}: {ASK.replace(":", ".")} {{"text": "HELLO"}} (from approver)'
    ]
    assert answer["messages"] == ['internal:approver → approver [response]: "yes"']
    assert end["messages"] == [] and end["requests"] == []
    marker = entries[2].data["pending_request_info_events"][request_id]
    assert marker["$opaque"] == "pickle" and marker["reading"]["data"] == {
        "$type": ASK.replace(":", "."),
        "text": "HELLO",
    }


def test_the_step_cache_is_read_by_step_and_call(af_store: Path) -> None:
    forked = _runs(af_store)["fan"][0]
    entries = _records(af_store, forked.run_id)
    added = [e.summary["steps"] for e in entries]
    assert [len(steps) for steps in added] == [1, 1, 1, 0]  # each save adds its step
    values = sorted(step.split(" = ")[1] for steps in added for step in steps)
    assert values == ["0", "2", "4"]  # double(0), double(1), double(2)
    assert all(step.startswith("double[") and "]#0 = " in step for s in added for step in s)
    assert [e.summary["step_count"] for e in entries] == [1, 2, 3, 3]
    assert [len(e.parent_ids) for e in entries] == [0, 0, 0, 1]  # the seeds' fork
    review = _records(af_store, _runs(af_store)["review"][1].run_id)
    (made,) = review[0].summary["steps"]
    assert made.endswith(' = tests.sources.test_agent_framework_source.Thing {"value": 2}')


def test_runs_are_found_by_id_start_or_their_workflow_s_name(af_store: Path) -> None:
    runs = _runs(af_store)
    with open_source(af_store) as source:
        review = runs["review"][1].run_id
        assert [e.run_id for e in source.records(review[:8])] == [review, review]
        (skip,) = runs["skip"]
        assert next(source.records("skip")).run_id == skip.run_id  # the workflow's one run
        with pytest.raises(RunNotFoundError) as many:
            source.records("fan")  # two runs: their ids are suggested
        assert str(many.value).startswith("run 'fan' not found; did you mean ")
        assert all(r.run_id in str(many.value) for r in runs["fan"])
        ids = [info.run_id for infos in runs.values() for info in infos]
        shared = _shared_start(ids)
        if shared is not None:  # uuid4s: two runs starting alike is likely, not certain
            with pytest.raises(AmbiguousRunError, match="give more of it"):
                source.records(shared)
        entry = source.record(review[:8])
        assert entry.entry_id == review and entry.order == 0
        checkpoints = [file.stem for file in af_store.glob("*.json")]
        assert len(checkpoints) > 16  # so two of these uuid4s start with the same hex digit
        shared = _shared_start(checkpoints)
        assert shared is not None
        with pytest.raises(WfctlError, match=f"checkpoint id '{shared}' is ambiguous: "):
            source.record(shared)
        with pytest.raises(CheckpointNotFoundError):
            source.record("zzzz")


def _shared_start(ids: list[str]) -> str | None:
    """The first character two of ``ids`` start with, if any."""
    return next((a[:1] for a in ids for b in ids if a != b and a[:1] == b[:1]), None)


def test_a_skipped_checkpoint_is_named(af_store: Path) -> None:
    """agent-framework refuses to save the checkpoint of iteration 1 (a message of a type
    outside the allowlist) and parents iteration 2's to iteration 0's: a gap a reader sees."""
    (run,) = _runs(af_store)["skip"]
    entries = _records(af_store, run.run_id)
    assert [e.summary["iteration"] for e in entries] == [0, 2, 3]
    with open_source(af_store) as source:
        (verdict,) = source.verify(run.run_id).runs
    assert verdict.problems == (
        f"{entries[1].entry_id}.json: iteration 2 follows its parent's 0: the checkpoint of "
        "iteration 1 was not saved (agent-framework skips a checkpoint it cannot encode and "
        "parents the next one to the last it saved)",
    )


def test_checkpoints_sharing_a_timestamp_are_noted(af_store: Path, tmp_path: Path) -> None:
    """get_latest orders by timestamp: a tie may restore the older checkpoint."""
    copy = tmp_path / "tie"
    shutil.copytree(af_store, copy)
    answered = _runs(copy)["approval"][0]
    entries = _records(copy, answered.run_id)
    stamp = entries[-2].time  # the answer's checkpoint and the last get the same time
    last = copy / f"{entries[-1].entry_id}.json"
    last.write_text(json.dumps(json.loads(last.read_text()) | {"timestamp": stamp}))
    with open_source(copy) as source:
        (verdict,) = source.verify(answered.run_id).runs
        others = [v for v in source.verify().runs if v.run_id != answered.run_id]
    assert verdict.ok and verdict.head == entries[-1].entry_id  # the leaf of the two
    (note,) = verdict.notes
    assert note.startswith("2 checkpoints share the timestamp ") and entries[-1].entry_id in note
    assert all(not v.notes for v in others)


def test_cosmos_db_exports_read_the_same(af_store: Path, tmp_path: Path) -> None:
    cosmos = tmp_path / "cosmos"
    cosmos_copy(af_store, cosmos)
    files, exported = _runs(af_store), _runs(cosmos)
    assert {
        name: [(r.run_id, r.status, r.record_count, r.details) for r in infos]
        for name, infos in exported.items()
    } == {
        name: [(r.run_id, r.status, r.record_count, r.details) for r in infos]
        for name, infos in files.items()
    }
    with open_source(cosmos) as source, open_source(af_store) as plain:
        assert [v.ok for v in source.verify().runs] == [v.ok for v in plain.verify().runs]
        review = exported["review"][0].run_id
        assert [e.summary for e in source.records(review)] == [
            {**e.summary, "file": f"review_{e.entry_id}.json"} for e in plain.records(review)
        ]
    paused = exported["review"][1].run_id
    wrong = cosmos / f"review_{paused}.json"
    wrong.write_text(json.dumps(json.loads(wrong.read_text()) | {"id": "elsewhere"}))
    with open_source(cosmos) as source:
        (verdict,) = source.verify(paused).runs
    assert verdict.problems == (
        f"{wrong.stem.removeprefix('review_')} (in {wrong.name}): document id 'elsewhere' is "
        f"not {wrong.stem}, as the Cosmos DB storage writes it",
    )
