"""``wfctl du``: what a store's runs take, over any :class:`~wfctl._sources._protocol.Source`.

The report is built from :meth:`Source.sizes` (one :class:`SizeInfo` per run, each counted by
the reader as it streams the run's records) and the source's run listing (a run's workflow and
status, for the filters and the table). Nothing holds a record: a run is kept as its counts,
and with a limit only the runs shown are kept (a heap of that many). The totals by kind and by
channel add up every matching run. The store's own bytes on disk are read apart (a file or a
directory walked, a database's relation sizes) where the source can say.
"""

from __future__ import annotations

import fnmatch
import heapq
import os
import stat
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from wfctl._errors import WfctlError
from wfctl._inspect._query import UsageSort, summary_time

from ._protocol import KindSize, SizeInfo, Source

__all__ = [
    "RunUsage",
    "StoreSize",
    "UsageReport",
    "UsageSort",
    "disk_usage",
    "local_bytes",
    "store_usage",
]


@runtime_checkable
class StoreSize(Protocol):
    """A source that can say what its whole store takes (a database's relations, say)."""

    def store_size_bytes(self) -> int | None:
        """The store's bytes as kept; None to have its location read as a local path."""
        ...


@dataclass(frozen=True, slots=True)
class RunUsage:
    """One run's bytes: its :class:`SizeInfo` with its workflow and status where listed."""

    run_id: str
    workflow: str | None
    status: str | None
    size_bytes: int
    record_count: int
    by_kind: tuple[KindSize, ...]
    by_channel: tuple[KindSize, ...]
    problem: str | None

    def to_json(self) -> dict[str, Any]:
        """The run as ``du --json`` shows it."""
        return {
            "run_id": self.run_id,
            "workflow": self.workflow,
            "status": self.status,
            "size_bytes": self.size_bytes,
            "record_count": self.record_count,
            "kinds": _sizes_json(self.by_kind, "kind"),
            "channels": _sizes_json(self.by_channel, "channel"),
            "problem": self.problem,
        }


@dataclass(frozen=True, slots=True)
class UsageReport:
    """What ``wfctl du`` found: the runs shown, and totals over every matching run.

    ``by_kind`` and ``by_channel`` are those totals, largest first. ``store_size_bytes`` is
    the store's own bytes on disk (None where the source cannot say): it counts what no run
    does (indexes, free pages, a database's other tables).
    """

    source: str
    store: str
    runs: tuple[RunUsage, ...]
    matching_run_count: int
    total_run_count: int
    size_bytes: int
    record_count: int
    by_kind: tuple[KindSize, ...]
    by_channel: tuple[KindSize, ...]
    problem_count: int
    store_size_bytes: int | None

    @property
    def ok(self) -> bool:
        """Whether every matching run was counted whole."""
        return self.problem_count == 0

    def to_json(self) -> dict[str, Any]:
        """The ``wfctl/du@1`` document."""
        return {
            "schema": "wfctl/du@1",
            "source": self.source,
            "store": self.store,
            "store_size_bytes": self.store_size_bytes,
            "run_count": len(self.runs),
            "matching_run_count": self.matching_run_count,
            "total_run_count": self.total_run_count,
            "size_bytes": self.size_bytes,
            "record_count": self.record_count,
            "problem_count": self.problem_count,
            "kinds": _sizes_json(self.by_kind, "kind"),
            "channels": _sizes_json(self.by_channel, "channel"),
            "runs": [run.to_json() for run in self.runs],
        }


def _sizes_json(sizes: Sequence[KindSize], name: str) -> list[dict[str, Any]]:
    return [
        {name: size.kind, "record_count": size.record_count, "size_bytes": size.size_bytes}
        for size in sizes
    ]


def disk_usage(
    source: Source,
    run_ids: Sequence[str] = (),
    *,
    workflow: str | None = None,
    statuses: Iterable[str] = (),
    since: datetime | None = None,
    until: datetime | None = None,
    sort: UsageSort = UsageSort.SIZE,
    reverse: bool = False,
    limit: int | None = None,
) -> UsageReport:
    """Count what each run of ``source`` (or each of ``run_ids``) takes.

    Args:
        source: the store, of any kind.
        run_ids: the runs to count (default: every run); each must exist.
        workflow: a glob a run's workflow must match.
        statuses: the statuses a run must have one of (any, if empty).
        since, until: the run was created at or after / before that moment (a run whose
            creation time the store does not give is kept, as ``wfctl runs`` keeps it).
        sort: the order of the runs shown (``size``: largest first).
        reverse: the opposite order.
        limit: show at most this many runs (the totals still count every matching run).

    Raises:
        RunNotFoundError: a run of ``run_ids`` is not in the store (before any run is
            counted: the runs the listing lacks are asked for first).
        WfctlError: the source refused a read.
    """
    if limit is not None and limit < 0:
        raise WfctlError(f"--limit must be 0 or more, not {limit}")
    wanted = set(statuses)
    listed: dict[str, tuple[str, str]] = {}
    created: dict[str, datetime | None] = {}
    for info in source.runs():
        listed[info.run_id] = (info.workflow, info.status)
        if since is not None or until is not None:
            created[info.run_id] = summary_time(info.created_at)

    def matches(run: RunUsage) -> bool:
        if workflow is not None and (
            run.workflow is None or not fnmatch.fnmatchcase(run.workflow, workflow)
        ):
            return False
        moment = created.get(run.run_id)
        if moment is not None and (
            (since is not None and moment < since) or (until is not None and moment >= until)
        ):
            return False
        return not wanted or run.status in wanted

    unlisted_first = sorted(dict.fromkeys(run_ids), key=lambda run_id: run_id in listed)
    counted = (_usage(size, listed.get(size.run_id)) for size in _sizes(source, unlisted_first))
    totals = _Totals()
    shown = _shown((run for run in counted if matches(run)), totals, sort, reverse, limit)
    return UsageReport(
        source=source.kind,
        store=source.location,
        runs=tuple(shown),
        matching_run_count=totals.runs,
        total_run_count=len(listed),
        size_bytes=totals.size,
        record_count=totals.records,
        by_kind=_largest_first(totals.kinds),
        by_channel=_largest_first(totals.channels),
        problem_count=totals.problems,
        store_size_bytes=_store_size(source),
    )


def store_usage(
    location: str | os.PathLike[str],
    run_ids: Sequence[str] = (),
    *,
    must_exist: bool = True,
    **options: Any,
) -> UsageReport:
    """:func:`disk_usage` of the store at ``location`` (a path or URL of any kind wfctl reads),
    opened read-only and closed again. A directory that does not exist and need not
    (``must_exist`` False: the default store, not named) holds no run: an empty report.

    Raises:
        StoreLocationError: the location is no store wfctl reads.
        As :func:`disk_usage`.
    """
    from ._open import open_source

    text = os.fspath(location)
    if not must_exist and "://" not in text and not Path(text).exists():
        if run_ids:
            from wfctl._errors import RunNotFoundError

            raise RunNotFoundError(run_ids[0])
        return UsageReport("wfctl-file", text, (), 0, 0, 0, 0, (), (), 0, None)
    with open_source(text) as source:
        return disk_usage(source, run_ids, **options)


def _sizes(source: Source, run_ids: Sequence[str]) -> Iterator[SizeInfo]:
    if not run_ids:
        yield from source.sizes()
        return
    for run_id in run_ids:
        yield from source.sizes(run_id)


def _usage(size: SizeInfo, listed: tuple[str, str] | None) -> RunUsage:
    workflow, status = listed if listed is not None else (None, None)
    return RunUsage(
        run_id=size.run_id,
        workflow=workflow,
        status=status,
        size_bytes=size.size_bytes,
        record_count=size.record_count,
        by_kind=_largest_first(_merged({}, size.by_kind)),
        by_channel=_largest_first(_merged({}, size.by_channel)),
        problem=size.problem,
    )


class _Totals:
    """What every matching run adds up to (kinds and channels by name, never by run)."""

    def __init__(self) -> None:
        self.runs = self.size = self.records = self.problems = 0
        self.kinds: dict[str, list[int]] = {}
        self.channels: dict[str, list[int]] = {}

    def add(self, run: RunUsage) -> RunUsage:
        self.runs += 1
        self.size += run.size_bytes
        self.records += run.record_count
        self.problems += run.problem is not None
        _merged(self.kinds, run.by_kind)
        _merged(self.channels, run.by_channel)
        return run


def _merged(into: dict[str, list[int]], sizes: Iterable[KindSize]) -> dict[str, list[int]]:
    for size in sizes:
        counted = into.setdefault(size.kind, [0, 0])
        counted[0] += size.record_count
        counted[1] += size.size_bytes
    return into


def _largest_first(sizes: dict[str, list[int]]) -> tuple[KindSize, ...]:
    ordered = sorted(sizes.items(), key=lambda item: (-item[1][1], item[0]))
    return tuple(KindSize(name, count, size) for name, (count, size) in ordered)


_ORDER: dict[UsageSort, Callable[[RunUsage], tuple[Any, ...]]] = {
    UsageSort.SIZE: lambda run: (-run.size_bytes, run.run_id),
    UsageSort.NAME: lambda run: (run.run_id,),
    UsageSort.RECORDS: lambda run: (-run.record_count, run.run_id),
}


def _shown(
    runs: Iterator[RunUsage],
    totals: _Totals,
    sort: UsageSort,
    reverse: bool,
    limit: int | None,
) -> list[RunUsage]:
    """The runs in the order asked, at most ``limit`` of them kept while counting."""
    key = _ORDER[sort]
    added = (totals.add(run) for run in runs)
    if limit is None:
        return sorted(added, key=key, reverse=reverse)
    pick = heapq.nlargest if reverse else heapq.nsmallest
    return pick(limit, added, key=key)


def _store_size(source: Source) -> int | None:
    said = source.store_size_bytes() if isinstance(source, StoreSize) else None
    return said if said is not None else local_bytes(source.location)


def local_bytes(location: str) -> int | None:
    """The bytes a store at ``location`` takes on disk: a directory's regular files (walked,
    no link followed), or a file with its SQLite companions (``-wal``, ``-shm``); None when
    the location is no local path (a server's URL)."""
    scheme, url, rest = location.partition("://")
    text = rest if url else scheme
    path = Path(text)
    if not text or not (path.is_dir() or path.is_file()):
        return None
    if path.is_file():
        return sum(_file_size(Path(f"{path}{suffix}")) for suffix in ("", "-wal", "-shm"))
    return _tree_size(path)


def _file_size(path: Path) -> int:
    try:
        info = path.lstat()
    except OSError:
        return 0
    return info.st_size if stat.S_ISREG(info.st_mode) else 0


def _tree_size(directory: Path) -> int:
    total = 0
    pending = [os.fspath(directory)]
    while pending:
        try:
            with os.scandir(pending.pop()) as entries:
                for entry in entries:
                    try:
                        info = entry.stat(follow_symlinks=False)
                    except OSError:
                        continue
                    if stat.S_ISDIR(info.st_mode):
                        pending.append(entry.path)
                    elif stat.S_ISREG(info.st_mode):
                        total += info.st_size
        except OSError:
            continue
    return total
