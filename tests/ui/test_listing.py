"""The pages as data: the runs page's filters, orders and pages over the listing, the first
pages of a large store answered from the run ids alone (``quick_page``) while the listing is
read, problems pointing at records, and the sizes page counting only the largest runs."""

from __future__ import annotations

import asyncio
import dataclasses
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from wfctl._errors import WfctlError
from wfctl._ui._lineage import problem_nodes
from wfctl._ui._listing import PAGE_SIZE, RunFilter, RunIndex, quick_page, runs_page
from wfctl._ui._sizes import LARGEST, sizes_view
from wfctl.sources import Entry, RunInfo, SizeInfo, Source, open_source

from .conftest import greet_runs, runs_of


def listing(count: int) -> list[RunInfo]:
    """``count`` runs, one a minute from 2026-01-01 00:00, every third failed."""
    return [
        RunInfo(
            run_id=f"r{i:05d}",
            workflow="nightly-a" if i % 2 else "weekly",
            status="failed" if i % 3 == 0 else "completed",
            head_id=f"r{i:05d}.1",
            created_at=f"2026-01-01T{i // 60:02d}:{i % 60:02d}:00+00:00",
            updated_at=f"2026-01-01T{i // 60:02d}:{i % 60:02d}:30+00:00",
            record_count=i % 7,
            size_bytes=i,
        )
        for i in range(count)
    ]


def test_a_page_is_filtered_sorted_and_cut() -> None:
    runs = listing(2 * PAGE_SIZE + 20)
    first = runs_page(runs, RunFilter())
    assert (first.total, first.pages, first.page) == (len(runs), 3, 0)
    assert [run.run_id for run in first.runs[:2]] == ["r00119", "r00118"]  # newest first
    last = runs_page(runs, RunFilter(page=99))  # past the end: the last page
    assert (last.page, len(last.runs)) == (2, 20)
    oldest = runs_page(runs, RunFilter(reverse=True))
    assert oldest.runs[0].run_id == "r00000"
    failed = runs_page(runs, RunFilter(status="failed", workflow="nightly-*"))
    assert {run.status for run in failed.runs} == {"failed"}
    assert {run.workflow for run in failed.runs} == {"nightly-a"}
    window = runs_page(runs, RunFilter(since="2026-01-01T01:00Z", until="2026-01-01T01:09Z"))
    assert [run.run_id for run in window.runs] == [f"r{i:05d}" for i in range(69, 59, -1)]
    biggest = runs_page(runs, RunFilter(sort="size"))
    assert biggest.runs[0].size_bytes == len(runs) - 1
    assert runs_page(runs, RunFilter(text="R0011")).total == 10
    with pytest.raises(WfctlError, match="invalid time"):
        runs_page(runs, RunFilter(since="soon"))


def test_the_first_pages_come_from_the_ids_alone(ui_store: Path) -> None:
    stored = sorted((run["run_id"] for run in runs_of(ui_store)), reverse=True)
    with open_source(ui_store) as source:
        page = quick_page(source, RunFilter())
        assert page is not None and page.by_id
        assert [run.run_id for run in page.runs] == stored
        assert page.runs[0] == next(run for run in source.runs() if run.run_id == stored[0])
        some = quick_page(source, RunFilter(text=stored[1][-8:].upper()))
        assert some is not None and [run.run_id for run in some.runs] == [stored[1]]
        assert quick_page(source, RunFilter(status="failed")) is None  # needs the listing
        assert quick_page(source, RunFilter(sort="size")) is None
        assert quick_page(source, RunFilter(), len(stored) + 1) is None  # small: listed soon


def test_a_source_that_cannot_name_its_runs_waits_for_the_listing(af_store: Path) -> None:
    with open_source(af_store) as source:
        assert quick_page(source, RunFilter()) is None


def test_the_listing_is_read_on_its_own_thread_and_kept() -> None:
    gate, reads = threading.Event(), []

    def read() -> list[RunInfo]:
        reads.append(threading.current_thread().name)
        assert gate.wait(30)
        return listing(3)

    index = RunIndex(read)
    try:
        assert index.kept() is None  # started, not waited for
        with pytest.raises(TimeoutError):
            index.whole(0.05)
        reader = next(thread for thread in threading.enumerate() if thread.name == "wfctl-list")
        assert reader.daemon  # a stop does not wait for it
    finally:
        gate.set()
    assert len(index.whole()) == 3
    assert index.kept() is not None
    assert reads == ["wfctl-list"]


def test_a_problem_points_at_the_records_it_names_whole() -> None:
    entries = [Entry(f"run.{seq}", "run", (), seq, "step", "") for seq in (1, 2, 10)]
    problems = ["record run.10 (journal:11) is broken", "run.1: bad; run.2.json"]
    assert problem_nodes(entries, problems) == {problems[0]: [10], problems[1]: [1, 2]}


class CountedSizes:
    """A real source whose ``sizes`` calls are written down (the other reads pass through)."""

    def __init__(self, source: Source) -> None:
        self.source = source
        self.asked: list[str | None] = []

    def sizes(self, run_id: str | None = None) -> Iterator[SizeInfo]:
        self.asked.append(run_id)
        return self.source.sizes(run_id)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.source, name)


def test_the_sizes_page_counts_only_the_largest_runs_records(tmp_path: Path) -> None:
    store = tmp_path / "store"
    asyncio.run(greet_runs(store, LARGEST + 5))
    with open_source(store) as source:
        listing = list(source.runs())
        counted = CountedSizes(source)
        view = sizes_view(counted, listing)  # type: ignore[arg-type]  # a Source, counted
        every = sorted(source.sizes(), key=lambda size: -size.size_bytes)
    assert None not in counted.asked and len(counted.asked) == LARGEST
    assert view.of_largest and (view.run_count, len(view.runs)) == (LARGEST + 5, LARGEST)
    assert view.total == sum(size.size_bytes for size in every)
    assert [size.size_bytes for size in view.runs] == [size.size_bytes for size in every[:LARGEST]]
    assert dict(view.kinds).keys() == {"completed", "root", "step"}


def test_without_sizes_in_the_listing_every_run_is_counted(af_store: Path) -> None:
    with open_source(af_store) as source:
        listing = [dataclasses.replace(run, size_bytes=None) for run in source.runs()]
        view = sizes_view(source, listing)
    assert not view.of_largest and view.run_count == len(listing) == len(view.runs)
