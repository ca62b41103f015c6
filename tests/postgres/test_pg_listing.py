"""``wfctl runs`` of a PostgreSQL store: one statement, its rows fetched a batch at a time.

The listing's query is read through a server-side cursor, ``LIST_ROWS`` rows a fetch (made
small here), and each run is summarised once its rows are in: what is listed is what a run's
own summary says, whichever batch a run starts or ends in, and the listing never holds more
than one run's records and one batch.
"""

from __future__ import annotations

import psycopg
import pytest

from tests.cli.conftest import many_steps, wfctl
from tests.conftest import arun
from tests.postgres.conftest import opened
from wfctl._storage._postgres import _reads
from wfctl._storage._protocol import RunSummary


def _spoil(url: str, run_id: str, seq: int) -> None:
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(
            "UPDATE wfctl_checkpoints SET record = record || 'x'::bytea"
            " WHERE run_id = %s AND seq = %s",
            (run_id, seq),
        )


def test_runs_are_listed_a_batch_of_rows_at_a_time_as_each_is_summarised(
    pg_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    runs = [many_steps(pg_url, steps) for steps in (0, 1, 4, 9, 2)]  # 2 to 11 records each
    _spoil(pg_url, runs[3], 5)
    monkeypatch.setattr(_reads, "LIST_ROWS", 4)
    events: list[tuple[str, int]] = []  # ("fetch", rows fetched), ("summary", rows held)
    real_summary, real_fetch = _reads.PostgresReads._summary, psycopg.AsyncServerCursor.fetchmany

    def summary(self: _reads.PostgresReads, run_id: str, rows: list[object]) -> RunSummary:
        events.append(("summary", len(rows)))
        return real_summary(self, run_id, rows)

    async def fetch(self: psycopg.AsyncServerCursor[object], size: int = 0) -> list[object]:
        rows = await real_fetch(self, size)
        events.append(("fetch", len(rows)))
        return rows

    monkeypatch.setattr(_reads.PostgresReads, "_summary", summary)
    monkeypatch.setattr(psycopg.AsyncServerCursor, "fetchmany", fetch)

    async def read() -> tuple[list[RunSummary], list[RunSummary]]:
        async with opened(pg_url) as store:
            listed = await store.list_runs()
            return listed, [await store.run_summary(run_id) for run_id in runs]

    listed, each = arun(read())
    by_id = {s.run_id: s for s in listed}
    assert [by_id[run_id] for run_id in runs] == each  # each run as its own summary says
    assert [by_id[run_id].status for run_id in runs] == [
        "completed", "completed", "completed", "corrupt", "completed"
    ]  # fmt: skip
    summaries = [i for i, (what, _) in enumerate(events) if what == "summary"]
    listing = events[: summaries[len(runs) - 1] + 1]  # the listing's, not each run's own
    held = [n for what, n in listing if what == "summary"]
    assert held == [2, 3, 6, 11, 4]  # one run's rows at a time, in creation order
    fetched = [n for what, n in listing if what == "fetch"]
    assert max(fetched) == 4 and sum(fetched) == sum(held)  # a batch at a time
    # runs are summarised while later rows are still on the server, not after all are read
    assert listing.index(("summary", 2)) < listing.index(("fetch", 0)) - 1
    done = wfctl("runs", "--store", pg_url, "--json")
    assert done.code == 0, done.stderr
    assert {r["run_id"] for r in done.json()["runs"]} == set(runs)


def test_a_long_runs_own_summary_reads_its_records_a_page_at_a_time(
    pg_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``run_summary`` (``pause``, ``copy``) and ``list_runs`` (``runs``) of a run of LONG_RUN
    records or more verify it a page of records at a time, decoding its ends only: the summary
    a whole read gives, corrupt runs and moved head pointers included (those are read whole
    again, to say what is wrong)."""
    from wfctl._storage import _pages

    runs = [many_steps(pg_url, 8) for _ in range(3)]  # 10 records each
    _spoil(pg_url, runs[1], 5)
    with psycopg.connect(pg_url, autocommit=True) as conn:
        conn.execute("UPDATE wfctl_runs SET head_seq = 7 WHERE run_id = %s", (runs[2],))

    async def summaries() -> list[RunSummary]:
        async with opened(pg_url) as store:
            listed = sorted(await store.list_runs(), key=lambda summary: runs.index(summary.run_id))
            assert listed == [await store.run_summary(run_id) for run_id in runs]
            return listed

    whole = arun(summaries())
    assert [s.status for s in whole] == ["completed", "corrupt", "corrupt"]
    monkeypatch.setattr(_reads, "LONG_RUN", 4)
    monkeypatch.setattr(_pages, "PAGE_RECORDS", 3)
    pages: list[str] = []
    real = _reads.PostgresReads.chain_page

    async def chain_page(self: _reads.PostgresReads, run_id: str, *args: int) -> list[bytes]:
        pages.append(run_id)
        page: list[bytes] = await real(self, run_id, *args)
        return page

    monkeypatch.setattr(_reads.PostgresReads, "chain_page", chain_page)
    assert arun(summaries()) == whole
    assert pages.count(runs[0]) == 2 * 4  # listed, then alone: 10 records, 3 a page
    assert pages.count(runs[2]) == 0  # its head pointer disagrees: read whole at once
