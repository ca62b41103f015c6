"""``wfctl runs`` of another engine's store holds no more runs than it shows: with ``--limit N``
the N first of the order asked (a heap), with no limit and a reader that gives that order
itself, none (each run written as it comes). The document is the same text as written whole."""

from __future__ import annotations

import io
import itertools
import json
import sys
import tracemalloc
from collections.abc import Iterator

import pytest

from wfctl._cli._app import emit_json, emit_json_items
from wfctl._cli._store_commands import _source_runs
from wfctl._errors import RunNotFoundError, WfctlError
from wfctl._inspect._query import RunQuery, SortField
from wfctl._sources._protocol import ClosingSource, Entry, RunInfo
from wfctl._sources._views import (
    export_document,
    listed_runs,
    run_document,
    runs_document,
    source_runs,
)

STATUSES = ("completed", "failed", "running")


def _run(number: int) -> RunInfo:
    """A run of many: times repeat (ties broken by id), some runs have none."""
    when = "" if number % 7 == 0 else f"2026-01-{1 + number % 28:02d}T00:00:{number % 60:02d}"
    return RunInfo(
        run_id=f"run-{(number * 7919) % 100_003:06d}-{number}",
        workflow=f"flow-{number % 5}",
        status=STATUSES[number % 3],  # type: ignore[arg-type]
        head_id=f"run-{number}.1",
        created_at=when,
        updated_at=when[::-1],
        record_count=number % 11,
        details={"attempts": number % 4},
    )


class Listed(ClosingSource):
    """A reader of ``count`` synthetic runs, made as they are read; ``ordered`` gives them
    in ``--sort created`` order too, as DBOS's reader does."""

    kind = "synthetic"
    location = "memory"

    def __init__(self, count: int, *, ordered: bool = False) -> None:
        self.count = count
        if ordered:
            self.runs_by_created = self._by_created

    def runs(self, *, workflow: str | None = None) -> Iterator[RunInfo]:
        return (_run(number) for number in range(self.count))

    def _by_created(self, *, newest_first: bool) -> Iterator[RunInfo]:
        # made in order without holding them: runs ``created_at`` from their number
        numbers = range(self.count - 1, -1, -1) if newest_first else range(self.count)
        for number in numbers:
            when = f"2026-01-01T00:00:00.{number:06d}"
            yield RunInfo(f"run-{number:06d}", "flow", "completed", None, when, when, 1)


class Discard(io.TextIOBase):
    """stdout that keeps nothing."""

    def write(self, text: str) -> int:
        return len(text)


def _peak(count: int, query: RunQuery, *, ordered: bool, json_output: bool) -> int:
    source = Listed(count, ordered=ordered)
    saved = sys.stdout
    sys.stdout = Discard()
    tracemalloc.start()
    try:
        if json_output:
            _source_runs(source, query, True)
        else:
            _, _, total = source_runs(source, query)
            assert total == count
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
        sys.stdout = saved


@pytest.mark.parametrize(
    ("query", "ordered", "json_output"),
    [
        (RunQuery(limit=10), False, False),  # the table's --limit: a heap
        (RunQuery(limit=10, sort=SortField.WORKFLOW), False, True),
        (RunQuery(), True, True),  # --json, the reader's own order: streamed
        (RunQuery(reverse=True, limit=50, workflow="flow"), True, True),
    ],
)
def test_memory_does_not_grow_with_the_runs(
    query: RunQuery, ordered: bool, json_output: bool
) -> None:
    small = _peak(1_000, query, ordered=ordered, json_output=json_output)
    large = _peak(20_000, query, ordered=ordered, json_output=json_output)
    assert large < small * 1.5 + 64 * 1024, (small, large)  # holding them: ~20 times


@pytest.mark.parametrize("sort", list(SortField))
@pytest.mark.parametrize("reverse", [False, True])
@pytest.mark.parametrize("limit", [None, 0, 1, 17, 5_000])
def test_the_runs_shown_are_the_first_of_the_whole_order(
    sort: SortField, reverse: bool, limit: int | None
) -> None:
    query = RunQuery(sort=sort, reverse=reverse, limit=limit, statuses=frozenset({"failed"}))
    every = list(Listed(300).runs())
    matching = [info for info in every if info.status == "failed"]
    key = {
        SortField.CREATED: lambda i: (i.created_at, i.run_id),
        SortField.UPDATED: lambda i: (i.updated_at, i.run_id),
        SortField.RUN_ID: lambda i: i.run_id,
        SortField.WORKFLOW: lambda i: (i.workflow, i.run_id),
        SortField.STATUS: lambda i: (i.status, i.run_id),
    }[sort]
    whole = sorted(matching, key=key, reverse=query.descending)
    shown, count, total = source_runs(Listed(300), query)
    assert shown == whole[:limit] if limit is not None else shown == whole
    assert (count, total) == (len(matching), 300)


def test_a_reader_out_of_its_order_is_named_not_listed() -> None:
    source = Listed(5, ordered=True)
    source.runs_by_created = lambda *, newest_first: source._by_created(newest_first=False)
    runs, _ = listed_runs(source, RunQuery())  # newest first asked, oldest first given
    with pytest.raises(WfctlError, match="gave run 'run-000001' out of its order"):
        list(runs)


def _text(write: object, *args: object) -> str:
    saved, sys.stdout = sys.stdout, io.StringIO()
    try:
        write(*args)  # type: ignore[operator]
        return sys.stdout.getvalue()
    finally:
        sys.stdout = saved


@pytest.mark.parametrize("count", [0, 1, 3])
@pytest.mark.parametrize("odd", ["plain", "lone \ud800 surrogate", "big"])
def test_the_streamed_document_is_the_whole_one_s_text(count: int, odd: str) -> None:
    head = {"schema": "wfctl/source-runs@1", "source": "synthetic", "store": odd}
    items = [
        {"run_id": f"r{n}", "details": {"n": 2**70 if odd == "big" else n, "e": {}}}
        for n in range(count)
    ]
    tail = {"run_count": count, "matching_run_count": count, "total_run_count": 9}
    whole = _text(lambda: emit_json({**head, "runs": items, **tail}, floats=False))
    streamed = _text(emit_json_items, head, "runs", iter(items), lambda: tail)
    assert streamed == whole
    assert json.loads(streamed)["runs"] == items


def test_the_command_writes_the_library_s_document() -> None:
    for query in (RunQuery(), RunQuery(limit=3, sort=SortField.STATUS)):
        for ordered in (False, True):
            written = json.loads(_text(_source_runs, Listed(40, ordered=ordered), query, True))
            assert written == runs_document(Listed(40, ordered=ordered), query)
            assert list(written)[-4:] == [
                "runs",
                "run_count",
                "matching_run_count",
                "total_run_count",
            ]


def test_counts_are_whole_after_a_limit_cut_the_stream() -> None:
    runs, counts = listed_runs(Listed(30, ordered=True), RunQuery(limit=2))
    first = list(itertools.islice(runs, 2))
    assert [info.run_id for info in first] == ["run-000029", "run-000028"]
    assert list(runs) == [] and (counts.shown, counts.matching, counts.total) == (2, 30, 30)


class Exported(Listed):
    """A reader that reads one run alone, and whose listing must not be read."""

    def records(self, run_id: str) -> Iterator[Entry]:
        yield Entry(f"{run_id}.0", run_id, (), 0, "step", "")

    def run_info(self, run_id: str) -> RunInfo:
        if run_id != "run-000003-3":
            raise RunNotFoundError(run_id)
        return _run(3)

    def runs(self, *, workflow: str | None = None) -> Iterator[RunInfo]:
        raise AssertionError("export read the whole listing")


def test_export_reads_its_run_alone_when_the_reader_can() -> None:
    exported = export_document(Exported(10), "run-000003-3")
    assert exported["run"] == run_document(_run(3))
    assert export_document(Exported(10), "child-of-a-run")["run"] is None  # listed in its root
