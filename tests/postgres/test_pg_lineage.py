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
from wfctl._inspect._lineage import verify_lineage
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


async def _save_run(
    store: PostgresCheckpointStorage, run_id: str, count: int, workflow: str = "wf", minute: int = 0
) -> None:
    """Save a run of ``count`` records: a root that records its code signature, then steps."""
    lease = await store.lease_run(run_id)
    for seq in range(count):
        data = {"signature": "s1", "workflow": "m:wf"} if seq == 0 else None
        await store.save(ckpt(run_id, seq, workflow=workflow, minute=minute, data=data))
    await lease.release()


async def _fill(store: PostgresCheckpointStorage) -> None:
    """Save each of :data:`_RUNS`: a root, then 3 steps."""
    for run_id, minute, workflow in _RUNS:
        await _save_run(store, run_id, 4, workflow, minute)


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


class _WholeReads:
    """The store without ``verified_records``: every run read whole (the old path)."""

    def __init__(self, inner: PostgresCheckpointStorage) -> None:
        self.inner = inner

    def __getattr__(self, name: str) -> Any:
        if name == "verified_records":
            raise AttributeError(name)
        return getattr(self.inner, name)


_SIG = {"signature": "s1", "workflow": "m:wf"}
_FROM = {**_SIG, "restored_from": "base.1"}
_STEP: dict[str, Any] = {"steps": []}  # the least a step record's data holds
#: Runs that are chains (the trigger takes them), each with a finding of a per-record rule:
#: each record's kind, data, workflow name and origin.
_Spec = tuple[str, dict[str, Any], str, tuple[str, str] | None]
_CHAINS: dict[str, list[_Spec]] = {
    "base": [
        ("root", _SIG, "wf", None),
        ("step", _STEP, "wf", None),
        ("completed", {}, "wf", None),
    ],
    "names": [
        ("root", _SIG, "wf", None),
        ("step", _STEP, "wf", None),
        ("step", _STEP, "odd", None),
    ],
    "after-end": [
        ("root", _SIG, "wf", None),
        ("completed", {}, "wf", None),
        ("step", _STEP, "wf", None),
        ("pause", {}, "wf", None),
        ("step", _STEP, "wf", None),
    ],
    "sig-resume": [
        ("root", _SIG, "wf", None),
        ("pause", {}, "wf", None),
        ("resume", {"signature": "s2"}, "wf", None),
    ],
    "sig-step": [("root", _SIG, "wf", None), ("step", {**_STEP, "signature": "s2"}, "wf", None)],
    "restored": [
        ("root", _FROM, "wf", ("base", "base.1")),
        ("step", _STEP, "wf", ("base", "base.1")),
        ("step", _STEP, "wf", ("base", "base.0")),
    ],
    "gone-origin": [("root", _SIG, "wf", ("gone", "gone.3"))],
}


async def _fill_chains(store: PostgresCheckpointStorage) -> None:
    for run_id, records in _CHAINS.items():
        lease = await store.lease_run(run_id)
        for seq, (kind, data, workflow, origin) in enumerate(records):
            await store.save(ckpt(run_id, seq, kind, workflow=workflow, data=data, origin=origin))
        await lease.release()


def test_a_chain_is_judged_as_it_is_read_with_the_whole_reads_verdict(
    pg_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A run named is read a page at a time and judged as read: the verdict the whole read
    gives, findings and notes included (the whole store is read in pages of whole runs)."""

    async def main() -> None:
        async with opened(pg_url) as store:
            await _fill_chains(store)
            whole = await verify_lineage(_WholeReads(store), list(_CHAINS))
            calls = _count_calls(monkeypatch, "read_run", "chain_page")
            report = await verify_lineage(store, list(_CHAINS))
            assert report == whole
            assert calls == {"read_run": 1, "chain_page": len(_CHAINS)}  # "gone" is tried
            every = await verify_lineage(store)
            assert sorted(every.runs, key=lambda v: v.run_id) == sorted(
                report.runs, key=lambda v: v.run_id
            )
            found = {v.run_id: (v.problems, v.notes) for v in report.runs}
            assert [run for run, (problems, _) in found.items() if not problems] == [
                "base",
                "sig-resume",
            ]
            assert found["sig-resume"][1] == (
                "code signature changed at sig-resume.2: s1 -> s2 (resumed with changed code "
                "allowed)",
            )
            assert "origin base.0 differs from the root's base.1" in found["restored"][0][0]

    arun(main())


def test_a_long_run_is_judged_a_page_at_a_time(
    pg_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    from wfctl._storage import _pages

    monkeypatch.setattr(_pages, "PAGE_RECORDS", 50)

    async def main() -> None:
        async with opened(pg_url) as store:
            await _save_run(store, "long", 420)
            calls = _count_calls(monkeypatch, "read_run", "chain_page")
            [verdict] = (await verify_lineage(store, ["long"])).runs
            assert verdict.ok and verdict.checkpoints == 420 and verdict.head == "long.419"
            assert calls == {"read_run": 0, "chain_page": 9}

    arun(main())


def test_a_run_that_ends_early_while_read_is_read_whole(
    pg_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Its pages end before the head read with its ends (a cut, here faked): the run is read
    again whole, and judged from that read."""
    from wfctl._storage import _pages

    monkeypatch.setattr(_pages, "PAGE_RECORDS", 2)
    real = PostgresCheckpointStorage.chain_page

    async def short(self: Any, run_id: str, after: int, last: int, limit: int) -> list[bytes]:
        page: list[bytes] = await real(self, run_id, after, last, limit)
        return page[:1] if after >= 1 else page

    async def main() -> None:
        async with opened(pg_url) as store:
            await _fill(store)
            monkeypatch.setattr(PostgresCheckpointStorage, "chain_page", short)
            calls = _count_calls(monkeypatch, "read_run")
            [verdict] = (await verify_lineage(store, ["a1"])).runs
            assert verdict.ok and verdict.checkpoints == 4
            assert calls == {"read_run": 1}

    arun(main())


def test_a_whole_store_reads_its_long_runs_by_themselves(
    pg_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A run of LONG_RUN records or more is not read into a page of runs: it is read by
    itself, a page of records at a time, and gets the verdict it gets in a page."""
    monkeypatch.setattr(_reads, "PAGE_RUNS", 3)

    async def main() -> None:
        async with opened(pg_url) as store:
            await _fill(store)  # runs of 4 records
            for run_id in ("s1", "s2"):  # runs of 3
                await _save_run(store, run_id, 3, minute=3)
            paged = await verify_lineage(store)
            monkeypatch.setattr(_reads, "LONG_RUN", 4)
            calls = _count_calls(monkeypatch, "read_run", "chain_page")
            assert await verify_lineage(store) == paged
            assert calls == {"read_run": 0, "chain_page": len(_RUNS)}
            assert paged.ok and [v.checkpoints for v in paged.runs] == [4] * len(_RUNS) + [3, 3]

    arun(main())
