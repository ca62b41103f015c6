"""A run recorded in format version 1, copied into PostgreSQL, reads and resumes there in version 1."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from tests.conftest import arun, failure_of
from tests.postgres.conftest import opened
from tests.storage.helpers import ckpt, rewrite_as_format_version_1
from wfctl import FileCheckpointStorage, step, workflow
from wfctl._inspect._copy import copy_runs
from wfctl._inspect._lineage import verify_lineage

_fail = {"on": False}


@step
async def triple(i: int) -> int:
    return 3 * i


@workflow(name="pg_versioned")
async def pg_versioned(n: int) -> int:
    total = 0
    for i in range(n):
        total += await triple(i)
    if _fail["on"]:
        raise RuntimeError("fail after the first steps")
    return total + await triple(n)


def test_a_version_1_run_copied_to_postgres_resumes_there_in_version_1(
    pg_url: str, tmp_path: Path
) -> None:
    files = FileCheckpointStorage(tmp_path, durability="none")
    _fail["on"] = True
    try:
        with pytest.raises(RuntimeError) as caught:
            arun(pg_versioned.build(checkpoint_storage=files).run(3))
    finally:
        _fail["on"] = False
        files.close()
    run_id = failure_of(caught).run_id
    rewrite_as_format_version_1(
        tmp_path / "runs" / run_id / "journal.jsonl", [(i,) for i in range(4)]
    )
    assert [run.outcome for run in copy_runs(tmp_path, pg_url).runs] == ["copied"]

    async def resume() -> None:
        async with opened(pg_url) as store:
            done = await pg_versioned.build(checkpoint_storage=store).resume(run_id)
            assert done.status == "completed"
            assert (len(done.cached), len(done.executed)) == (3, 1)
            chain = await store.load_chain(run_id)
            assert {c.version for c in chain} == {1}
            report = await verify_lineage(store, [run_id])
            assert report.ok, report

    arun(resume())


def test_a_postgres_record_in_another_version_than_its_root_is_named(pg_url: str) -> None:
    async def main() -> None:
        async with opened(pg_url) as store:
            lease = await store.lease_run("mixed")
            await store.save(ckpt("mixed", 0))
            await store.save(dataclasses.replace(ckpt("mixed", 1), version=1))
            await lease.release()
            journal = await store.read_run("mixed")
            assert [c.seq for c in journal.checkpoints] == [0]
            (problem,) = journal.problems
            assert problem.reason == "record is in format version 1, its run's root in 4"
            assert not (await verify_lineage(store, ["mixed"])).ok

    arun(main())
