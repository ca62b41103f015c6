"""``log``, ``log --follow``, ``export`` and ``show`` of a PostgreSQL run: a page at a time.

One statement reads the run's root and head (the summary); the records are then read in pages
(``PagedRun.page_records`` of them a statement, made small here), each verified as the file
store verifies its journal: every checksum and link up to the last entry listed, the records
before a page checked without being decoded, none after it read. A record that fails is named
after the entries before it; a reader left unfinished still closes its connections and loop.
"""

from __future__ import annotations

import gc
import json
import math
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest

from tests.cli.conftest import many_steps, wfctl
from tests.conftest import arun
from tests.postgres.conftest import opened
from wfctl._errors import CheckpointCorruptError, CheckpointNotFoundError
from wfctl._inspect._documents import document, summary_json
from wfctl._inspect._entries import LogPage, log_entry
from wfctl._inspect._export import export_run
from wfctl._inspect._follow import FollowEnd, follow_run
from wfctl._inspect._log import run_log
from wfctl._inspect._show import show_checkpoint
from wfctl._storage import _follow as _storage_follow
from wfctl._storage._pages import PagedRun
from wfctl._storage._postgres._reads import PostgresReads

STEPS = 20  # records: the root, STEPS steps, the completed record
HEAD = STEPS + 1
PAGE = 3


@pytest.fixture
def long_run(pg_url: str, monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.setattr(PagedRun, "page_records", PAGE)
    return many_steps(pg_url, STEPS)


@pytest.fixture
def pages(monkeypatch: pytest.MonkeyPatch) -> list[tuple[int, int, int]]:
    """The ``(after_seq, last_seq, limit)`` of every page statement the store runs."""
    asked: list[tuple[int, int, int]] = []
    real = PostgresReads.chain_page

    async def counted(self: PostgresReads, run_id: str, *page: int) -> list[bytes]:
        asked.append(page)  # type: ignore[arg-type]
        return await real(self, run_id, *page)

    monkeypatch.setattr(PostgresReads, "chain_page", counted)
    return asked


def _chain(url: str, run_id: str) -> list[Any]:
    async def read() -> list[Any]:
        async with opened(url) as store:
            return await store.load_chain(run_id)

    return arun(read())


def _summary(url: str, run_id: str) -> Any:
    async def read() -> Any:
        async with opened(url) as store:
            return await store.run_summary(run_id)

    return arun(read())


def _spoil(url: str, run_id: str, seq: int) -> None:
    """Change one character of a step record (its checksum then fails)."""
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(
            "UPDATE wfctl_checkpoints SET record = convert_to(replace("
            "convert_from(record, 'UTF8'), '\"step\"', '\"stap\"'), 'UTF8')"
            " WHERE run_id = %s AND seq = %s",
            (run_id, seq),
        )


@pytest.mark.parametrize(
    "page",
    [
        LogPage(),
        LogPage(last=5),
        LogPage(from_seq=7, limit=4),
        LogPage(from_seq=5, limit=1),  # a page's last record at a statement's last
        LogPage(from_seq=HEAD + 3),
        LogPage(limit=0),
    ],
)
def test_a_page_lists_what_the_whole_chain_lists_reading_no_further(
    pg_url: str, long_run: str, pages: list[tuple[int, int, int]], page: LogPage
) -> None:
    chain = _chain(pg_url, long_run)
    log = run_log(pg_url, long_run, page=page)
    assert log.summary == _summary(pg_url, long_run)
    assert pages == []  # the summary read the ends only
    listed = page.seqs(HEAD)
    assert list(log.entries) == [log_entry(cp) for cp in chain[listed.start : listed.stop]]
    if not listed:
        assert pages == []
        return
    # from seq 0 (each record before the page verified), up to the page's last, no further
    last = listed[-1]
    assert {asked[1:] for asked in pages} == {(last, PAGE)}
    assert [asked[0] for asked in pages] == list(range(-1, last, PAGE))
    assert len(pages) == math.ceil((last + 1) / PAGE)


def test_a_failing_record_is_named_after_the_entries_before_it(pg_url: str, long_run: str) -> None:
    _spoil(pg_url, long_run, 7)
    shown: list[int] = []
    entries = run_log(pg_url, long_run).entries
    with pytest.raises(CheckpointCorruptError, match="checksum mismatch") as raised:
        shown.extend(entry.seq for entry in entries)  # keeps those yielded before the error
    assert shown == list(range(7))
    assert raised.value.where == f"{_where(pg_url, long_run)}:8"
    with pytest.raises(CheckpointCorruptError, match="checksum mismatch"):
        list(run_log(pg_url, long_run, page=LogPage(last=3)).entries)  # before the page: named
    done = wfctl("log", long_run, "--last", "3", "--store", pg_url)
    assert done.code == 2 and f"run {long_run}:8: checksum mismatch" in done.error_line()
    assert f"{long_run}." not in done.stdout  # nothing of the page was shown before it
    after = wfctl("log", long_run, "--limit", "5", "--store", pg_url, "--json")
    assert after.code == 0, after.stderr  # a record after the page is not read
    assert [c["seq"] for c in after.json()["checkpoints"]] == [0, 1, 2, 3, 4]


def _where(url: str, run_id: str) -> str:
    """How the store names a run in errors: ``<location> run <id>``."""
    from wfctl.storage import open_storage

    return f"{open_storage(url).location} run {run_id}"


def test_a_missing_record_is_named_where_the_chain_breaks(pg_url: str, long_run: str) -> None:
    with psycopg.connect(pg_url, autocommit=True) as conn:
        conn.execute("DELETE FROM wfctl_checkpoints WHERE run_id = %s AND seq = 4", (long_run,))
    with pytest.raises(CheckpointCorruptError) as raised:
        list(run_log(pg_url, long_run).entries)
    assert raised.value.where == f"{_where(pg_url, long_run)}:5"
    done = wfctl("log", long_run, "--store", pg_url, "--json")
    assert done.code == 2 and done.error_line().startswith("wfctl: ")


def test_a_run_whose_ends_fail_is_read_whole_and_named_before_any_entry(
    pg_url: str, long_run: str
) -> None:
    with psycopg.connect(pg_url, autocommit=True) as conn:
        conn.execute(
            "UPDATE wfctl_checkpoints SET record = record || 'x'::bytea"
            " WHERE run_id = %s AND seq = %s",
            (long_run, HEAD),
        )
    with pytest.raises(CheckpointCorruptError) as raised:
        run_log(pg_url, long_run)  # before any entry is asked for
    assert raised.value.where.startswith(_where(pg_url, long_run))
    done = wfctl("log", long_run, "--store", pg_url)
    assert done.code == 2 and done.stdout == ""


@pytest.fixture
def readers(monkeypatch: pytest.MonkeyPatch) -> list[PagedRun]:
    """Every reader made."""
    made: list[PagedRun] = []
    real = PagedRun.__init__

    def recorded(self: PagedRun, *args: Any) -> None:
        real(self, *args)
        made.append(self)

    monkeypatch.setattr(PagedRun, "__init__", recorded)
    return made


def test_a_reader_closes_when_its_entries_end_or_are_dropped(
    pg_url: str, long_run: str, readers: list[PagedRun]
) -> None:
    list(run_log(pg_url, long_run).entries)
    [done] = readers
    assert not done.close.alive  # its store and loop closed with the last entry
    readers.clear()
    run_log(pg_url, long_run, page=LogPage(last=2))  # never iterated
    [dropped] = readers
    readers.clear()
    closes = dropped.close
    del dropped
    gc.collect()
    assert not closes.alive


def _followed(url: str, run_id: str, page: LogPage) -> Iterator[Any]:
    waits: list[float] = []
    yield from follow_run(url, run_id, page=page, sleep=waits.append)
    assert waits == []  # an ended run's backlog: each page read at once, no wait


def test_follow_reads_a_backlog_a_page_a_look_and_skips_ahead(
    pg_url: str, long_run: str, pages: list[tuple[int, int, int]], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(_storage_follow, "PAGE_RECORDS", PAGE)
    looks: list[tuple[int, int | None]] = []
    real = PostgresReads.follow_records

    async def counted(
        self: PostgresReads, run_id: str, after: int, limit: int | None = None
    ) -> Any:
        looks.append((after, limit))
        return await real(self, run_id, after, limit)

    monkeypatch.setattr(PostgresReads, "follow_records", counted)
    chain = _chain(pg_url, long_run)
    *entries, end = _followed(pg_url, long_run, LogPage(from_seq=10))
    assert entries == [log_entry(cp) for cp in chain[10:]]
    assert end == FollowEnd(long_run, "completed", f"{long_run}.{HEAD}")
    # the records before seq 10 checked in pages (not decoded), then a page a look from 9 on
    assert pages == [(-1, 9, PAGE), (2, 9, PAGE), (5, 9, PAGE), (8, 9, PAGE)]
    assert looks == [(after, PAGE) for after in range(9, HEAD + 1, PAGE)]
    pages.clear()
    looks.clear()
    *whole, _ = _followed(pg_url, long_run, LogPage())
    assert whole == [log_entry(cp) for cp in chain]
    assert pages == []  # nothing to skip


def test_follow_names_a_failing_record_before_its_start(pg_url: str, long_run: str) -> None:
    _spoil(pg_url, long_run, 4)
    with pytest.raises(CheckpointCorruptError, match="checksum mismatch") as raised:
        list(follow_run(pg_url, long_run, page=LogPage(from_seq=10), sleep=lambda _: None))
    assert raised.value.where == f"{_where(pg_url, long_run)}:5"


def test_export_writes_the_whole_document_reading_a_page_at_a_time(
    pg_url: str, long_run: str, pages: list[tuple[int, int, int]], tmp_path: Path
) -> None:
    chain = _chain(pg_url, long_run)
    fields = {"run": summary_json(_summary(pg_url, long_run)), "checkpoint_count": len(chain)}
    whole = document("export", fields | {"checkpoints": [c.to_dict() for c in chain]})
    result = export_run(pg_url, long_run, "json")
    assert "".join(result.chunks) == json.dumps(whole, indent=2, ensure_ascii=False) + "\n"
    assert len(pages) == math.ceil((HEAD + 1) / PAGE)
    _spoil(pg_url, long_run, 7)
    target = tmp_path / "run.json"
    done = wfctl("export", long_run, "--output", target, "--store", pg_url)
    assert done.code == 2 and f"run {long_run}:8: checksum mismatch" in done.error_line()
    assert not target.exists()


def test_show_verifies_every_record_and_decodes_one(
    pg_url: str, long_run: str, pages: list[tuple[int, int, int]]
) -> None:
    chain = _chain(pg_url, long_run)
    assert show_checkpoint(pg_url, f"{long_run}.5") == chain[5]
    # every record to the head, a page at a time (the one shown is not the last read)
    assert [asked[0] for asked in pages] == list(range(-1, HEAD, PAGE))
    with pytest.raises(CheckpointNotFoundError):
        show_checkpoint(pg_url, f"{long_run}.{HEAD + 1}")
    _spoil(pg_url, long_run, 17)  # after the checkpoint shown: named all the same
    done = wfctl("show", f"{long_run}.5", "--store", pg_url)
    assert done.code == 2 and f"run {long_run}:18: checksum mismatch" in done.error_line()


def test_a_run_cut_while_it_is_read_is_named(pg_url: str, long_run: str) -> None:
    log = run_log(pg_url, long_run)  # the ends read
    with psycopg.connect(pg_url, autocommit=True) as conn:
        conn.execute("DELETE FROM wfctl_checkpoints WHERE run_id = %s AND seq > 14", (long_run,))
    shown: list[int] = []
    with pytest.raises(
        CheckpointCorruptError, match=r"changed while it was read \(it ends early\)"
    ):
        shown.extend(entry.seq for entry in log.entries)
    assert shown == list(range(15))
