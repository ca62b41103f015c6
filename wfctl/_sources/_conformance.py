"""The conformance suite of the read port: what every :class:`~._protocol.Source` must do.

A reader's test subclasses :class:`SourceConformance` and says how to open a source over a
store with known content (runs that paused, failed and completed; for an engine whose
histories fork, a fork) and how to fingerprint that store::

    from wfctl.sources.testing import SourceConformance, directory_digest

    class TestMyReader(SourceConformance):
        statuses = frozenset({"paused", "failed", "completed"})

        @pytest.fixture
        def source_under_test(self, my_store) -> Iterator[Source]:
            with open_source(my_store) as source:
                yield source

        @pytest.fixture
        def store_digest(self, my_store) -> Callable[[], str]:
            return lambda: directory_digest(my_store)

Every test fingerprints the store before and after it runs: a source that writes anything
(a file, a row, a changed time of a file it rewrote) fails. The streaming test needs a
``big_run`` fixture (a source, the id of one long run, and how many bytes the run takes); a
subclass without it has that test skipped, saying so.
"""

from __future__ import annotations

import hashlib
import os
import stat
import tracemalloc
from collections.abc import Callable, Iterator
from itertools import islice
from pathlib import Path
from typing import ClassVar

import pytest

from wfctl._errors import CheckpointNotFoundError, RunNotFoundError

from ._protocol import Entry, RunInfo, Source

__all__ = ["SourceConformance", "directory_digest", "traced_peak"]

#: The fraction of a long run's bytes that streaming its records may hold at its peak: a reader
#: that reads the run whole first holds all of it (and more, decoded), one that streams holds
#: a read buffer and a record or two.
STREAMING_SHARE = 0.5


def directory_digest(root: str | os.PathLike[str]) -> str:
    """A digest of every entry under ``root``: its path, type, mode, size, change time and
    bytes (links are hashed as their target text, never followed)."""
    digest = hashlib.sha256()
    for directory, dirs, files in os.walk(root):
        dirs.sort()
        for name in sorted([*dirs, *files]):
            path = os.path.join(directory, name)
            info = os.lstat(path)
            digest.update(f"{os.path.relpath(path, root)}\0{info.st_mode}\0".encode())
            digest.update(f"{info.st_size}\0{info.st_mtime_ns}\0".encode())
            if stat.S_ISREG(info.st_mode):
                digest.update(Path(path).read_bytes())
            elif stat.S_ISLNK(info.st_mode):
                digest.update(os.readlink(path).encode())
    return digest.hexdigest()


def traced_peak(call: Callable[[], object]) -> int:
    """The peak of the memory Python allocated while ``call()`` ran (tracemalloc)."""
    tracemalloc.start()
    try:
        call()
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


class SourceConformance:
    """Every duty of a source, as pytest tests over a store with known content.

    Subclasses provide the fixtures ``source_under_test`` (an open source over the known
    content), ``store_digest`` (a function fingerprinting the store: every file, or every
    row) and, optionally, ``big_run``. Class attributes say what the content holds.
    """

    #: Statuses the known content's runs must show, at least (wfctl's words).
    statuses: ClassVar[frozenset[str]] = frozenset()
    #: Whether the content holds a fork (a record with two children, or two roots in a run).
    forks: ClassVar[bool] = False
    #: A run id and a record id the store holds no run or record of (valid ids for it).
    unknown_run_id: ClassVar[str] = "no-such-run"
    unknown_record_id: ClassVar[str] = "no-such-run.0"

    @pytest.fixture(autouse=True)
    def _never_writes(self, store_digest: Callable[[], str]) -> Iterator[None]:
        before = store_digest()
        yield
        assert store_digest() == before, "the source wrote to its store"

    @pytest.fixture
    def listed(self, source_under_test: Source) -> list[RunInfo]:
        return list(source_under_test.runs())

    def readable(self, runs: list[RunInfo]) -> list[RunInfo]:
        """The runs whose records can all be read (neither corrupt nor unreadable)."""
        return [r for r in runs if r.status not in ("corrupt", "unreadable")]

    def test_runs_show_the_known_statuses(
        self, source_under_test: Source, listed: list[RunInfo]
    ) -> None:
        assert isinstance(source_under_test, Source)
        assert source_under_test.kind
        assert source_under_test.location
        assert listed, "the known content holds runs"
        assert self.statuses <= {r.status for r in listed}
        for info in listed:
            assert info.record_count >= 0
            assert info.size_bytes is None or info.size_bytes >= 0

    def test_runs_filtered_by_workflow(
        self, source_under_test: Source, listed: list[RunInfo]
    ) -> None:
        for workflow in {r.workflow for r in listed}:
            picked = list(source_under_test.runs(workflow=workflow))
            assert picked
            assert {r.workflow for r in picked} == {workflow}

    def test_every_run_streams_its_records_in_order_with_their_parents(
        self, source_under_test: Source, listed: list[RunInfo]
    ) -> None:
        for info in self.readable(listed):
            entries = list(source_under_test.records(info.run_id))
            assert len(entries) == info.record_count
            assert [e.order for e in entries] == list(range(len(entries)))
            assert {e.run_id for e in entries} == {info.run_id}
            order = {e.entry_id: e.order for e in entries}
            assert len(order) == len(entries), "entry ids are unique within a run"
            for entry in entries:
                for parent in entry.parent_ids:
                    # a parent is an entry of the run given before its child: no cycle
                    assert order.get(parent, entry.order) < entry.order, (entry, parent)
            assert any(not e.parent_ids for e in entries), "a run has a root"
            assert info.head_id in order

    def test_record_by_id_equals_its_entry(
        self, source_under_test: Source, listed: list[RunInfo]
    ) -> None:
        for info in self.readable(listed):
            for entry in source_under_test.records(info.run_id):
                assert source_under_test.record(entry.entry_id) == entry

    def test_unknown_run_and_record_raise(self, source_under_test: Source) -> None:
        with pytest.raises(RunNotFoundError):
            list(source_under_test.records(self.unknown_run_id))
        with pytest.raises(CheckpointNotFoundError):
            source_under_test.record(self.unknown_record_id)
        with pytest.raises(RunNotFoundError):
            list(source_under_test.sizes(self.unknown_run_id))
        with pytest.raises(RunNotFoundError):
            source_under_test.verify(self.unknown_run_id)

    def test_one_run_is_read_as_listed(
        self, source_under_test: Source, listed: list[RunInfo]
    ) -> None:
        """The optional ``run_info``, when the reader has it: each run as ``runs()`` lists
        it, an unknown one refused."""
        one = getattr(source_under_test, "run_info", None)
        if one is None:
            pytest.skip(f"{source_under_test.kind} reads no run alone (no run_info)")
        for info in listed:
            assert one(info.run_id) == info
        with pytest.raises(RunNotFoundError):
            one(self.unknown_run_id)

    def test_sizes_cover_the_records(
        self, source_under_test: Source, listed: list[RunInfo]
    ) -> None:
        sizes = {s.run_id: s for s in source_under_test.sizes()}
        assert set(sizes) == {r.run_id for r in listed}
        for info in self.readable(listed):
            entries = list(source_under_test.records(info.run_id))
            size = sizes[info.run_id]
            assert size.size_bytes >= sum(e.size_bytes for e in entries) >= 0
            assert size.record_count == len(entries)
            assert sum(k.record_count for k in size.by_kind) == len(entries)
            assert all(k.size_bytes >= 0 for k in size.by_kind)
            assert list(source_under_test.sizes(info.run_id)) == [size]

    def test_verify_gives_a_verdict_per_run(
        self, source_under_test: Source, listed: list[RunInfo]
    ) -> None:
        report = source_under_test.verify()
        assert {r.run_id for r in listed} <= {v.run_id for v in report.runs}
        for info in listed:
            (verdict,) = source_under_test.verify(info.run_id).runs
            assert verdict.run_id == info.run_id

    def test_forks_are_kept(self, source_under_test: Source, listed: list[RunInfo]) -> None:
        if not self.forks:
            pytest.skip("the store's histories do not fork")
        assert any(
            _forked(list(source_under_test.records(r.run_id))) for r in self.readable(listed)
        )

    def test_records_stream(self, request: pytest.FixtureRequest) -> None:
        try:
            source, run_id, run_bytes = request.getfixturevalue("big_run")
        except pytest.FixtureLookupError:
            pytest.skip("no big_run fixture: streaming is not checked")
        first = next(source.records(run_id))  # warm: imports and caches are not the run
        assert first.order == 0
        counted: list[int] = []

        def stream() -> None:
            counted.append(sum(1 for _ in source.records(run_id)))

        peak = traced_peak(stream)
        assert counted[0] > 1
        assert peak < run_bytes * STREAMING_SHARE, (peak, run_bytes)
        assert next(islice(source.records(run_id), 1, None)).order == 1


def _forked(entries: list[Entry]) -> bool:
    roots = sum(1 for e in entries if not e.parent_ids)
    children: dict[str, int] = {}
    for entry in entries:
        for parent in entry.parent_ids:
            children[parent] = children.get(parent, 0) + 1
    return roots > 1 or any(count > 1 for count in children.values())
