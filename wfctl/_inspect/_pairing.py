"""Pairing a replay's calls with the source run's records, a row at a time in the source's order.

:func:`diff_rows` reads the source run's records once, in order, and yields the step table's
rows as :mod:`._diff` orders them (by the position of their source record or failure, then the
rows without one in the order of the replay's calls), holding none of the records it has
passed. What it must know before the first record, and cannot learn from records that come
later, is gathered as the run is read for the replay (:class:`SourceIndexing`): the last record
of each key recorded more than once (it supersedes the earlier ones; the row stands where the
key came first) and which failed calls a record of their key supersedes.

A row is written as soon as the records before it are decided. Only calls the replay executed
(or that failed in it) can pair with a record they do not name by the record that served
them, so from the first record such a call may pair with, the rows wait for the end of the
records, where those calls are paired (as :func:`diff_steps` always did). A replay that
executes nothing (from its source's head, say) holds no row.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field

from wfctl._records._attempts import StepFailure
from wfctl._records._recorded import StepRecord

from ._diff import (
    ReplayCalls,
    StepDiff,
    against_failure,
    bucket,
    executed_row,
    failure_row,
    row_of,
)

__all__ = ["RowPairing", "SourceIndex", "SourceIndexing", "diff_rows", "diff_steps", "index_of"]


@dataclass(slots=True)
class SourceIndex:
    """What :func:`diff_rows` must know of the source before reading its records.

    ``last``: the last record of each key recorded more than once. ``failures``: the source's
    step failures, each with how many records came before the record that holds it.
    ``recorded``: keys of those failures that some record of the source has (the record
    supersedes the failure). ``widest_key``: the length of the longest key recorded.
    ``keys``: every key recorded, in the order each first came (the rows' order), for the
    rows decided while the replay runs (:class:`~._replay_rows.LiveRows`), which let it go.
    """

    last: dict[str, StepRecord] = field(default_factory=dict)
    failures: list[tuple[int, StepFailure]] = field(default_factory=list)
    recorded: set[str] = field(default_factory=set)
    widest_key: int = 0
    keys: dict[str, None] = field(default_factory=dict)


class SourceIndexing:
    """Gather a :class:`SourceIndex` from the source's records as they are read, in order.

    It holds every key, in the order each first came (the duplicates cannot be told apart
    otherwise), and the records of the keys that came more than once.
    """

    def __init__(self) -> None:
        self._seen: dict[str, None] = {}
        self._last: dict[str, StepRecord] = {}
        self._widest = 0

    def add(self, record: StepRecord) -> None:
        """Note the source's next record."""
        key = record.key
        if key in self._seen:
            self._last[key] = record
        else:
            self._seen[key] = None
            self._widest = max(self._widest, len(key))

    def index(self, failures: Sequence[tuple[int, StepFailure]]) -> SourceIndex:
        """Return the index of the records noted, with the source's ``failures``."""
        seen, self._seen = self._seen, {}
        return index_of(seen, self._widest, failures, self._last)


def index_of(
    keys: dict[str, None],
    widest: int,
    failures: Sequence[tuple[int, StepFailure]],
    last: dict[str, StepRecord] | None = None,
) -> SourceIndex:
    """Return the index of a source whose step ``keys`` (in order; the longest ``widest``
    long), ``failures`` and records of the keys recorded more than once (``last``) are known."""
    recorded = {failure.key for _, failure in failures if failure.key in keys}
    return SourceIndex(last or {}, list(failures), recorded, widest, keys)


def diff_steps(
    source_records: Sequence[StepRecord],
    calls: ReplayCalls,
    source_failures: Sequence[tuple[int, StepFailure]] = (),
) -> tuple[StepDiff, ...]:
    """Return the step table of a replay against the source run's records, whole.

    Args:
        source_records: every record of the source run's history, origins first.
        calls: what the replay did with its calls.
        source_failures: the source's step failures, each with how many of ``source_records``
            came before the record that holds it (:attr:`~wfctl._engine._restore.History.failures`).
    """
    indexing = SourceIndexing()
    for record in source_records:
        indexing.add(record)
    return tuple(diff_rows(source_records, indexing.index(source_failures), calls))


@dataclass(slots=True)
class _Pending:
    """A source key whose row waits for the executed calls to be paired."""

    key: str
    record: StepRecord
    position: int


#: A place in the rows that wait: a row, or a source key to pair.
_Waiting = StepDiff | _Pending


def diff_rows(
    records: Iterable[StepRecord], index: SourceIndex, calls: ReplayCalls
) -> Iterator[StepDiff]:
    """Yield the step table of a replay against the source run, as the records are read.

    Rows come in the order :func:`diff_steps` returns them: by the position of their source
    record (where its key came first) or failure, then (for rows without one) by the order of
    the replay's calls.

    Args:
        records: every record of the source run's history, origins first, read once.
        index: what the records' order cannot tell in time (see :class:`SourceIndexing`).
        calls: what the replay did with its calls.
    """
    return RowPairing(index, calls).rows(records)


class RowPairing:
    """One pass of :func:`diff_rows`, a record at a time (see the module docstring for what it
    holds): :meth:`take` each record in order, then :meth:`end`."""

    def __init__(
        self, index: SourceIndex, calls: ReplayCalls, *, served_from_source: bool = False
    ) -> None:
        """Args:
        served_from_source: every record that served a call is among the source's records
            (a replay's own calls, served from what it read of the source): served calls are
            counted as they are met, not held, and :attr:`unmet` is how many were not.
        """
        self.index, self.calls = index, calls
        served = calls.served
        #: Served calls not yet met with their record (what is left is served at the end),
        #: or how many (``served_from_source``).
        self.unmet: dict[str, str] | int = len(served) if served_from_source else dict(served)
        #: The calls each record served, in the order they were served, for a record that
        #: served a call of another key (any other call serves its own record).
        targets = {recorded_as for key, recorded_as in served.items() if recorded_as != key}
        self.shared: dict[str, list[str]] = {}
        for key, recorded_as in served.items():
            if recorded_as in targets:
                self.shared.setdefault(recorded_as, []).append(key)
        #: Calls that were not served, each with its place in the calls' order.
        self.unserved = {key: i for i, key in enumerate(calls.order) if key not in served}
        self.buckets = {bucket(calls.records[key]) for key in self.unserved if key in calls.records}
        # A later failure of a key supersedes an earlier one, as a later record does; one a
        # record of its key supersedes has no row.
        failures: dict[str, tuple[int, StepFailure]] = {}
        for before, failure in index.failures:
            failures[failure.key] = (before, failure)
        self.failure_rows: list[tuple[int, tuple[int, int], StepDiff]] = []
        #: Unserved calls whose row is beside a failure of their key (no record has it).
        self.beside_failure: set[str] = set()
        for order, (key, (before, failure)) in enumerate(failures.items()):
            if key in index.recorded:
                continue
            at = self.unserved.get(key)
            if at is not None:  # a call of the failed key: compared with the failure
                row = failure_row(key, failure, calls, calls.records.get(key))
                self.failure_rows.append((before, (0, at), row))
                self.beside_failure.add(key)
            else:
                self.failure_rows.append((before, (1, order), against_failure(key, failure)))
        self.failure_rows.sort(key=lambda item: item[0])
        self.next_failure = 0
        #: Rows from the first record an unserved call may pair with, waiting for the end.
        self.waiting: list[_Waiting] | None = None
        #: Keys recorded again later whose row came already.
        self.superseded: set[str] = set()
        self.count = 0  # records taken
        self.position = 0  # keys taken

    def rows(self, records: Iterable[StepRecord]) -> Iterator[StepDiff]:
        """Yield every row, reading ``records`` once."""
        for record in records:
            yield from self.take(record)
        yield from self.end()

    def take(self, record: StepRecord) -> list[StepDiff]:
        """Return the rows the source's next record decides (often one, maybe none)."""
        key = record.key
        last = self.index.last
        if key in last:
            if key in self.superseded:
                self.count += 1
                return []
            self.superseded.add(key)
            record = last[key]
        decided: list[StepDiff] = []
        if self.next_failure < len(self.failure_rows):
            self._place(self._failures_before(self.count), decided)
        rows = self._rows_of(key, record, self.position)
        if self.waiting is None and len(rows) == 1 and isinstance(rows[0], StepDiff):
            decided.append(rows[0])  # the common case, without a loop
        else:
            self._place(rows, decided)
        self.position += 1
        self.count += 1
        return decided

    def passed(self, record: StepRecord) -> bool:
        """Take the source's next record, whose row was handed out while the replay ran
        (:class:`~._replay_rows.LiveRows`): ``cached``, of the one call it served, no failure
        and no later record of its key before it. Return False, taking nothing, if the record
        is not such a one (the source changed since the replay read it)."""
        key = record.key
        shared = self.shared.get(key) if self.shared else None
        served: Sequence[str] = shared if shared is not None else ()
        if shared is None and self.calls.served.get(key) == key:
            served = (key,)
        if len(served) != 1 or key in self.index.last or self.count != self.position:
            return False
        if isinstance(self.unmet, int):
            self.unmet -= 1
        else:
            del self.unmet[served[0]]
        self.position += 1
        self.count += 1
        return True

    def end(self) -> Iterator[StepDiff]:
        """Yield the rows left once every record was taken."""
        decided: list[StepDiff] = []
        self._place(self._failures_before(None), decided)
        yield from decided
        waiting, self.waiting = self.waiting or [], None
        yield from self._end(waiting)

    def _failures_before(self, count: int | None) -> list[StepDiff]:
        """The failure rows placed before the record ``count`` (None: after the last)."""
        rows: list[StepDiff] = []
        items, at = self.failure_rows, self.next_failure
        group: list[tuple[tuple[int, int], StepDiff]] = []
        while at < len(items) and (count is None or items[at][0] <= count):
            group.append((items[at][1], items[at][2]))
            at += 1
        self.next_failure = at
        group.sort(key=lambda item: item[0])  # calls' failures first, in the calls' order
        rows.extend(row for _, row in group)
        return rows

    def _rows_of(self, key: str, record: StepRecord, position: int) -> Sequence[_Waiting]:
        """The row(s) of the source key ``key`` (its last record ``record``), or a pending key."""
        served: Sequence[str] | None = self.shared.get(key) if self.shared else None
        if served is None and self.calls.served.get(key) == key:
            served = (key,)
        if served:
            if isinstance(self.unmet, int):
                self.unmet -= len(served)
            else:
                for call in served:
                    del self.unmet[call]
            return [row_of(call, "cached", record, record.digest, record.result) for call in served]
        if key in self.unserved or (self.buckets and bucket(record) in self.buckets):
            return (_Pending(key, record, position),)
        return (row_of(key, "not reached", record, None),)

    def _place(self, items: Sequence[_Waiting], decided: list[StepDiff]) -> None:
        """Add ``items`` to the rows ``decided`` now, or keep them from the first pending key on."""
        for item in items:
            if self.waiting is None and isinstance(item, StepDiff):
                decided.append(item)
            else:
                if self.waiting is None:
                    self.waiting = []
                self.waiting.append(item)

    def _end(self, waiting: list[_Waiting]) -> Iterator[StepDiff]:
        """Pair the unserved calls with the pending keys, then yield the rows that waited,
        the calls served by no record read, and the rows without a source record."""
        calls = self.calls
        pending = {item.key: item for item in waiting if isinstance(item, _Pending)}
        paired: dict[str, StepDiff] = {}
        unplaced: list[tuple[int, StepDiff]] = []
        for key, at in self.unserved.items():
            if key in self.beside_failure:
                continue
            record = calls.records.get(key)
            counterpart = pending.get(key)
            if counterpart is not None and key in paired:
                counterpart = None
            found: StepRecord | None
            if record is not None:
                if counterpart is None or counterpart.record.digest != record.digest:
                    counterpart = _same_call(pending, paired, record) or counterpart
                found = counterpart.record if counterpart is not None else None
                row = executed_row(key, record, found, key in calls.changed)
            else:
                error = calls.failed.get(key, "no result: the replay stopped before it returned")
                found = counterpart.record if counterpart is not None else None
                row = row_of(key, "failed", found, None, error=error)
            if counterpart is not None:
                paired[counterpart.key] = row
            else:
                unplaced.append((at, row))
        for item in waiting:
            if type(item) is _Pending:
                yield paired.get(item.key) or row_of(item.key, "not reached", item.record, None)
            else:
                yield item  # type: ignore[misc]  # a row decided as it came
        # Every row without a source record comes after every row with one: first the calls
        # served by a record the source no longer has, then the others in the calls' order.
        for key in self.unmet if isinstance(self.unmet, dict) else ():
            yield row_of(key, "cached", None, None, None)
        unplaced.sort(key=lambda item: item[0])
        yield from (row for _, row in unplaced)


def _same_call(
    pending: dict[str, _Pending], paired: dict[str, StepDiff], record: StepRecord
) -> _Pending | None:
    """Return the oldest unpaired pending key of the same step, scope, explicit key and digest."""
    wanted = bucket(record)
    candidates = (
        item for k, item in pending.items() if k not in paired and bucket(item.record) == wanted
    )
    return min(candidates, key=lambda item: item.position, default=None)
