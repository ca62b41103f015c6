"""A replay's rows as they come: what the replay did with its calls, and the rows compared.

:class:`ReplayRows` is what :func:`~._replay.start_replay` returns once the replay ran: the
report without its rows, and an iterator of the rows that reads the source run again, a record
at a time (see :mod:`._pairing`). :class:`CallWatch` gathers what the rows need of the replay's
calls from its events as they happen. :class:`LiveRows` decides, while the replay runs, the
rows of the records it is served in the source's order, before the first row that could be
anything else.
"""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import AsyncIterator, Callable, Iterator
from typing import TYPE_CHECKING, Final, Protocol

from wfctl._errors import CheckpointCorruptError
from wfctl._records._recorded import StepRecord

from ._diff import STEP_STATUSES, ReplayCalls, StepDiff, row_of
from ._pairing import RowPairing, SourceIndex
from ._replay_report import ReplayReport

if TYPE_CHECKING:
    from wfctl._engine._events import WorkflowEvent

__all__ = ["CallWatch", "LiveRows", "ReplayRows", "RowSink"]


#: How many rows one step of the event loop reads when a replay's rows are iterated by ``for``.
_ROWS_A_TURN: Final = 512


class ReplayRows:
    """A replay that ran, and its step table, compared a row at a time as it is iterated.

    ``report`` is the replay without its rows (``steps`` empty, every field but the counts
    and ``identical`` known). Iterating it (``async for``, or ``for`` where no event loop
    runs) reads the source run's records again, once, in order, and yields each row as soon
    as the records before it decide it; only the rows of calls the replay executed, and those
    after them, wait for the end of the records (see :mod:`._pairing`). :meth:`finished` then
    gives the report with the rows' counts. A failure reading the source raises while
    iterating, after the rows before it. ``given``: how many first rows were handed out while
    the replay ran (:class:`LiveRows`); their records are checked to be the ones that served
    the replay (:meth:`~._pairing.RowPairing.passed`), counted, and not yielded again.
    """

    def __init__(
        self,
        report: ReplayReport,
        compared: RowPairing,
        records: Callable[[], AsyncIterator[StepRecord]],
        given: int = 0,
    ) -> None:
        self.report = report
        self._compared, self._records, self._given = compared, records, given
        #: The length of the longest key a row may have.
        calls = compared.calls
        self.widest_key = max(
            compared.index.widest_key,
            max(map(len, calls.order), default=0),
            max(map(len, calls.served), default=0),
        )
        self._counts: dict[str, int] = dict.fromkeys(STEP_STATUSES, 0)

    async def __aiter__(self) -> AsyncIterator[StepDiff]:
        compared, counts, given = self._compared, self._counts, self._given
        records = self._records()
        try:
            async for record in records:
                if given:  # its row was handed out as the replay ran
                    if not compared.passed(record):
                        raise CheckpointCorruptError(
                            self.report.source_run_id,
                            f"changed while the replay was compared: record {record.key!r} "
                            "is not the one that served it",
                        )
                    given -= 1
                    counts["cached"] += 1
                    continue
                for row in compared.take(record):
                    counts[row.status] += 1
                    yield row
        finally:
            close = getattr(records, "aclose", None)
            if close is not None:
                await close()
        for row in compared.end():
            counts[row.status] += 1
            yield row
        if compared.unmet:  # every record that served the replay was read before it ran
            raise CheckpointCorruptError(
                self.report.source_run_id,
                f"changed while the replay was compared: {compared.unmet} record(s) that served "
                "it are gone",
            )

    def __iter__(self) -> Iterator[StepDiff]:
        rows = aiter(self)
        with asyncio.Runner() as runner:
            try:
                while True:
                    batch, more = runner.run(_turn(rows))
                    yield from batch
                    if not more:
                        return
            finally:
                runner.run(rows.aclose())  # type: ignore[attr-defined]  # an async generator

    def finished(self, steps: tuple[StepDiff, ...] = ()) -> ReplayReport:
        """The report, with ``steps`` (the rows, when the caller kept them) and the counts of
        the rows iterated."""
        counts = tuple(self._counts.items())
        return dataclasses.replace(self.report, steps=steps, row_counts=counts)


async def _turn(rows: AsyncIterator[StepDiff]) -> tuple[list[StepDiff], bool]:
    """Return the next rows (at most :data:`_ROWS_A_TURN`), and whether more may follow."""
    batch: list[StepDiff] = []
    async for row in rows:
        batch.append(row)
        if len(batch) >= _ROWS_A_TURN:
            return batch, True
    return batch, False


#: The events that say what a replay did with a call.
_CALL_EVENTS: Final = frozenset({"step_started", "step_cached", "step_failed"})


class CallWatch:
    """What the replay does with each call, gathered from its events as they happen.

    The run keeps no event history (a replay of 100,000 steps would hold every event to its
    end); this listener keeps what the diff reads: which record served each cached call, the
    order of the other calls (a served call's place among them does not matter: its row
    stands where its record is), and each failed call's error.
    """

    def __init__(self, on_event: Callable[[WorkflowEvent], None] | None) -> None:
        self.calls = ReplayCalls()
        self._seen: set[str] = set()  # keys of the calls that were not served
        self._on_event = on_event
        #: The replay's run, once it started.
        self.run_id: str | None = None

    def seen(self, event: WorkflowEvent) -> None:
        """Note ``event`` if it is about a call, then hand it to the caller's listener."""
        if self.run_id is None:
            self.run_id = event.run_id
        key = event.key
        if key is not None and event.kind in _CALL_EVENTS:
            calls = self.calls
            if event.kind == "step_cached":
                calls.served[key] = str(event.extra.get("recorded_as", key))
            elif key not in self._seen:
                self._seen.add(key)
                calls.order.append(key)
            if event.kind == "step_failed":
                calls.failed[key] = str(event.extra.get("error", "failed"))
        if self._on_event is not None:
            self._on_event(event)


class RowSink(Protocol):
    """Where the rows decided while a replay runs go (see :class:`LiveRows`)."""

    def start(self, source_run_id: str, source_checkpoint_id: str, widest_key: int) -> None:
        """Told, before the replay and any row, the checkpoint replayed, its run, and the
        length of the longest key the source recorded."""
        ...

    def row(self, row: StepDiff) -> None:
        """The table's next row."""
        ...


#: At most how many records served ahead of the source's order :class:`LiveRows` holds.
_HELD_AHEAD: Final = 4096


class LiveRows:
    """The first rows of a replay, decided as its calls are served, in the source's order.

    A record that served a call of the replay is its row, ``cached``, once every record before
    it in the source (the whole history, origins first) has had its row: no executed call, no
    failure and no later record of the same key can change or come before such a row (see
    :class:`~._pairing.RowPairing`). So rows are handed to ``sink`` while the replay runs,
    from the first record on, for as long as each next record in the source's order has served
    a call; they stop for good at the first key recorded more than once, at the first place a
    source failure stands, or when more than :data:`_HELD_AHEAD` records were served ahead of
    the next row (only those are held). :class:`ReplayRows` compares every record again once
    the replay ended, and yields the rows after the ``given`` ones. Reads nothing: the records
    are those the replay is served.

    ``sink`` must not keep the replay from going on: what it raises is kept in ``error``
    (no row is handed out after it), for the caller to raise once the replay ended.
    """

    def __init__(self, index: SourceIndex, sink: RowSink) -> None:
        self._keys = iter(index.keys)
        self._last = index.last
        self._stop = min((before for before, _ in index.failures), default=None)
        self._on_row = sink.row
        self._ahead: dict[str, tuple[str, StepRecord]] = {}
        self._next: str | None = None
        self.given = 0
        self.error: Exception | None = None
        self.open = True
        self._advance()

    def served(self, key: str, record: StepRecord) -> None:
        """The replay's call ``key`` was served from ``record``: hand out the rows it decides."""
        if not self.open:
            return
        ahead = self._ahead
        ahead[record.key] = (key, record)
        while self._next in ahead:
            call, served = ahead.pop(self._next)
            try:
                self._on_row(row_of(call, "cached", served, served.digest, served.result))
            except Exception as exc:  # the caller's: raised once the replay ended
                self.error = exc
                self.close()
                return
            self.given += 1
            self._advance()
            if not self.open:
                return
        if len(ahead) > _HELD_AHEAD:
            self.close()

    def close(self) -> None:
        """Hand out no more rows, and let go of what was held for them."""
        self.open = False
        self._ahead = {}
        self._keys = iter(())
        self._next = None

    def _advance(self) -> None:
        """Move to the source's next key, or close where a row may be anything but cached."""
        key = next(self._keys, None)
        stop = self._stop
        if key is None or key in self._last or (stop is not None and self.given >= stop):
            self.close()
        else:
            self._next = key
