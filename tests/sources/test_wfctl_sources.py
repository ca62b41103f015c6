"""The read port's conformance suite on wfctl's file and PostgreSQL stores, written by running
real workflows (a completed fan-out, a pause for an answer, a failure)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterator
from pathlib import Path

import psycopg
import pytest

from tests.sources.stores import fill, fill_big, table_digest
from wfctl._errors import CheckpointCorruptError, RunNotFoundError, StoreLocationError
from wfctl._storage import _pages  # the page size, shortened for the long run
from wfctl.sources import Source, open_source
from wfctl.sources.testing import SourceConformance, directory_digest
from wfctl.storage.testing import PrivateServer

WFCTL_STATUSES = frozenset({"completed", "paused", "failed"})


@pytest.fixture(scope="module")
def file_store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    store = tmp_path_factory.mktemp("store")
    asyncio.run(fill(str(store)))
    return store


@pytest.fixture(scope="module")
def big_file_store(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    store = tmp_path_factory.mktemp("big")
    return store, asyncio.run(fill_big(str(store)))


class TestFileStore(SourceConformance):
    statuses = WFCTL_STATUSES

    @pytest.fixture
    def source_under_test(self, file_store: Path) -> Iterator[Source]:
        with open_source(file_store) as source:
            assert source.kind == "wfctl-file"
            yield source

    @pytest.fixture
    def store_digest(self, file_store: Path, big_file_store: tuple[Path, str]) -> Callable[[], str]:
        return lambda: directory_digest(file_store) + directory_digest(big_file_store[0])

    @pytest.fixture
    def big_run(self, big_file_store: tuple[Path, str]) -> Iterator[tuple[Source, str, int]]:
        store, run_id = big_file_store
        journal = store / "runs" / run_id / "journal.jsonl"
        with open_source(store) as source:
            yield source, run_id, journal.stat().st_size

    def test_runs_are_named_and_read_one_at_a_time(self, source_under_test: Source) -> None:
        names_and_one_run(source_under_test)


class TestPostgresStore(SourceConformance):
    statuses = WFCTL_STATUSES

    def test_runs_are_named_and_read_one_at_a_time(self, source_under_test: Source) -> None:
        names_and_one_run(source_under_test)

    @pytest.fixture
    def pg_store(self, pg_url: str) -> str:
        asyncio.run(fill(pg_url))
        return pg_url

    @pytest.fixture
    def source_under_test(self, pg_store: str) -> Iterator[Source]:
        with open_source(pg_store) as source:
            assert source.kind == "wfctl-postgresql"
            yield source

    @pytest.fixture
    def store_digest(self, pg_store: str) -> Callable[[], str]:
        return lambda: table_digest(pg_store)

    @pytest.fixture
    def big_run(
        self, pg_server: PrivateServer, monkeypatch: pytest.MonkeyPatch
    ) -> Iterator[tuple[Source, str, int]]:
        """A long run in a database of its own (written after the store's digest was taken).

        The store reads a run 4096 records a statement: a run long enough to show that in
        bytes takes tens of thousands of commits, so its pages are made 64 records here (the
        same reads, shorter pages) for a run of 400 records of 10 kB.
        """
        monkeypatch.setattr(_pages, "PAGE_RECORDS", 64)
        with psycopg.connect(pg_server.url, autocommit=True) as conn:
            conn.execute("DROP DATABASE IF EXISTS sources_big")
            conn.execute("CREATE DATABASE sources_big")
        url = pg_server.url.replace("/postgres?", "/sources_big?")
        run_id = asyncio.run(fill_big(url, steps=400, size=10_000))
        with open_source(url) as source:
            (size,) = source.sizes(run_id)
            yield source, run_id, size.size_bytes


def test_a_database_without_wfctl_tables_is_refused_and_left_without_them(
    pg_server: PrivateServer,
) -> None:
    with psycopg.connect(pg_server.url, autocommit=True) as conn:
        conn.execute("DROP DATABASE IF EXISTS sources_empty")
        conn.execute("CREATE DATABASE sources_empty")
    url = pg_server.url.replace("/postgres?", "/sources_empty?")
    assert url != pg_server.url
    with open_source(url) as source:
        with pytest.raises(StoreLocationError, match="holds no wfctl store") as caught:
            list(source.runs())
        assert "\n" not in str(caught.value)
        with pytest.raises(StoreLocationError):
            source.verify()
    with psycopg.connect(url, autocommit=True) as conn:
        (tables,) = conn.execute(
            "SELECT count(*) FROM information_schema.tables WHERE table_schema = 'public'"
        ).fetchone() or (None,)
    assert tables == 0


def test_verify_is_verify_lineage(file_store: Path) -> None:
    from wfctl._inspect._verify import (
        verify_runs,  # the command's own library call, to compare with
    )

    with open_source(file_store) as source:
        assert source.verify().to_json() == verify_runs(file_store).to_json()


def test_a_tampered_record_is_named_not_shown(tmp_path: Path) -> None:
    runs = asyncio.run(fill(str(tmp_path)))
    run_id = runs["completed"]
    journal = tmp_path / "runs" / run_id / "journal.jsonl"
    lines = journal.read_bytes().split(b"\n")
    lines[1] = lines[1].replace(b"HELLO ANN", b"HELLO BOB")  # a step's result, its checksum kept
    journal.write_bytes(b"\n".join(lines))
    with open_source(tmp_path) as source:
        (info,) = [r for r in source.runs() if r.run_id == run_id]
        assert info.status == "corrupt" and info.problem
        entries = source.records(run_id)
        with pytest.raises(CheckpointCorruptError):
            list(entries)
        with pytest.raises(CheckpointCorruptError):
            source.record(f"{run_id}.1")
        (size,) = source.sizes(run_id)
        assert size.problem and size.size_bytes >= journal.stat().st_size
        (verdict,) = source.verify(run_id).runs
        assert not verdict.ok


def test_sizes_of_a_long_run_count_on_one_loop_trip(
    big_file_store: tuple[Path, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Counting a run takes a record's kind and bytes: one coroutine over the whole run, not a
    trip through the source's event loop per record (which cost more than the reading)."""
    store, run_id = big_file_store
    trips: list[object] = []
    run = asyncio.Runner.run

    def counted(runner: asyncio.Runner, coro: object, **kwargs: object) -> object:
        trips.append(coro)
        return run(runner, coro, **kwargs)  # type: ignore[arg-type]

    with open_source(store) as source:
        next(source.runs())  # the listing's own reads are not the count
        monkeypatch.setattr(asyncio.Runner, "run", counted)
        (size,) = source.sizes(run_id)
    run_files = (store / "runs" / run_id).iterdir()
    assert size.size_bytes == sum(f.stat().st_size for f in run_files)  # the directory whole
    journal = store / "runs" / run_id / "journal.jsonl"  # a record a line
    assert sum(k.size_bytes for k in size.by_kind) + size.record_count == journal.stat().st_size
    assert size.record_count > 100
    assert len(trips) <= 3, f"{len(trips)} loop trips for {size.record_count} records"


def names_and_one_run(source: Source) -> None:
    """``run_names`` names every listed run, and ``run_info`` reads one as ``runs`` lists it."""
    listed = {run.run_id: run for run in source.runs()}
    names = source.run_names()  # type: ignore[attr-defined]  # wfctl's sources have it
    assert sorted(names) == sorted(listed)
    for run_id, run in listed.items():
        assert source.run_info(run_id) == run  # type: ignore[attr-defined]
    with pytest.raises(RunNotFoundError):
        source.run_info("no-such-run")  # type: ignore[attr-defined]
