"""verify_lineage over live runs, changed stores and hand-made journals (wfctl._inspect._lineage)."""

from __future__ import annotations

import asyncio
from collections.abc import Generator
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import arun
from tests.inspect.helpers import FIXTURES, JournalStorage, chain, copy_fixture, rec
from wfctl import (
    FileCheckpointStorage,
    InMemoryCheckpointStorage,
    InvalidIdError,
    RunContext,
    step,
    workflow,
)
from wfctl._inspect._lineage import LineageReport, verify_lineage
from wfctl._records._checkpoint import Checkpoint
from wfctl._storage._protocol import JournalProblem, RunJournal


@step
async def double(i: int) -> int:
    await asyncio.sleep(0)
    return i * 2


@workflow(name="fan")
async def fan(n: int) -> list[int]:
    return list(await asyncio.gather(*(double(i) for i in range(n))))


@workflow(name="solo")
async def solo(n: int) -> int:
    return await double(n)


def problems(report: LineageReport) -> list[str]:
    return [p for verdict in report.runs for p in verdict.problems]


@pytest.mark.parametrize("kind", ["file", "memory"])
def test_live_gather_of_50_steps_verifies_ok(kind: str, tmp_path: Path) -> None:
    async def main() -> None:
        storage: Any = (
            FileCheckpointStorage(tmp_path) if kind == "file" else InMemoryCheckpointStorage()
        )
        result = await fan.build(storage).run(50, run_id="fan-50")
        assert result.status == "completed"
        report = await verify_lineage(storage)
        assert report.ok, report.to_json()
        (verdict,) = report.runs
        assert (verdict.run_id, verdict.workflow_name, verdict.head) == (
            "fan-50",
            "fan",
            result.checkpoint_id,
        )
        assert verdict.checkpoints == len(await storage.list_checkpoints(run_id="fan-50"))

    arun(main())


def test_unknown_run_is_a_verdict_not_an_exception(tmp_path: Path) -> None:
    report = arun(verify_lineage(FileCheckpointStorage(FIXTURES / "healthy"), ["nope", "paused"]))
    assert [(v.run_id, v.ok, v.problems) for v in report.runs] == [
        ("nope", False, ("run not found",)),
        ("paused", True, ()),
    ]
    assert report.runs[0].to_json()["workflow"] is None and not report.ok


@pytest.mark.parametrize("bad", ["../etc", "a/b", "", "x.1", "a\0b"])
def test_invalid_run_id_raises_before_reading(bad: str) -> None:
    storage = JournalStorage()
    with pytest.raises(InvalidIdError):
        arun(verify_lineage(storage, ["ok-run", bad]))
    assert storage.reads == []


def test_a_single_run_id_string_is_one_run() -> None:
    report = arun(verify_lineage(FileCheckpointStorage(FIXTURES / "healthy"), "paused"))
    assert [v.run_id for v in report.runs] == ["paused"]


def test_workflow_filter(tmp_path: Path) -> None:
    async def main() -> None:
        storage = FileCheckpointStorage(tmp_path)
        await fan.build(storage).run(3, run_id="f1")
        await solo.build(storage).run(3, run_id="s1")
        await fan.build(storage).run(2, run_id="f2")
        only_fan = await verify_lineage(storage, workflow_name="fan")
        assert sorted(v.run_id for v in only_fan.runs) == ["f1", "f2"]
        named = await verify_lineage(storage, ["s1", "f1"], workflow_name="solo")
        assert [v.run_id for v in named.runs] == ["s1"]
        assert (await verify_lineage(storage, workflow_name="other")).runs == ()

    arun(main())


def test_workflow_filter_on_the_healthy_fixture() -> None:
    report = arun(
        verify_lineage(FileCheckpointStorage(FIXTURES / "healthy"), workflow_name="review")
    )
    assert sorted(v.run_id for v in report.runs) == ["answered", "paused"] and report.ok


def test_deleted_origin_is_a_problem(tmp_path: Path) -> None:
    storage = FileCheckpointStorage(copy_fixture("healthy", tmp_path))
    assert arun(storage.delete_run("completed"))
    verdict = arun(verify_lineage(storage, ["restored"])).runs[0]
    assert verdict.problems == ("origin completed.1 not found (run 'completed' is gone)",)


def test_cut_origin_is_a_problem(tmp_path: Path) -> None:
    storage = FileCheckpointStorage(copy_fixture("healthy", tmp_path))
    assert arun(storage.delete("completed.1"))  # cuts the origin run at its seq 1
    report = arun(verify_lineage(storage))
    assert problems(report) == [
        "origin completed.1 not found among run 'completed''s readable records"
    ]


def test_each_journal_is_read_once() -> None:
    class Counting:
        def __init__(self, inner: Any) -> None:
            self.inner = inner
            self.reads: list[str] = []

        async def read_run(self, run_id: str) -> RunJournal:
            self.reads.append(run_id)
            journal: RunJournal = await self.inner.read_run(run_id)
            return journal

        def verified_records(self, run_id: str) -> tuple[str, None, Generator[Checkpoint]]:
            self.reads.append(run_id)
            found: tuple[str, None, Generator[Checkpoint]] = self.inner.verified_records(run_id)
            return found

        def __getattr__(self, name: str) -> Any:
            return getattr(self.inner, name)

    storage = Counting(FileCheckpointStorage(FIXTURES / "healthy"))
    assert arun(verify_lineage(storage)).ok
    assert sorted(storage.reads) == sorted(set(storage.reads)) and len(storage.reads) == 6


def test_changed_signature_on_resume_is_a_note(tmp_path: Path) -> None:
    async def main() -> None:
        storage = FileCheckpointStorage(tmp_path)

        @workflow(name="evolving")
        async def v1(ctx: RunContext) -> str:
            return str(await ctx.request_info("go?", str))

        @workflow(name="evolving")
        async def v2(ctx: RunContext) -> str:
            return "v2: " + str(await ctx.request_info("go?", str))

        paused = await v1.build(storage).run(run_id="evo")
        answers = {r.request_id: "yes" for r in paused.get_request_info_events()}
        done = await v2.build(storage).run(
            checkpoint_id=paused.checkpoint_id, responses=answers, allow_changed=True
        )
        assert done.get_outputs() == ["v2: yes"]
        (verdict,) = (await verify_lineage(storage)).runs
        assert verdict.ok
        (note,) = verdict.notes
        assert note.startswith(f"code signature changed at evo.2: {v1.signature} -> {v2.signature}")

    arun(main())


# -- hand-made journals: what a broken or foreign storage could hand back ----------------------


def verdict_of(*runs: list[Any], **kwargs: Any) -> Any:
    return arun(verify_lineage(JournalStorage.of(*runs, **kwargs))).runs[0]


def test_a_clean_hand_made_chain_is_ok() -> None:
    assert verdict_of(chain("r", ["root", "step", "pause", "resume", "completed"])).ok


@pytest.mark.parametrize(
    ("kinds", "fragment"),
    [
        (
            ["root", "completed", "step"],
            "r.2 (fake:r:3): a step record after r.1 (fake:r:2), which completed the run",
        ),
        (["root", "failed", "step"], "r.2 (fake:r:3): a step record after the failed record r.1"),
        (["root", "pause", "completed"], "a completed record after the pause record r.1"),
        (
            ["root", "pause", "cancelled", "resume"],
            "a resume record after r.2 (fake:r:3), which cancelled the run",
        ),
        (["root", "step", "root"], "r.2 (fake:r:3): a root record at seq 2"),
        (["step", "step"], "r.0 (fake:r:1): seq 0 is a step record, not the root"),
    ],
)
def test_kinds_must_make_sense(kinds: list[str], fragment: str) -> None:
    verdict = verdict_of(chain("r", kinds))
    assert any(fragment in p for p in verdict.problems), verdict.problems


@pytest.mark.parametrize(
    ("kind", "data", "reason"),
    [
        ("step", {"steps": "x"}, "step checkpoint without a steps list"),
        ("step", {"steps": [{"key": 1}]}, "step"),
        ("step", {"steps": [{"key": "a#0", "result": 1, "effects": {"state": [1]}}]}, "effects"),
        ("step", {"steps": [{"key": "a#0", "result": 1, "effects": {"outputs": 5}}]}, "effects"),
        ("resume", {"responses": []}, "resume checkpoint with invalid responses"),
        ("completed", {"outputs": "x"}, "completed checkpoint without outputs"),
    ],
)
def test_a_record_whose_data_does_not_read_is_a_problem(
    kind: str, data: dict[str, Any], reason: str
) -> None:
    # Its checksum holds (a faulty writer, or an edit that recomputed it): log, show and a
    # resume refuse such a record, and verify-lineage used to call its run ok.
    records = chain("r", ["root", "step", "pause", "resume", "completed"])
    seq = {"step": 1, "resume": 3, "completed": 4}[kind]
    records[seq] = rec("r", seq, kind, data=data)
    [problem] = verdict_of(records).problems
    assert problem.startswith(f"r.{seq} (fake:r:{seq + 1}): its {kind} data does not read: ")
    assert reason in problem


def test_failed_may_be_retried() -> None:
    assert verdict_of(chain("r", ["root", "failed", "resume", "step", "completed"])).ok


@pytest.mark.parametrize("before", ["pause", "failed", "step", "resume", "root"])
def test_a_paused_failed_or_interrupted_run_may_end_cancelled(before: str) -> None:
    kinds = ["root", "step", "pause", "resume", before] if before != "root" else ["root"]
    assert verdict_of(chain("r", [*kinds, "cancelled"])).ok


def test_gap_and_out_of_order_records() -> None:
    records = chain("r", ["root", "step", "step", "step", "completed"])
    verdict = verdict_of([records[0], records[2], records[1], records[4]])
    assert verdict.problems == (
        "r.1 (fake:r:3): stored after r.2 (fake:r:2) (out of seq order)",
        "seq not contiguous: no record for r.3",
        "3 record(s) unreachable from the head r.4 (fake:r:4): r.0 (fake:r:1), r.2 (fake:r:2), "
        "r.1 (fake:r:3)",
    )


def test_parent_in_another_run_and_a_root_with_a_parent() -> None:
    records = chain("r", ["root", "step", "completed"])
    records[0] = rec("r", 0, parent="q.4")
    records[2] = rec("r", 2, "completed", parent="q.1")
    verdict = verdict_of(records)
    assert "r.0 (fake:r:1): the root names a parent, 'q.4'" in verdict.problems
    assert "r.2 (fake:r:3): parent is 'q.1' (in run 'q'), not 'r.1'" in verdict.problems
    assert "0 roots (exactly one expected)" in verdict.problems


def test_head_not_highest_and_head_pointer_disagreeing() -> None:
    records = chain("r", ["root", "step", "step"])
    verdict = verdict_of(records, heads={"r": records[1]})
    assert verdict.problems == (
        "r.2 (fake:r:3): head pointer: the storage's latest checkpoint is r.1",
    )
    swapped = verdict_of([records[0], records[2], records[1]])
    assert "r.1 (fake:r:3): the head is not the highest seq: r.2 (fake:r:2) is" in swapped.problems


def test_workflow_name_and_signature_must_be_consistent() -> None:
    records = chain("r", ["root", "step", "step"])
    records[1] = rec("r", 1, workflow="other")
    records[2] = rec("r", 2, data={"signature": "s2", "steps": []})
    verdict = verdict_of(records)
    assert verdict.workflow_name == "wf"
    assert verdict.problems == (
        "r.1 (fake:r:2): workflow 'other', the run's is 'wf'",
        "r.2 (fake:r:3): a step record changes the code signature (only resume may)",
    )
    unsigned = verdict_of([rec("r", 0, data={})])
    assert unsigned.problems == ("r.0 (fake:r:1): the root records no code signature",)


def test_origin_must_be_on_every_record_and_exist() -> None:
    source = chain("src", ["root", "step", "completed"])
    origin = ("src", "src.1")
    restored = [rec("r", 0, origin=origin, data={"signature": "s", "restored_from": "src.1"})]
    restored += [rec("r", 1, origin=origin), rec("r", 2, "completed")]
    verdict = arun(verify_lineage(JournalStorage.of(source, restored), ["r"])).runs[0]
    assert verdict.problems == ("r.2 (fake:r:3): origin None differs from the root's src.1",)
    elsewhere = [rec("r", 0, origin=("src", "other.1"))]
    assert verdict_of(elsewhere).problems == ("origin other.1 is not in origin run 'src'",)
    other_wf = [rec("r", 0, origin=origin, workflow="wf2")]
    found = arun(verify_lineage(JournalStorage.of(source, other_wf), ["r"])).runs[0]
    assert found.problems == ("origin src.1 is of workflow 'wf', not 'wf2'",)


def test_storage_problems_are_problems_and_a_torn_tail_a_note() -> None:
    records = chain("r", ["root", "step", "step"])
    journal = RunJournal(
        "r",
        (records[0], records[2]),
        (JournalProblem("fake:r:2", "checksum mismatch (record says 0, content is 1)", 2),),
        torn_tail=7,
        source="fake:r",
    )
    verdict = arun(verify_lineage(JournalStorage(journal))).runs[0]
    assert verdict.problems[0] == "fake:r:2: checksum mismatch (record says 0, content is 1)"
    # Locations skip the rejected line: the record after it is line 3.
    assert "seq not contiguous: no record for r.1" in verdict.problems
    assert any("r.2 (fake:r:3)" in p for p in verdict.problems)
    assert verdict.notes == (
        "torn tail: 7 byte(s) after the last committed record of fake:r "
        "(a write cut short by a crash, never committed)",
    )


def test_a_journal_with_no_readable_record() -> None:
    journal = RunJournal("r", (), (JournalProblem("fake:r:1", "invalid JSON", 1),), source="fake:r")
    verdict = arun(verify_lineage(JournalStorage(journal))).runs[0]
    assert (verdict.ok, verdict.head, verdict.checkpoints) == (False, None, 0)
    assert verdict.problems == ("fake:r:1: invalid JSON", "the run holds no readable checkpoint")


def test_long_lists_are_abbreviated() -> None:
    records = chain("r", ["root"] + ["step"] * 30)
    verdict = verdict_of([*records, rec("r", 31, parent=False)])
    lost = next(p for p in verdict.problems if "unreachable" in p)
    assert lost.startswith("31 record(s) unreachable") and lost.endswith(" and 21 more")


def test_100_runs_of_100_steps_read_each_journal_once(tmp_path: Path) -> None:
    """Structural, not timed: one read per run (the journals are written directly)."""
    from wfctl._storage._journal import encode_record

    for n in range(100):
        run_dir = tmp_path / "runs" / f"run-{n}"
        run_dir.mkdir(parents=True)
        kinds = ["root"] + ["step"] * 98 + ["completed"]
        lines = b"".join(encode_record(c) for c in chain(f"run-{n}", kinds))
        (run_dir / "journal.jsonl").write_bytes(lines)
    storage = FileCheckpointStorage(tmp_path)
    reads: list[str] = []
    original, streamed = storage.read_run, storage.verified_records

    async def counting(run_id: str) -> RunJournal:
        reads.append(run_id)
        return await original(run_id)

    def counting_streamed(run_id: str) -> tuple[str, None, Generator[Checkpoint]]:
        reads.append(run_id)
        return streamed(run_id)

    storage.read_run = counting  # type: ignore[method-assign]
    storage.verified_records = counting_streamed  # type: ignore[method-assign]
    report = arun(verify_lineage(storage))
    assert report.ok and len(report.runs) == 100
    assert sorted(reads) == sorted(f"run-{n}" for n in range(100))
    assert {v.checkpoints for v in report.runs} == {100}


class _Meanwhile:
    """A real storage, and what another process does to a run between reads of the check.

    ``before_head`` runs once, when the head of a run is first asked for (after its records were
    read); ``after_listing`` once, right after the store's runs are listed.
    """

    def __init__(self, inner: FileCheckpointStorage) -> None:
        self.inner = inner
        self.before_head: Any = None
        self.after_listing: Any = None

    async def get_latest(self, **kwargs: Any) -> Any:
        work, self.before_head = self.before_head, None
        if work is not None:
            await work()
        return await self.inner.get_latest(**kwargs)

    async def list_runs(self, **kwargs: Any) -> Any:
        runs = await self.inner.list_runs(**kwargs)
        work, self.after_listing = self.after_listing, None
        if work is not None:
            await work()
        return runs

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


@workflow(name="asks")
async def _asks(ctx: RunContext) -> str:
    return str(await ctx.request_info("go?", str))


def _paused_run(path: Path) -> _Meanwhile:
    """A store holding run ``p``, paused for an answer, seen through :class:`_Meanwhile`."""
    storage = FileCheckpointStorage(path)
    arun(_asks.build(storage).run(run_id="p"))
    return _Meanwhile(storage)


def test_a_run_driven_on_while_it_is_verified_is_not_called_broken(tmp_path: Path) -> None:
    """The head is asked for after the records are read: a run resumed in between has a later
    head, which the records read (a prefix of the run, all verified) do not make a problem."""
    storage = _paused_run(tmp_path)

    async def resume() -> None:
        done = await _asks.build(storage.inner).run(
            checkpoint_id="p.1", responses={"request#0": "yes"}
        )
        assert done.status == "completed"

    storage.before_head = resume
    [verdict] = arun(verify_lineage(storage)).runs

    assert verdict.ok and verdict.problems == ()
    assert (verdict.head, verdict.checkpoints) == ("p.1", 2)  # root, pause: as read
    assert verdict.notes == (
        "went on while it was being verified (its head is now seq 3); its records up to p.1 "
        "were verified",
    )
    assert arun(verify_lineage(storage)).runs[0].head == "p.3"  # resume, completed


def test_a_run_removed_while_it_is_verified_is_a_note(tmp_path: Path) -> None:
    storage = _paused_run(tmp_path)

    async def remove() -> None:
        assert await storage.inner.delete_run("p")

    storage.before_head = remove
    [verdict] = arun(verify_lineage(storage)).runs
    assert verdict.ok and verdict.notes == (
        "removed while it was being verified (by a gc or an rm)",
    )


def test_a_listed_run_removed_before_its_read_is_a_note_and_a_named_one_not_found(
    tmp_path: Path,
) -> None:
    storage = _paused_run(tmp_path)

    async def remove() -> None:
        assert await storage.inner.delete_run("p")

    storage.after_listing = remove
    [verdict] = arun(verify_lineage(storage)).runs
    assert verdict.ok and verdict.checkpoints == 0
    assert verdict.notes == ("removed while it was being verified (by a gc or an rm)",)
    [named] = arun(verify_lineage(storage, ["p"])).runs
    assert named.problems == ("run not found",)


def test_a_report_that_verified_no_run_is_not_ok(storage: Any) -> None:
    # A check of nothing is not a pass: an empty storage, or a filter matching no run.
    from wfctl._inspect._query import RunQuery

    empty = arun(verify_lineage(storage))
    assert (empty.ok, empty.verified_count, empty.runs) == (False, 0, ())
    assert LineageReport().ok is False
    arun(_one_completed_run(storage))
    assert arun(verify_lineage(storage)).ok
    unmatched = arun(verify_lineage(storage, query=RunQuery(workflow="nomatch*")))
    assert (unmatched.ok, unmatched.verified_count) == (False, 0)
    matched = arun(verify_lineage(storage, query=RunQuery(workflow="on*")))
    assert matched.ok and [v.run_id for v in matched.runs] == ["r1"]


async def _one_completed_run(storage: Any) -> None:
    from wfctl import workflow

    @workflow(name="one")
    async def one(x: int) -> int:
        return x

    await one.build(checkpoint_storage=storage).run(1, run_id="r1")
