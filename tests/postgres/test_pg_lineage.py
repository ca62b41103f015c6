"""``verify-lineage`` of a whole PostgreSQL store: pages of whole runs, each with its head.

Before, it listed every run (reading every record), then read each run again and asked for
its head: two round trips a run after a listing that read everything once already. Now one
statement reads a page of runs whole, each with the head pointer of the same snapshot.
"""

from __future__ import annotations

from typing import Any

import psycopg
import pytest

from tests.postgres.conftest import opened
from tests.storage.helpers import arun, ckpt
from wfctl._lineage import verify_lineage
from wfctl._storage._postgres import PostgresCheckpointStorage, _reads

#: (run id, creation minute, workflow): ties in creation time fall across page boundaries.
_RUNS = [
    ("a1", 0, "a"),
    ("a2", 0, "b"),
    ("a3", 0, "a"),
    ("b1", 1, "a"),
    ("b2", 1, "b"),
    ("c1", 2, "a"),
    ("c2", 2, "a"),
]


async def _fill(store: PostgresCheckpointStorage) -> None:
    """Save each of :data:`_RUNS`: a root that records its code signature, then 3 steps."""
    for run_id, minute, workflow in _RUNS:
        lease = await store.lease_run(run_id)
        for seq in range(4):
            data = {"signature": "s1", "workflow": "m:wf"} if seq == 0 else {}
            await store.save(ckpt(run_id, seq, workflow=workflow, minute=minute, data=data))
        await lease.release()


def _count_calls(monkeypatch: pytest.MonkeyPatch, *names: str) -> dict[str, int]:
    calls = dict.fromkeys(names, 0)
    for name in names:
        real = getattr(PostgresCheckpointStorage, name)

        def counted(self: Any, *args: Any, _name: str = name, _real: Any = real, **kw: Any) -> Any:
            calls[_name] += 1
            return _real(self, *args, **kw)

        monkeypatch.setattr(PostgresCheckpointStorage, name, counted)
    return calls


def test_every_run_is_read_once_in_pages_with_its_head(
    pg_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(_reads, "PAGE_RUNS", 3)  # 7 runs: pages of 3, 3 and 1

    async def main() -> None:
        async with opened(pg_url) as store:
            await _fill(store)
            listed = [summary.run_id for summary in await store.list_runs()]
            calls = _count_calls(monkeypatch, "read_run", "get_latest", "list_runs")
            report = await verify_lineage(store)
            assert calls == {"read_run": 0, "get_latest": 0, "list_runs": 0}
            assert [verdict.run_id for verdict in report.runs] == listed
            assert report.ok and all(verdict.checkpoints == 4 for verdict in report.runs)

            only_a = await verify_lineage(store, workflow_name="a")
            assert [v.run_id for v in only_a.runs] == [r for r in listed if r not in ("a2", "b2")]

    arun(main())


def test_a_head_pointer_that_disagrees_is_found_without_asking_for_it(
    pg_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The head read with the records is compared, whether the whole store or one run is read."""

    async def main() -> None:
        async with opened(pg_url) as store:
            await _fill(store)
            with psycopg.connect(pg_url, autocommit=True) as conn:  # a head moved back by hand
                conn.execute("UPDATE wfctl_runs SET head_seq = 2 WHERE run_id = 'b1'")
            calls = _count_calls(monkeypatch, "get_latest")
            for report in (await verify_lineage(store), await verify_lineage(store, ["b1"])):
                [broken] = [verdict for verdict in report.runs if not verdict.ok]
                assert broken.run_id == "b1"
                assert any("the run's head is seq 2 but it holds 4" in p for p in broken.problems)
                assert any(
                    "head pointer: the storage's head is seq 2" in p for p in broken.problems
                )
            assert calls == {"get_latest": 0}

    arun(main())


def test_runs_whose_row_lost_its_creation_time_are_verified_too(
    pg_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """No key orders them, so they are read last, in pages of their own: none is left out."""
    monkeypatch.setattr(_reads, "PAGE_RUNS", 3)

    async def main() -> None:
        async with opened(pg_url) as store:
            await _fill(store)
            with psycopg.connect(pg_url, autocommit=True) as conn:  # rows changed by hand
                conn.execute(
                    "UPDATE wfctl_runs SET created = NULL WHERE run_id IN ('a1', 'b1', 'b2', 'c2')"
                )
            report = await verify_lineage(store)
            assert [verdict.run_id for verdict in report.runs] == [
                *("a2", "a3", "c1"),
                *("a1", "b1", "b2", "c2"),
            ]
            assert report.ok

    arun(main())
