"""Reading a store for people and scripts: ``wfctl runs``, ``log``, ``show``, ``export``, ``pause``.

Each function opens the store, makes its reads, and returns a frozen report whose
``to_json()`` is the command's ``--json`` document. Reads never create the store. A store that
does not exist is refused (``StoreLocationError``) unless ``must_exist=False`` (the CLI passes
that for the configured or default store, which may not exist before the first run): then
``list_runs`` returns no runs and the others report the run as not found. A path that is not a
directory, or a store whose ``runs`` is a link or a file, is always refused.
Chains are read strictly (every checksum verified, one unbroken chain), so a corrupt journal is
reported by name (``CheckpointCorruptError``) rather than shown in part.
"""

from __future__ import annotations

import errno
import json
import os
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from math import isfinite
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final, TypeVar

import orjson

from ._attempts import AttemptRecord, StepFailure
from ._checkpoint import Checkpoint, split_checkpoint_id, validate_run_id
from ._config import StoreRef
from ._documents import document, epoch_time, summary_json, utc_time
from ._errors import (
    CheckpointNotFoundError,
    NothingVerifiedError,
    RunNotFoundError,
    RunStateError,
    WfctlError,
)
from ._frozen import slot_setters
from ._payloads import (
    CancelledPayload,
    CompletedPayload,
    FailedPayload,
    PausePayload,
    ResumePayload,
    RootPayload,
    StepPayload,
    payload_of,
    served_count,
    served_keys,
)
from ._query import RunQuery
from ._readable import readable_text
from ._redact import shown
from ._storage import FileCheckpointStorage, RunSummary
from ._storage._base import RunStoreBase, summarize
from ._storage._capabilities import load_chain, request_pause
from ._storage._open import on_store, open_storage, redact, within_store
from ._storage._pages import PagedRun, PagedStore
from ._storage._protocol import RunStore

T = TypeVar("T")

if TYPE_CHECKING:
    from ._lineage import LineageReport
    from ._recorded import StepRecord

__all__ = [
    "EXPORT_FORMATS",
    "WHOLE_CHAIN",
    "LogEntry",
    "LogPage",
    "PauseReport",
    "RunLog",
    "RunsReport",
    "StepEntry",
    "checkpoint_json",
    "checkpoint_toml",
    "export_run",
    "list_runs",
    "log_entry",
    "pause_run",
    "run_log",
    "show_checkpoint",
    "to_toml",
    "verify_runs",
]

EXPORT_FORMATS = ("json", "toml")


@dataclass(frozen=True, slots=True)
class RunsReport:
    """The runs of a store a query selected, in its order, and how many there were."""

    store: StoreRef
    runs: tuple[RunSummary, ...]
    #: How many runs matched the query's filters (``runs`` holds at most ``limit`` of them).
    matching_count: int
    #: How many runs the store holds.
    total_count: int
    query: RunQuery

    def to_json(self) -> dict[str, Any]:
        """Return the ``wfctl/runs@1`` document (see docs/json.md)."""
        return document(
            "runs",
            {
                "store": shown(self.store),
                "run_count": len(self.runs),
                "matching_run_count": self.matching_count,
                "total_run_count": self.total_count,
                "runs": [summary_json(r) for r in self.runs],
            },
        )


def list_runs(
    store: StoreRef,
    query: RunQuery | None = None,
    *,
    workflow_name: str | None = None,
    status: str | None = None,
    must_exist: bool = True,
) -> RunsReport:
    """List the store's runs that ``query`` selects (every run, oldest first, by default).

    Every run's records are verified (checksums and chain links, see
    :func:`~wfctl._storage._journal.check_journal`). A run that fails is listed with status
    ``corrupt`` and its problem, one that cannot be read as ``unreadable``; neither is raised.
    ``workflow_name`` and ``status`` (exact) are kept for callers that predate the query.

    Raises:
        StoreLocationError: the store is missing (with ``must_exist``) or is not one.
    """
    storage = open_storage(store, must_exist=must_exist)
    if isinstance(storage, FileCheckpointStorage):
        runs = storage.run_summaries(workflow_name=workflow_name)  # no event loop: start-up
    else:
        runs = on_store(
            store, lambda s: s.list_runs(workflow_name=workflow_name), must_exist=must_exist
        )
    if status is not None:
        runs = [r for r in runs if r.status == status]
    query = query or RunQuery()
    shown, matching = query.apply(runs)
    return RunsReport(store, tuple(shown), matching, len(runs), query)


@dataclass(frozen=True, slots=True)
class StepEntry:
    """A step result a checkpoint committed: its key and how long the call took (seconds).

    ``record`` is the stored step record (arguments and result, for ``wfctl log -v``).
    """

    key: str
    duration: float | None
    record: StepRecord | None = None

    def describe_args(self) -> str:
        """Return the arguments the call received, or why they are not stored."""
        return self.record.describe_args() if self.record else "not recorded"

    def describe_result(self) -> str:
        """Return the call's stored result as people read it (cut to 200 characters)."""
        return readable_text(self.record.result, 200) if self.record else "not recorded"


@dataclass(frozen=True, slots=True)
class LogEntry:
    """One checkpoint of a run's timeline and what it recorded."""

    checkpoint_id: str
    seq: int
    kind: str
    timestamp: str
    steps: tuple[StepEntry, ...] = ()
    served: tuple[str, ...] = ()
    #: How many calls were served from the cache (``served`` names them in older records).
    served_count: int = 0
    requests: tuple[str, ...] = ()
    answers: tuple[tuple[str, Any], ...] = ()
    error: str | None = None
    detail: str | None = None
    #: Failed attempts of step calls recorded here (each retried after its backoff).
    attempts: tuple[AttemptRecord, ...] = ()
    #: Step calls recorded here as failed for good, the workflow going on (it caught them).
    failures: tuple[StepFailure, ...] = ()

    def to_json(self) -> dict[str, Any]:
        """Return the entry as an item of the log document's ``checkpoints``."""
        return self._document(utc_time)

    def _document(self, utc: Callable[[str], str | None]) -> dict[str, Any]:
        """:meth:`to_json`, with stored times converted by ``utc`` (:func:`utc_time`'s results)."""
        return {
            "checkpoint_id": self.checkpoint_id,
            "seq": self.seq,
            "kind": self.kind,
            "created_at": utc(self.timestamp),
            "steps": [{"key": s.key, "duration_s": s.duration} for s in self.steps],
            "served_keys": list(self.served),
            "served_count": self.served_count,
            "request_ids": list(self.requests),
            "answers": dict(self.answers),
            "error": self.error,
            "detail": self.detail,
            "attempts": [_attempt_json(a) for a in self.attempts],
            "failures": [
                {"key": f.key, "error": f.error, "failed_at": epoch_time(f.at)}
                for f in self.failures
            ],
        }


def _attempt_json(attempt: AttemptRecord) -> dict[str, Any]:
    return {
        "key": attempt.key,
        "attempt": attempt.attempt,
        "error": f"{attempt.error_type}: {attempt.message}",
        "failed_at": epoch_time(attempt.at),
        "retry_at": epoch_time(attempt.retry_at),
    }


@dataclass(frozen=True, slots=True)
class LogPage:
    """Which checkpoints of a run ``wfctl log`` lists: all of them by default.

    ``from_seq`` starts the list at that seq; ``last`` lists only the chain's last N (the two
    exclude each other); ``limit`` lists at most N from where the list starts. The list is
    always in chain order, and every record before its end is verified whether it is listed
    or not.

    Raises:
        ValueError: (from the constructor) a negative number, or both ``from_seq`` and
            ``last``.
    """

    from_seq: int | None = None
    last: int | None = None
    limit: int | None = None

    def __post_init__(self) -> None:
        for name in ("from_seq", "last", "limit"):
            value = getattr(self, name)
            if value is not None and (type(value) is not int or value < 0):
                raise ValueError(f"{name} must be an integer of 0 or more, not {value!r}")
        if self.from_seq is not None and self.last is not None:
            raise ValueError("give from_seq or last, not both")

    def seqs(self, head_seq: int) -> range:
        """The seqs listed of a chain whose head is ``head_seq`` (empty past the head)."""
        end = head_seq + 1
        first = self.from_seq or 0
        if self.last is not None:
            first = max(0, end - self.last)
        if self.limit is not None:
            end = min(end, first + self.limit)
        return range(first, max(first, end))


#: Every checkpoint.
WHOLE_CHAIN = LogPage()


@dataclass(frozen=True, slots=True)
class RunLog:
    """A run's chain as a timeline, from its root to its head (or the page of it asked for).

    ``entries`` are read from the journal as they are iterated (memory stays flat however long
    the run is), so they can be iterated once; :meth:`to_json` iterates them.
    """

    summary: RunSummary
    entries: Iterable[LogEntry]
    #: The seqs ``entries`` holds, in order (every one, ``range(checkpoint_count)``, unless a
    #: :class:`LogPage` narrowed it).
    listed: range | None = None

    @property
    def checkpoint_count(self) -> int:
        """How many checkpoints the chain holds (its seqs are contiguous from 0: verified)."""
        return self.summary.head_seq + 1

    @property
    def seqs(self) -> range:
        """The seqs of the checkpoints listed."""
        return range(self.checkpoint_count) if self.listed is None else self.listed

    def _fields(self, checkpoints: list[Any]) -> dict[str, Any]:
        listed = self.seqs
        return {
            "run": summary_json(self.summary),
            "checkpoint_count": self.checkpoint_count,
            "first_listed_seq": listed.start,
            "listed_checkpoint_count": len(listed),
            "checkpoints": checkpoints,
        }

    def to_json(self) -> dict[str, Any]:
        """Return the ``wfctl/log@1`` document (see docs/json.md)."""
        return document("log", self._fields([e.to_json() for e in self.entries]))

    def json_text(self) -> Iterator[str]:
        """Yield :meth:`to_json`'s document as indented JSON text, a page of entries at a time.

        If reading an entry fails, the entries read before it are given before the error goes
        on (the document is then left unfinished).
        """
        utc = _UtcTimes()
        placed = document("log", self._fields([None]))
        return _json_text(placed, self.entries, lambda page: _page_json(page, utc))


def _json_text(
    placed: dict[str, Any], items: Iterable[T], page_text: Callable[[list[T]], str]
) -> Iterator[str]:
    """Yield ``placed`` as ``json.dumps(indent=2, ensure_ascii=False)`` writes it, its last
    value (a list of one ``None``) holding ``items`` instead, a page of them at a time.

    ``page_text`` writes a page of items as ``json.dumps`` writes them in that list (each
    indented by 4, joined by :data:`_ITEM_SEPARATOR`). If reading an item fails, the items
    read before it are given before the error goes on (the document is then left unfinished).
    """
    head = json.dumps(placed, indent=2, ensure_ascii=False)
    opening, _, closing = head.rpartition("null")  # the list's one item: the last value
    page: list[T] = []
    before = opening  # then the separator of the list's items
    try:
        for item in items:
            page.append(item)
            if len(page) == _JSON_PAGE:
                yield before + page_text(page)
                before = _ITEM_SEPARATOR
                page.clear()
    except Exception:
        if page:
            yield before + page_text(page)
        raise
    if page:
        yield before + page_text(page) + closing + "\n"
    elif before == opening:  # no item at all: ``[]``, as json.dumps writes an empty list
        yield opening.rstrip() + closing.lstrip() + "\n"
    else:  # after a full page
        yield closing + "\n"


#: Entries of ``log --json`` (checkpoints of ``export``) given per string by :func:`_json_text`.
_JSON_PAGE = 200
#: What ``json.dumps`` writes between two items of ``checkpoints`` (indented by 4).
_ITEM_SEPARATOR = ",\n    "


def _page_json(entries: list[LogEntry], utc: Callable[[str], str | None]) -> str:
    """Return the entries as items of the document's ``checkpoints``, as ``json.dumps`` writes
    them there (each indented by 4, joined by :data:`_ITEM_SEPARATOR`).

    With orjson, the whole page as one list, when no entry needs the standard library (see
    :func:`_indented_json`); a list's items are indented by 2, so each line gets 2 more.
    """
    documents = [None if entry.answers else _orjson_document(entry, utc) for entry in entries]
    if None not in documents:
        try:
            text = orjson.dumps(documents, option=orjson.OPT_INDENT_2).decode()
        except orjson.JSONEncodeError:
            pass
        else:
            return text[4:-2].replace("\n", "\n  ")  # within "[\n  " and "\n]"
    return _ITEM_SEPARATOR.join([_indented_json(e, utc).replace("\n", "\n    ") for e in entries])


def _orjson_document(entry: LogEntry, utc: Callable[[str], str | None]) -> dict[str, Any]:
    """The entry's document with its durations as the standard library writes them."""
    document = entry._document(utc)
    for step in document["steps"]:
        duration = step["duration_s"]
        if duration is not None:
            step["duration_s"] = orjson.Fragment(
                _float_repr(duration) if isfinite(duration) else _JSON_FLOAT.encode(duration)
            )
    return document


def _indented_json(entry: LogEntry, utc: Callable[[str], str | None] = utc_time) -> str:
    """Return ``json.dumps(entry.to_json(), indent=2, ensure_ascii=False)``, with orjson if it can.

    The standard library's encoder runs in Python when it indents (~40 µs an entry). orjson
    writes the same text (indent, separators, escapes, UTF-8: the journal relies on the
    escapes being the same) except for floats (``1e-5`` for the standard library's ``1e-05``),
    so durations, the only floats of an entry without answers, are given as the standard
    library writes them. An entry with answers (any value) or with what orjson refuses (an
    integer beyond 64 bits, a lone surrogate) is written by the standard library. ``utc``
    converts stored times as :func:`utc_time` does.
    """
    if not entry.answers:
        try:
            return orjson.dumps(_orjson_document(entry, utc), option=orjson.OPT_INDENT_2).decode()
        except orjson.JSONEncodeError:
            pass
    return json.dumps(entry._document(utc), indent=2, ensure_ascii=False)


#: Writes a float as ``json.dumps`` does (``NaN`` and ``Infinity`` included); a finite float
#: it writes as ``float.__repr__`` does (``json.encoder``'s ``floatstr``), which is cheaper.
_JSON_FLOAT = json.JSONEncoder()
_float_repr = float.__repr__


class _UtcTimes:
    """:func:`utc_time`, converting each second once for the stored times of one run.

    A run's checkpoints are written thousands a second: a time as wfctl stores it
    (``2026-12-01T07:33:18.374520+00:00``, UTC already) keeps its microseconds as written,
    and its second is checked and converted once (``...07:33:18Z``). Any other text (another
    offset, no fraction, a fraction of zero, which :func:`utc_time` leaves out) is converted by
    :func:`utc_time` itself.
    """

    def __init__(self) -> None:
        self._second = ""
        self._shown: str | None = None

    def __call__(self, text: str) -> str | None:
        fraction = text[20:26]
        if (
            len(text) != 32
            or text[19] != "."
            or text[26:] != "+00:00"
            or not text.isascii()
            or not fraction.isdigit()
            or fraction == "000000"
        ):
            return utc_time(text)
        second = text[:19]
        if second != self._second:
            self._shown = utc_time(second + "+00:00")  # None: not a time
            self._second = second
        shown = self._shown
        return None if shown is None else f"{shown[:-1]}.{fraction}Z"


def log_entry(checkpoint: Checkpoint) -> LogEntry:
    """Return the timeline entry of one checkpoint (what ``log`` shows of it)."""
    steps: tuple[StepEntry, ...] = ()
    requests: tuple[str, ...] = ()
    answers: tuple[tuple[str, Any], ...] = ()
    attempts: tuple[AttemptRecord, ...] = ()
    failures: tuple[StepFailure, ...] = ()
    error = detail = None
    match payload_of(checkpoint):
        case StepPayload(steps=records, attempts=failed, failures=failed_for_good, started=started):
            steps = tuple([_step_entry(r) for r in records])
            attempts = tuple(failed)
            failures = tuple(failed_for_good)
            if started:  # the retry limit's count: say which attempts began here
                detail = "; ".join(
                    f"{s.key} attempt {s.attempt} paused in, not counted"
                    if s.withdrawn
                    else f"started {s.key} attempt {s.attempt}"
                    for s in started
                )
        case PausePayload(requests=asked, reason=reason):
            requests = tuple(r.request_id for r in asked)
            detail = f"reason: {reason}"
        case ResumePayload(responses=responses, reason=reason):
            answers = tuple(sorted(responses.items()))
            detail = f"reason: {reason}"
        case FailedPayload(error_type=error_type, message=message):
            error = f"{error_type}: {message}"
        case CancelledPayload(status=before, reason=why):
            detail = f"cancelled while {before}" + (f": {why}" if why is not None else "")
        case CompletedPayload(result=result):
            detail = f"result: {readable_text(result, 100)}"
        case RootPayload(workflow=workflow, input=encoded_input):
            detail = f"workflow {workflow or '?'}, input: {readable_text(encoded_input, 100)}"
            if checkpoint.origin_checkpoint_id:
                detail += f", restored from {checkpoint.origin_checkpoint_id}"
    # Filled in slot by slot (one entry per record of a run, however long): what
    # ``LogEntry(...)`` makes of these values, at half the cost.
    entry = _new(LogEntry)
    _SET_CHECKPOINT_ID(entry, checkpoint.checkpoint_id)
    _SET_SEQ(entry, checkpoint.seq)
    _SET_KIND(entry, checkpoint.kind)
    _SET_TIMESTAMP(entry, checkpoint.timestamp)
    _SET_STEPS(entry, steps)
    if "served" in checkpoint.data:
        _SET_SERVED(entry, served_keys(checkpoint))
        _SET_SERVED_COUNT(entry, served_count(checkpoint))
    else:  # what both give without it: most records served nothing
        _SET_SERVED(entry, ())
        _SET_SERVED_COUNT(entry, 0)
    _SET_REQUESTS(entry, requests)
    _SET_ANSWERS(entry, answers)
    _SET_ERROR(entry, error)
    _SET_DETAIL(entry, detail)
    _SET_ATTEMPTS(entry, attempts)
    _SET_FAILURES(entry, failures)
    return entry


def _step_entry(record: StepRecord) -> StepEntry:
    entry = _new(StepEntry)
    _SET_STEP_KEY(entry, record.key)
    _SET_STEP_DURATION(entry, float(record.duration))
    _SET_STEP_RECORD(entry, record)
    return entry


(
    _SET_CHECKPOINT_ID,
    _SET_SEQ,
    _SET_KIND,
    _SET_TIMESTAMP,
    _SET_STEPS,
    _SET_SERVED,
    _SET_SERVED_COUNT,
    _SET_REQUESTS,
    _SET_ANSWERS,
    _SET_ERROR,
    _SET_DETAIL,
    _SET_ATTEMPTS,
    _SET_FAILURES,
) = slot_setters(
    LogEntry,
    *("checkpoint_id", "seq", "kind", "timestamp", "steps", "served", "served_count"),
    *("requests", "answers", "error", "detail", "attempts", "failures"),
)
_SET_STEP_KEY, _SET_STEP_DURATION, _SET_STEP_RECORD = slot_setters(
    StepEntry, "key", "duration", "record"
)
_new = object.__new__


def run_log(
    store: StoreRef, run_id: str, *, must_exist: bool = True, page: LogPage = WHOLE_CHAIN
) -> RunLog:
    """Return the run's chain as a timeline, its entries read as they are iterated.

    From a file store, the summary is read from the run's root and head (both verified), and
    each entry is yielded only once its record and every one before it are verified (checksum
    and link) and decoded: the journal is read once, and the first entry shows at once. A
    record that fails raises while iterating, after the entries before it. A PostgreSQL store
    is read the same way, its records a page at a time (one statement for the
    ends, then one per :data:`~._storage._pages.PAGE_RECORDS` records), on an event loop kept
    until the entries end. Other stores give the whole chain verified first.

    ``page`` narrows the entries to part of the chain: from a file or PostgreSQL store the
    records before it are verified (checksum and link) without being decoded, and none after
    it is read.

    Raises:
        StoreLocationError: the store is missing (with ``must_exist``) or is not one.
        InvalidIdError, RunNotFoundError: no such run.
        CheckpointCorruptError: a record fails verification or the chain is broken (from a
            file store, any record but the root and head: while iterating).
    """
    summary, records, listed = read_chain(store, run_id, page, must_exist=must_exist)
    return RunLog(summary, map(log_entry, records), listed)


def read_chain(
    store: StoreRef, run_id: str, page: LogPage = WHOLE_CHAIN, *, must_exist: bool = True
) -> tuple[RunSummary, Iterator[Checkpoint], range]:
    """Return a run's summary, the records of ``page`` read as they are iterated, and their
    seqs: what :func:`run_log` lists, as checkpoints (see it for how each store is read).

    Raises:
        StoreLocationError: the store is missing (with ``must_exist``) or is not one.
        InvalidIdError, RunNotFoundError: no such run.
        CheckpointCorruptError: a record fails verification or the chain is broken (from a
            file or PostgreSQL store, any record but the root and head: while iterating).
    """
    storage = open_storage(store, must_exist=must_exist)
    if isinstance(storage, FileCheckpointStorage):
        # verified as they are read
        summary, records = storage.stream_checked_chain(run_id, page.seqs)
        return summary, records, page.seqs(summary.head_seq)
    if isinstance(storage, PagedStore) and (paged := PagedRun.opened(storage, run_id)):
        # a database: its records a page at a time
        reader, (ends, root, head) = paged
        listed = page.seqs(head.seq)
        summary = summarize(root, head, lambda: ends.leased)
        return summary, reader.records(listed, ends, root, head), listed

    summary, chain = on_store(
        store, lambda storage: summary_and_chain(storage, run_id), must_exist=must_exist
    )
    listed = page.seqs(summary.head_seq)
    return summary, iter(chain[listed.start : listed.stop]), listed


async def summary_and_chain(storage: RunStore, run_id: str) -> tuple[RunSummary, list[Checkpoint]]:
    """Return a run's summary and its strict chain, from any store.

    Raises:
        InvalidIdError, RunNotFoundError: no such run.
        CheckpointCorruptError: a record fails verification or the chain is broken.
    """
    chain = await load_chain(storage, validate_run_id(run_id))
    if isinstance(storage, RunStoreBase):
        return await storage.summary_of_chain(chain), chain
    return await storage.run_summary(run_id), chain


def show_checkpoint(store: StoreRef, checkpoint_id: str, *, must_exist: bool = True) -> Checkpoint:
    """Return one checkpoint, read strictly with its run.

    Raises:
        StoreLocationError: the store is missing (with ``must_exist``) or is not one.
        InvalidIdError, CheckpointNotFoundError: no such checkpoint.
        CheckpointCorruptError: its run's chain cannot be trusted, or its data does not read
            as its kind's.
    """

    run_id, seq = split_checkpoint_id(checkpoint_id)
    storage = open_storage(store, must_exist=must_exist)
    found: Checkpoint | None
    if isinstance(storage, FileCheckpointStorage):
        try:
            found = storage.checked_record(run_id, seq)
        except RunNotFoundError:
            raise CheckpointNotFoundError(checkpoint_id) from None
    elif isinstance(storage, PagedStore) and (ends := PagedRun.opened(storage, run_id)):
        reader, (chain_ends, _, head) = ends
        found = reader.record_at(seq, chain_ends, head)
    else:  # another store, or a database run without ends that verify: read whole
        from ._restore import load_target

        return _read_as_its_kind(
            on_store(
                store, lambda storage: load_target(storage, checkpoint_id), must_exist=must_exist
            )[1]
        )
    if found is None:
        raise CheckpointNotFoundError(checkpoint_id)
    return _read_as_its_kind(found)


def checkpoint_json(checkpoint: Checkpoint) -> dict[str, Any]:
    """Return the ``wfctl/show@1`` document: the checkpoint's record exactly as stored."""
    return document(
        "show",
        {
            "run_id": checkpoint.run_id,
            "checkpoint_id": checkpoint.checkpoint_id,
            "record": checkpoint.to_dict(),
        },
    )


def checkpoint_toml(checkpoint: Checkpoint) -> str:
    """Return the checkpoint's record as stored, as TOML (``wfctl show --toml``).

    Raises:
        WfctlError: TOML cannot hold the record, as :func:`export_run` refuses a run.
    """
    return _toml_text(
        checkpoint.to_dict(), f"checkpoint {checkpoint.checkpoint_id}", "show it as JSON (--json)"
    )


def _toml_safe(value: Any) -> Any:
    """Return ``value`` with nulls TOML cannot hold: dropped from tables, ``"null"`` in arrays."""
    if isinstance(value, dict):
        return {str(k): _toml_safe(v) for k, v in value.items() if v is not None}
    if isinstance(value, list | tuple):
        return ["null" if v is None else _toml_safe(v) for v in value]
    return value


def to_toml(document: dict[str, Any]) -> str:
    """Return ``document`` as TOML (TOML has no null: see :func:`_toml_safe`)."""
    import tomli_w

    return tomli_w.dumps(_toml_safe(document))


@dataclass(frozen=True, slots=True)
class ExportResult:
    """An exported run: how many checkpoints, and the file it was written to (if any).

    Without a file, ``chunks`` is the document's text, read from the store as it is iterated
    (a record that fails raises then, after the text before it: the document is left
    unfinished).
    """

    run_id: str
    format: str
    checkpoints: int
    output: Path | None = None
    chunks: Iterable[str] = ()

    def to_json(self) -> dict[str, Any]:
        """Return the ``wfctl/export-result@1`` document: what was written where."""
        return document(
            "export-result",
            {
                "run_id": self.run_id,
                "format": self.format,
                "checkpoint_count": self.checkpoints,
                "output_file": str(self.output) if self.output else None,
            },
        )


def export_run(
    store: StoreRef, run_id: str, fmt: str, output: Path | None = None, *, must_exist: bool = True
) -> ExportResult:
    """Export a run (its summary and every checkpoint) as JSON or TOML.

    The document is ``wfctl/export@1`` (docs/json.md): the run's summary, then every
    checkpoint as stored (without its checksum), each verified as :func:`run_log` verifies
    it. JSON is written a page of checkpoints at a time, as the run is read, so memory does
    not grow with the run's length; TOML is made whole first (tomli_w lays out an array of
    tables from all of it). With ``output`` the document is written to a new file beside it,
    renamed over it once complete: the file is replaced whole, or left as it was (a device
    or a pipe, which cannot be replaced, is written in place). Without, the text is the
    result's ``chunks``.

    Raises:
        WfctlError: ``fmt`` is not json or toml, or ``output`` cannot be written.
        StoreLocationError: the store is missing (with ``must_exist``) or is not one.
        InvalidIdError, RunNotFoundError: no such run.
        CheckpointCorruptError: its chain cannot be trusted (the root or head: at once;
            another record of a file or PostgreSQL store, while ``chunks`` is read).
    """
    if fmt not in EXPORT_FORMATS:
        raise WfctlError(f"unknown export format {fmt!r} (choose json or toml)")
    if output is not None:
        _refuse_inside_store(store, output)
    summary, chain, _ = read_chain(store, run_id, must_exist=must_exist)
    records = map(_read_as_its_kind, chain)
    count = summary.head_seq + 1
    placed = document(
        "export", {"run": summary_json(summary), "checkpoint_count": count, "checkpoints": [None]}
    )
    if fmt == "json":
        chunks: Iterable[str] = _json_text(placed, records, _checkpoints_json)
    else:
        whole = placed | {"checkpoints": [c.to_dict() for c in records]}
        chunks = [_toml_text(whole, f"run {run_id}", "export it as JSON (--format json)")]
    if output is None:
        return ExportResult(run_id, fmt, count, None, chunks)
    _write_document(output, chunks)
    return ExportResult(run_id, fmt, count, output)


def _read_as_its_kind(checkpoint: Checkpoint) -> Checkpoint:
    """``checkpoint``, once its data has read as its kind's, as ``log`` and a resume read it.

    Raises:
        CheckpointCorruptError: it does not (a record edited with its checksum).
    """
    payload_of(checkpoint)
    return checkpoint


def _refuse_inside_store(store: StoreRef, output: Path) -> None:
    """Refuse to write a file inside a directory store: it would replace a run's journal, end
    marker or answers, or leave a stranger among the runs.

    Raises:
        WfctlError: ``output`` is the store's directory or inside it (links resolved).
    """
    if within_store(output, store):
        raise WfctlError(
            f"cannot write {str(output)!r}: it is inside the store {os.path.realpath(store)}, "
            "which only wfctl writes: write the export outside it"
        )


#: How deep TOML output may nest, counting its tables and arrays (the document itself is 1).
#: TOML has no limit of its own; tomli_w writes and tomllib reads by recursion, so what they
#: manage depends on the interpreter's stack (about 240 arrays deep on Python 3.11, 330 on 3.13).
#: wfctl counts instead, with room to spare below both, so that what ``export --format toml``
#: and ``show --toml`` write, and what they refuse, is the same on every supported Python.
TOML_MAX_DEPTH: Final = 100


def _toml_text(document: dict[str, Any], holder: str, instead: str) -> str:
    """``document`` as TOML, or why TOML cannot hold it (``export`` and ``show`` alike).

    Args:
        document: the export or the record.
        holder: what the refusal says holds it (``run RUN``, ``checkpoint RUN.SEQ``).
        instead: what the refusal says to do instead (``export it as JSON (--format json)``).

    Raises:
        WfctlError: values nest deeper than :data:`TOML_MAX_DEPTH`, a string holds a lone
            surrogate (TOML text is Unicode scalar values only, and has no escape for one), or
            an integer is beyond 64 bits (a TOML reader must refuse one it cannot hold exactly,
            and 64 bits is all TOML asks a reader to hold). Checked in that order.
    """
    depth, wide = _toml_limits(document)
    if depth > TOML_MAX_DEPTH:
        raise WfctlError(
            f"{holder} holds values nested deeper than wfctl can write as TOML (more than "
            f"{TOML_MAX_DEPTH} levels of tables and arrays): {instead}"
        )
    try:
        text = to_toml(document)
        text.encode()
    except UnicodeEncodeError as exc:
        held = exc.object[exc.start : exc.end]
        raise WfctlError(
            f"{holder} holds text TOML cannot hold ({held!a}, a lone surrogate): {instead}"
        ) from None
    if wide is not None:
        raise WfctlError(
            f"{holder} holds an integer TOML cannot hold ({wide.bit_length()} bits, beyond "
            f"64): {instead}"
        )
    return text


def _toml_limits(document: Any) -> tuple[int, int | None]:
    """How deep ``document``'s dicts and lists nest (itself 1), and its first integer outside
    64-bit signed range (or None). One walk, without recursion: any depth is measured.
    """
    deepest = 0
    wide: int | None = None
    stack: list[tuple[Any, int]] = [(document, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict):
            deepest = max(deepest, depth)
            stack.extend((value, depth + 1) for value in item.values())
        elif isinstance(item, list | tuple):
            deepest = max(deepest, depth)
            stack.extend((value, depth + 1) for value in item)
        elif wide is None and type(item) is int and not -(2**63) <= item < 2**63:
            wide = item
    return deepest, wide


def _checkpoints_json(checkpoints: list[Checkpoint]) -> str:
    """The checkpoints as ``json.dumps`` writes them in the export's ``checkpoints``."""
    return _ITEM_SEPARATOR.join([_checkpoint_json(c).replace("\n", "\n    ") for c in checkpoints])


def _checkpoint_json(checkpoint: Checkpoint) -> str:
    """``json.dumps(checkpoint.to_dict(), indent=2, ensure_ascii=False)``, with orjson if it can.

    orjson writes the same text (see :func:`_indented_json`) but for floats, so each float is
    given as the standard library writes it (~5 µs a checkpoint of a step instead of ~30). What
    orjson refuses (an integer beyond 64 bits, a lone surrogate, nesting deeper than 255) is
    written by the standard library.
    """
    document = checkpoint.to_dict()
    try:
        return orjson.dumps(_stdlib_floats(document), option=orjson.OPT_INDENT_2).decode()
    except (orjson.JSONEncodeError, RecursionError):
        return json.dumps(document, indent=2, ensure_ascii=False)


def _stdlib_floats(value: Any) -> Any:
    """``value`` (decoded JSON) with each float as the text ``json.dumps`` writes for it."""
    if isinstance(value, str):
        return value
    if isinstance(value, dict):  # subclasses too, as json.dumps reads them
        return {key: _stdlib_floats(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [_stdlib_floats(item) for item in value]
    if isinstance(value, float):
        return orjson.Fragment(_float_repr(value) if isfinite(value) else _JSON_FLOAT.encode(value))
    return value


def _write_document(output: Path, chunks: Iterable[str]) -> None:
    """Write ``chunks`` to ``output``, replacing it whole once they are all written (see
    :func:`~._storage._fs.replacing`; a link's target is what is replaced). A file that cannot
    be written is refused, as writing it would be; what cannot be replaced (a device, a pipe, a
    file in a directory no new file can be made in) is written in place. Text UTF-8 cannot hold
    (a lone surrogate) is written as a JSON escape (see :mod:`wfctl._escapes`).

    Raises:
        WfctlError: the file cannot be written (the error is the writing's, not the reading's).
    """
    import stat

    from ._escapes import ESCAPE
    from ._storage._fs import OS_FS, replacing, write_all

    target = os.path.realpath(output)
    read_failed = False

    def read() -> Iterator[str]:
        nonlocal read_failed
        try:
            yield from chunks
        except BaseException:
            read_failed = True
            raise

    try:
        try:
            info: os.stat_result | None = os.stat(target)
        except FileNotFoundError:
            info = None
        if info is not None and not os.access(target, os.W_OK):  # as writing it would be
            raise PermissionError(errno.EACCES, os.strerror(errno.EACCES))
        if info is not None and (
            not stat.S_ISREG(info.st_mode)
            or not os.access(os.path.dirname(target), os.W_OK | os.X_OK)
        ):
            # What cannot be replaced (a device, a pipe; a file in a directory no new file can
            # be made in) is written in place; a directory is refused here.
            with open(target, "w", encoding="utf-8", errors=ESCAPE) as written:
                written.writelines(read())
            return
        with replacing(OS_FS, target, 0o666, durable=True) as (fd, tmp):
            if info is not None:
                os.fchmod(fd, stat.S_IMODE(info.st_mode))  # as the file it replaces
            for chunk in read():
                write_all(OS_FS, fd, chunk.encode("utf-8", ESCAPE), tmp)
    except OSError as exc:
        if read_failed:
            raise
        raise WfctlError(f"cannot write {str(output)!r}: {exc.strerror or exc}") from None


@dataclass(frozen=True, slots=True)
class PauseReport:
    """A running run asked to pause: its summary when asked, and the command that resumes it."""

    summary: RunSummary
    resume_command: str

    def to_json(self) -> dict[str, Any]:
        """Return the ``wfctl/pause@1`` document (see docs/json.md)."""
        return document(
            "pause",
            {
                "run_id": self.summary.run_id,
                "pause_requested": True,
                "resume_command": self.resume_command,
                "run": summary_json(self.summary),
            },
        )


def pause_run(store: StoreRef, run_id: str, *, must_exist: bool = True) -> PauseReport:
    """Ask a running run (in another process) to pause at its next step boundary.

    Returns the run's summary as it was when asked, and the command that resumes it.

    Raises:
        StoreLocationError: the store is missing (with ``must_exist``) or is not one.
        InvalidIdError, RunNotFoundError: no such run.
        RunStateError: the run is not running (paused, completed, failed, interrupted).
    """

    async def ask(storage: RunStore) -> RunSummary:
        summary = await storage.run_summary(run_id)
        if summary.status != "running":
            raise RunStateError(run_id, f"is {summary.status}, not running; nothing to pause")
        await request_pause(storage, run_id)
        return summary

    summary = on_store(store, ask, must_exist=must_exist)
    from ._next_steps import resume_command

    return PauseReport(summary, resume_command(summary.run_id, store))


def verify_runs(
    store: StoreRef | None,
    run_ids: Sequence[str] = (),
    *,
    workflow_name: str | None = None,
    query: RunQuery | None = None,
    agent_framework_dir: Path | None = None,
    must_exist: bool = True,
) -> LineageReport:
    """Verify the lineage of runs in ``store``, or of an agent framework checkpoint directory.

    ``query`` selects the runs as ``wfctl runs`` lists them (its filters only; with
    ``agent_framework_dir``, only its workflow pattern, over workflow names). A run that
    cannot be read gets a failed verdict naming why; the others are verified.

    Raises:
        StoreLocationError: the store is missing (with ``must_exist``) or is not one.
        InvalidIdError: a run id is malformed.
        RunNotFoundError: a named run does not exist.
        NothingVerifiedError: no run was selected (an empty store, or filters that match no
            run), so nothing was verified: a check of nothing is not a pass.
        WfctlError: ``agent_framework_dir`` is not a directory, or run ids or filters other
            than the workflow pattern were given with it.
    """
    query = query or RunQuery()
    if agent_framework_dir is not None:
        return _verify_agent_framework(agent_framework_dir, run_ids, workflow_name, query)
    from ._lineage import verify_lineage

    if store is None:
        raise WfctlError("no store to verify")
    report = on_store(
        store,
        lambda storage: verify_lineage(storage, run_ids, workflow_name=workflow_name, query=query),
        must_exist=must_exist,
    )
    for verdict in report.runs:
        if verdict.checkpoints == 0 and verdict.problems == ("run not found",):
            raise RunNotFoundError(verdict.run_id)  # a named run that does not exist: bad input
    if not report.verified_count:
        where = f"store {redact(str(store))!r}"
        if report.runs:  # every run selected went before its read
            raise NothingVerifiedError(
                f"every run selected in {where} was removed while it was being verified "
                "(by a gc or an rm)"
            )
        filters = " ".join(
            ([f"workflow {workflow_name!r}"] if workflow_name is not None else [])
            + ([query.describe()] if query.narrows else [])
        )
        if run_ids:  # (named runs exist: a missing one was refused above)
            raise NothingVerifiedError(
                f"none of the runs named ({', '.join(run_ids)}) matched {filters} in {where}"
            )
        if filters:
            raise NothingVerifiedError(f"no run matched {filters} in {where}")
        raise NothingVerifiedError(f"{where} holds no run")
    return report


def _verify_agent_framework(
    directory: Path, run_ids: Sequence[str], workflow_name: str | None, query: RunQuery
) -> LineageReport:
    """:func:`verify_runs` over an agent framework directory (one verdict per workflow).

    Raises:
        NothingVerifiedError: the directory holds no checkpoint, or none of a matching workflow.
        WfctlError: run ids, or filters its records cannot answer, were given.
    """
    import asyncio  # here, not at import: see show_checkpoint

    from ._af_lineage import verify_agent_framework_dir

    if run_ids:
        raise WfctlError("--agent-framework verifies whole workflows; give no run ids")
    if query.statuses or query.since or query.until:
        raise WfctlError(
            "--agent-framework records have no run status or creation time: filter them "
            "with --workflow only"
        )
    report = asyncio.run(
        verify_agent_framework_dir(directory, workflow_name=workflow_name, pattern=query.workflow)
    )
    if not report.runs:
        if query.workflow is not None or workflow_name is not None:
            pattern = query.workflow if query.workflow is not None else workflow_name
            raise NothingVerifiedError(f"no workflow matched --workflow {pattern!r} in {directory}")
        raise NothingVerifiedError(f"{directory} holds no checkpoint")
    return report
