"""The read port: what every inspecting command and the web page may ask of a store, of any kind.

A :class:`Source` is a read-only view of one store: wfctl's file or PostgreSQL store, a directory
of agent-framework checkpoints, and the readers added after them. It lists runs with their
summary (:class:`RunInfo`), streams one run's records in order with their parents
(:class:`Entry`: a tree, since other engines' histories fork), reads one record by the store's
own id, reports sizes (:class:`SizeInfo`) and judges each run by the store's own integrity rules
(``verify``, wfctl's :class:`~wfctl._inspect._lineage.LineageReport`). The API is synchronous: a reader
over a server runs its own event loop. A source never writes to its store.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from types import TracebackType
from typing import TYPE_CHECKING, Any, Literal, Protocol, Self, runtime_checkable

if TYPE_CHECKING:
    from wfctl._inspect._lineage import LineageReport

__all__ = [
    "ClosingSource",
    "Entry",
    "KindSize",
    "RunInfo",
    "RunState",
    "SizeInfo",
    "Source",
    "SourceKind",
    "by_kind",
]

#: What a source's kind is named (a reader added later adds its own name).
SourceKind = Literal["wfctl-file", "wfctl-postgresql", "agent-framework"] | str

#: A run's status in wfctl's words: ``paused`` waits for answers (a person's input);
#: ``interrupted`` stopped before its end with nothing to answer. ``unknown``: the store does
#: not record whether the run ended (an agent-framework checkpoint written after the last step
#: looks the same as one written before a crash), so the source does not guess.
RunState = Literal[
    "running",
    "paused",
    "completed",
    "failed",
    "cancelled",
    "interrupted",
    "queued",
    "corrupt",
    "unreadable",
    "unknown",
]


@dataclass(frozen=True, slots=True)
class RunInfo:
    """One run as a source lists it.

    ``head_id`` is the id of the record the store names as the run's newest (an entry id,
    as :meth:`Source.record` takes it); ``created_at``/``updated_at`` are the times stored on
    its first and newest records, as stored (ISO 8601); empty when the run cannot be read.
    ``size_bytes`` is what the run takes in the store, when the store can say so without
    reading every record (None otherwise: :meth:`Source.sizes` reads them). ``origin`` is the
    record a restored run started from. ``problem`` says what cannot be trusted, if anything.
    ``details`` holds the store's own facts of the run that these fields do not (DBOS: its
    status as stored, recovery attempts, queue, fork origin, parent; agent-framework: its
    iterations or steps, pending requests): text, integers, booleans and null, no float
    (``runs --json`` is written by orjson, whose floats differ).
    """

    run_id: str
    workflow: str
    status: RunState
    head_id: str | None
    created_at: str
    updated_at: str
    record_count: int
    size_bytes: int | None = None
    origin: str | None = None
    problem: str | None = None
    details: dict[str, Any] = field(default_factory=dict, hash=False)


@dataclass(frozen=True, slots=True)
class Entry:
    """One record of a run, in the run's order, with its parents.

    ``entry_id`` is the store's own id for it (wfctl's ``RUN.SEQ``, agent-framework's
    checkpoint id). ``parent_ids`` is empty for a root; a wfctl record has one parent, another
    engine's may have several, and a run may have several roots (a fork). ``order`` numbers
    the run's entries from 0 in the order they are given. ``kind`` is the store's word for the
    record; ``time`` its stored time (ISO 8601, as stored). ``summary`` holds a few plain JSON
    facts for a listing; ``data`` the record itself as decoded JSON, a value that is not JSON
    given as an opaque marker (``{"$opaque": "pickle", "type": ..., "bytes": N}``), never
    decoded. ``size_bytes`` is the record's bytes as the store keeps them.
    """

    entry_id: str
    run_id: str
    parent_ids: tuple[str, ...]
    order: int
    kind: str
    time: str
    summary: dict[str, Any] = field(default_factory=dict)
    data: Any = None
    size_bytes: int = 0


@dataclass(frozen=True, slots=True)
class KindSize:
    """The records of one kind in a run: how many, and their bytes."""

    kind: str
    record_count: int
    size_bytes: int


@dataclass(frozen=True, slots=True)
class SizeInfo:
    """What one run takes in its store.

    ``size_bytes`` is at least the sum of its records' bytes (a journal's newlines, an
    uncommitted tail, a file's layout count too where the store keeps them); ``by_kind`` splits
    the records' bytes by record kind. ``problem`` says why the count stopped early (a record
    that cannot be read): then only the records before it are counted. ``by_channel`` splits
    the bytes by channel, for a store whose records hold channels (a :class:`KindSize` whose
    ``kind`` names the channel); empty where the store has none.
    """

    run_id: str
    size_bytes: int
    record_count: int
    by_kind: tuple[KindSize, ...] = ()
    problem: str | None = None
    by_channel: tuple[KindSize, ...] = ()


@runtime_checkable
class Source(Protocol):
    """A read-only view of one store, of any kind. Use it as a context manager, or ``close()``.

    Every method reads; none writes to the store. Errors are wfctl's: an unknown run raises
    ``RunNotFoundError`` (a malformed one of wfctl's, ``InvalidIdError``), an unknown record
    ``CheckpointNotFoundError``, a record that cannot be trusted ``CheckpointCorruptError``.
    """

    @property
    def kind(self) -> SourceKind:
        """The reader's name: ``wfctl-file``, ``wfctl-postgresql``, ``agent-framework``, ..."""
        ...

    @property
    def location(self) -> str:
        """Where the store is, as people name it (a URL's password shown as ``***``)."""
        ...

    def runs(self, *, workflow: str | None = None) -> Iterator[RunInfo]:
        """Yield each run (of ``workflow`` only, if given), oldest first."""
        ...

    def records(self, run_id: str) -> Iterator[Entry]:
        """Yield the run's records in order, read as they are iterated.

        Raises:
            RunNotFoundError: no such run (when the iteration starts).
            CheckpointCorruptError: a record cannot be trusted (while iterating, after the
                records before it).
        """
        ...

    def record(self, entry_id: str) -> Entry:
        """Return one record by the store's own id, as :meth:`records` gives it.

        Raises:
            CheckpointNotFoundError: no such record.
            CheckpointCorruptError: it, or the run it is read with, cannot be trusted.
        """
        ...

    def sizes(self, run_id: str | None = None) -> Iterator[SizeInfo]:
        """Yield what each run (or only ``run_id``) takes in the store.

        Raises:
            RunNotFoundError: ``run_id`` names no run.
        """
        ...

    def verify(self, run_id: str | None = None) -> LineageReport:
        """Judge every run (or only ``run_id``) by the store's own integrity rules.

        Raises:
            RunNotFoundError: ``run_id`` names no run.
        """
        ...

    def close(self) -> None:
        """Let go of what the source holds open (connections, an event loop); idempotent."""
        ...

    def __enter__(self) -> Self: ...

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        traceback: TracebackType | None,
    ) -> None: ...


class ClosingSource:
    """The context manager every reader shares: ``with`` closes it."""

    def close(self) -> None:
        """Let go of what the source holds (nothing, unless a reader says otherwise)."""

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()


def by_kind(sizes: dict[str, list[int]]) -> tuple[KindSize, ...]:
    """Return ``{kind: [count, bytes]}`` as :class:`KindSize` items in kind order."""
    return tuple(KindSize(kind, count, size) for kind, (count, size) in sorted(sizes.items()))
