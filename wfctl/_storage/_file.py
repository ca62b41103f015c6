"""The durable file storage: one append-only, checksummed journal per run.

Each run has a directory under the storage root (see ._layout): its journal, on which the OS
lock held while the run executes is taken (see ._lock), its end marker (see ._marker), who holds
that lock, and a pause request while there is one. A run a worker may take also has a marker in
the store's queue (see ._queue), which is all a worker's claim looks at.

A commit is one ``write`` of a whole line to an ``O_APPEND`` descriptor kept open per run,
then ``fdatasync`` (deferred or skipped by the ``batch`` and ``none`` durability modes, see
._durability). The storage remembers each run's head after the
first append, so the hot path does no reads and no parsing: one ``lstat`` checks that the
journal is still the file, and as long, as this process left it (see ._appender). The record
still names its seq and parent, and a record that does not extend the head is refused. A
completed, failed or pause record is followed by the end marker, written atomically (and durably
in the durable mode); every read of a journal's end or of the whole journal checks it.
"""

from __future__ import annotations

import contextlib
import itertools
import json
import os
import stat
import threading
import time
import weakref
from collections.abc import Callable, Collection, Generator, Hashable, Iterable, Iterator, Sequence
from pathlib import Path
from typing import ClassVar, Final

from wfctl._errors import (
    CheckpointCorruptError,
    JournalChangedError,
    RunLockedError,
    RunNotFoundError,
    StoreLocationError,
)
from wfctl._records._checkpoint import (
    ENDING_STATUS,
    Checkpoint,
    Kind,
    split_checkpoint_id,
    validate_run_id,
)
from wfctl._records._payloads import CancelRequest, handed_over
from wfctl._records._refs import Resolver

from ._appender import READ_FLAGS, JournalAppender, symlink_error
from ._base import (
    RunStoreBase,
    check_append,
    corrupt_summary,
    is_listed,
    oldest_first,
    strict_chain,
    summarize,
    summary_of_row,
    summary_row,
    unreadable_summary,
)
from ._durability import Durability, DurabilityMode
from ._follow import JournalFollower
from ._fs import OS_FS, FileSystem, write_private
from ._journal import (
    Tail,
    check_journal,
    check_last_is_newest,
    decode_chain,
    decode_checked,
    decode_record,
    encode_record_parts,
    journal_lines,
    parse_journal,
    read_all,
    read_head,
    read_lines,
    read_tail,
    record_crc,
    record_link,
)
from ._layout import StoreLayout
from ._lock import LOCK_GRACE, FileRunLock, HeldLease, probe_locked
from ._marker import (
    check_end,
    check_marker,
    end_marker_problem,
    end_problem,
    mark_end,
    read_end_marker,
    read_end_marker_first,
)
from ._pages import LineAt, checked_records
from ._protocol import JournalProblem, RunJournal, RunSummary
from ._queue import RESCAN_SECONDS, RunQueue
from ._removal import cut_run, remove_run, remove_runs
from ._spread import spread
from ._staging import StagedCopy, staging_root
from ._step_lines import NotPlainError, PlainRun, StepLines

__all__ = ["FileCheckpointStorage", "open_store"]

#: Journals kept open for appending at once; the least recently opened is closed beyond this.
_MAX_OPEN: Final = 128
#: Queued runs of unknown age a claim reads on the event loop; more are read in a thread.
_AGES_INLINE: Final = 8
#: Seconds a claim may go on taking runs in the order of the queue's last listing before it
#: lists the queue again (a claim that finds nothing there always lists it again).
RELIST_SECONDS: Final = 1.0


def _close_all(appenders: dict[str, JournalAppender]) -> None:
    for appender in list(appenders.values()):
        appender.close()
    appenders.clear()


class FileCheckpointStorage(RunStoreBase):
    """Checkpoints in an append-only journal per run under ``path`` (the default storage).

    Args:
        path: the storage root. Nothing is written until the first save or lock.
        durability: when commits reach the disk: ``"full"`` (default: every save is
            ``fdatasync``-ed before it returns), ``"batch"`` (step records synced every 16
            commits or 100 ms, every other record at once) or ``"none"`` (never synced), or a
            :class:`Durability` with another batch window. In every mode each record is
            written before the save returns, so a process crash loses nothing; an OS crash or
            power loss may lose the unsynced commits (see :mod:`wfctl._storage._durability`).
        durable: the older switch: ``False`` is ``durability="none"``.
        fs: the object that makes every OS call (default: the operating system itself); tests
            pass one that injects faults. See :mod:`wfctl._storage._fs`.

    Directories are created ``0o700`` and files ``0o600``.

    The first time it finds its root already there, the storage warns
    (:class:`~wfctl._storage._security.StoreSecurityWarning`) if the root is writable by group
    or others, or not owned by the current user. The root may be a symbolic link to a directory;
    ``runs`` and the run directories inside it may not (they are refused, never followed).

    Raises:
        StoreLocationError: ``path`` is empty (which would silently mean the current
            directory) or is the root of the file system (where ``runs`` would be created).
        ValueError: an unknown durability mode, or ``durable=False`` with another mode.
    """

    #: Its ``save`` never waits (no await suspends it): the engine may run a sequential
    #: step's commit in the caller instead of a task (``wfctl._engine._chain``).
    _SAVES_WITHOUT_WAITING: ClassVar[bool] = True
    #: Its reads never wait either (``read_run``, ``get_latest``, ``list_runs``): a whole-store
    #: verification may drive them without an event loop, spread across processes
    #: (``wfctl._inspect._lineage``).
    _READS_WITHOUT_WAITING: ClassVar[bool] = True

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        durability: DurabilityMode | Durability = "full",
        durable: bool = True,
        fs: FileSystem | None = None,
    ) -> None:
        chosen = durability if isinstance(durability, Durability) else Durability(durability)
        if not durable:
            if chosen.mode not in ("full", "none"):
                raise ValueError(f"durable=False is durability='none', not {chosen.mode!r}")
            chosen = Durability("none")
        self._fs: FileSystem = OS_FS if fs is None else fs
        self._layout = StoreLayout(path, self._fs)
        self._durability = chosen
        #: Whether anything is ever synced; whether step records may wait for a later sync.
        self._durable = chosen.syncs
        self._batching = chosen.mode == "batch"
        self._appenders: dict[str, JournalAppender] = {}
        #: run id -> (st_dev, st_ino) of the journal this storage holds the run's lock on.
        self._locked: dict[str, tuple[int, int]] = {}
        self._mutex = threading.Lock()
        self._finalizer = weakref.finalize(self, _close_all, self._appenders)
        self._queue = RunQueue(self._layout)
        #: What claim_run learnt: each queued run's age (its root's time), for the queue's
        #: order; the runs found not claimable (ended, corrupt), by the version of their
        #: journal then; when the store was last rescanned whole (monotonic seconds).
        self._ages: dict[str, str] = {}
        self._skipped: dict[str, Hashable] = {}
        self._rescanned: float | None = None
        self._rescan_every = RESCAN_SECONDS
        #: The queue's last listing, oldest first, and when it was made (monotonic seconds).
        self._order: list[str] = []
        self._listed: float | None = None
        self._relist_every = RELIST_SECONDS

    def __repr__(self) -> str:
        root = str(self._layout.root)
        return f"FileCheckpointStorage({root!r}, durability={self._durability.mode!r})"

    @property
    def root(self) -> Path:
        """The storage root directory."""
        return self._layout.root

    @property
    def location(self) -> str:
        """The storage root directory, as a string (what messages name)."""
        return str(self._layout.root)

    @property
    def durable(self) -> bool:
        """Whether saves are ever synced (False only for ``durability="none"``)."""
        return self._durable

    @property
    def durability(self) -> Durability:
        """When commits are synced: the mode and, for ``batch``, its window."""
        return self._durability

    def close(self) -> None:
        """Close the journals kept open for appending (syncing what ``batch`` deferred).

        The storage stays usable.
        """
        with self._mutex:
            appenders = list(self._appenders.values())
            self._appenders.clear()
        for appender in appenders:
            appender.close(sync=self._batching)

    async def aclose(self) -> None:
        """:meth:`close`, as every run store has it."""
        self.close()

    # -- writing -----------------------------------------------------------------------------

    async def save(self, checkpoint: Checkpoint) -> None:
        """Append ``checkpoint`` to its run's journal, synced as the durability mode says.

        Blocking I/O on purpose, without a thread hop: the caller decides about threads. The
        record is written before this returns in every mode; ``batch`` may defer its sync
        (a step record only) to the end of the window, ``none`` skips it.

        Raises:
            InvalidIdError: the run id is malformed.
            CheckpointCorruptError: the checkpoint does not extend the run's head by exactly one
                link (wrong seq, wrong parent, a second root), the run's last record is corrupt,
                or the journal is not a regular file.
        """
        line = encode_record_parts(checkpoint)  # first: bad data changes nothing
        while True:
            appender = self._appenders.get(checkpoint.run_id) or self._open_appender(checkpoint)
            sync = self._durable
            if self._batching and checkpoint.kind == Kind.STEP:
                sync = appender.unsynced + 1 >= self._durability.batch_steps
            try:
                if appender.append(checkpoint, line, sync):
                    if checkpoint.kind in ENDING_STATUS:  # the call ends: mark the end
                        # The trailer ends as the line does: with the crc the marker names.
                        mark_end(self._layout, checkpoint, line[1], self._durable)
                    elif self._batching and appender.unsynced == 1:
                        # The window's first unsynced record: sync it within batch_ms at most,
                        # even if no further commit comes to do it (and only then: a later
                        # window's records are not due yet, and have their own timer).
                        import asyncio  # loaded by then: not at import (start-up time)

                        asyncio.get_running_loop().call_later(
                            self._durability.batch_ms / 1000, appender.sync, appender.syncs
                        )
                    return
            except OSError:
                self._drop(checkpoint.run_id, appender)  # it closed itself; forget it
                raise
            # Closed before we got it (a lock taken, close(), eviction, an interrupted write):
            # forget it; the next attempt reopens the journal and rereads its head.
            self._drop(checkpoint.run_id, appender)

    def _open_appender(self, checkpoint: Checkpoint) -> JournalAppender:
        run_id = validate_run_id(checkpoint.run_id)
        if checkpoint.seq == 0:
            if checkpoint.kind != Kind.ROOT or checkpoint.previous_checkpoint_id is not None:
                check_append(checkpoint, -1, None, self._layout.journal(run_id))  # refuses it
            self._layout.make_run_dir(run_id, durable=self._durable)
        else:
            self._layout.check_run_dir(run_id)
        path = self._layout.journal(run_id)
        appender = JournalAppender.open(
            self._fs, path, run_id, create=checkpoint.seq == 0, durable=self._durable
        )
        try:
            locked = self._locked.get(run_id)
            if locked is not None and locked != appender.identity:
                raise JournalChangedError(
                    path, "the journal is not the file this process locked: it was replaced"
                )
            check_end(self._layout, run_id, appender.last_seq, appender.last_crc)
        except BaseException:
            appender.close()
            raise
        evicted: list[JournalAppender] = []
        with self._mutex:
            existing = self._appenders.get(run_id)
            if existing is None:
                self._appenders[run_id] = appender
                while len(self._appenders) > _MAX_OPEN:  # oldest first: dicts keep order
                    evicted.append(self._appenders.pop(next(iter(self._appenders))))
        if existing is not None:  # another thread opened it first
            appender.close()
            return existing
        for old in evicted:
            old.close(sync=self._batching)
        return appender

    def _drop(self, run_id: str, appender: JournalAppender | None = None) -> JournalAppender | None:
        with self._mutex:
            current = self._appenders.get(run_id)
            if current is not None and (appender is None or current is appender):
                return self._appenders.pop(run_id)
        return None

    def _forget(self, run_id: str) -> None:
        """Close the run's appender: the next save rereads the head from the file."""
        appender = self._drop(run_id)
        if appender is not None:
            appender.close(sync=self._batching)

    async def copy_in(self, run_id: str) -> StagedCopy:
        """Hold ``run_id`` to copy it into this store: written and verified under a name no
        listing reads, then renamed into place whole (see :mod:`._staging`).

        Raises:
            InvalidIdError: ``run_id`` is malformed.
            RunLockedError: another copy of the run, or a driver of it, holds it.
            CheckpointCorruptError: a file or a link is where the run, or its copy, goes.
        """
        validate_run_id(run_id)
        root = staging_root(self._layout, run_id)
        stage = FileCheckpointStorage(root, durability="none", fs=self._fs)
        return StagedCopy.open(self, stage, run_id)

    # -- location and reading ----------------------------------------------------------------

    def check_location(self, *, must_exist: bool = True) -> None:
        """Check that the root is a directory that can be read as a store.

        Args:
            must_exist: refuse a root that does not exist. With False, a missing root is a
                store with no runs yet (as every read of this storage treats it).

        Raises:
            StoreLocationError: the root is missing (``must_exist``), or is not a directory, or
                its ``runs`` is a symbolic link or a file.
        """
        self._layout.check_location(must_exist=must_exist)

    def _open_read(self, run_id: str) -> int:
        """Open a run's journal for reading, refusing symbolic links and non-regular files.

        Raises:
            RunNotFoundError: there is no journal.
            CheckpointCorruptError: it (or the run directory) is a link or not a regular file.
        """
        return self._open_sized(run_id)[0]

    def _open_sized(self, run_id: str, *, listed: bool = False) -> tuple[int, int]:
        """:meth:`_open_read`, returning the descriptor and the journal's size when opened.

        ``listed``: the run's directory was seen as a directory (not a link) by a listing that
        checked ``runs`` once (:meth:`StoreLayout.run_entries`), so it is not checked again.
        """
        layout = self._layout
        if not listed:
            layout.check_run_dir(run_id)
        path = layout.journal(run_id)
        fs = self._fs
        try:
            fd = fs.open(path, READ_FLAGS)
        except (FileNotFoundError, NotADirectoryError):
            if read_end_marker(layout, run_id) is not None:  # it ended: its journal was removed
                raise CheckpointCorruptError(
                    path, "journal is missing, but the run's end marker says it was written"
                ) from None
            raise RunNotFoundError(run_id) from None
        except OSError as exc:
            raise symlink_error(path, exc) from None
        try:
            st = fs.fstat(fd)
        except BaseException:
            fs.close(fd)
            raise
        if not stat.S_ISREG(st.st_mode):
            fs.close(fd)
            raise CheckpointCorruptError(path, "journal is not a regular file")
        return fd, st.st_size

    @contextlib.contextmanager
    def _reading(self, run_id: str) -> Iterator[int | None]:
        """Open the run's journal for reading (None when the run has none); close it after.

        Raises:
            CheckpointCorruptError: see :meth:`_open_read`.
        """
        try:
            fd = self._open_read(run_id)
        except RunNotFoundError:
            yield None
            return
        try:
            yield fd
        finally:
            self._fs.close(fd)

    async def read_run(self, run_id: str) -> RunJournal:
        """Read everything stored for a run, naming each record that cannot be trusted.

        Raises:
            InvalidIdError: ``run_id`` is malformed.
            RunNotFoundError: the run has no journal, or an empty one (leased, never started).
        """
        return self._read_journal(validate_run_id(run_id))

    def _read_journal(self, run_id: str) -> RunJournal:
        path = self._layout.journal(run_id)
        marker = read_end_marker_first(self._layout, run_id)  # first: see its docstring
        try:
            fd = self._open_read(run_id)
        except CheckpointCorruptError as exc:
            return RunJournal(run_id, (), (JournalProblem.from_error(exc),), 0, path)
        try:
            data = read_all(self._fs, fd)
        finally:
            self._fs.close(fd)
        if not data and not self._fs.lexists(self._layout.end(run_id)):
            raise RunNotFoundError(run_id)  # leased or created, never committed: not a run yet
        checkpoints, problems, torn = parse_journal(data, path, run_id)
        problem = end_marker_problem(marker, self._layout, run_id, data, checkpoints)
        if problem is not None:
            problems.append(problem)
        return RunJournal(run_id, tuple(checkpoints), tuple(problems), torn, path)

    def _chain(self, run_id: str) -> list[Checkpoint]:
        return strict_chain(self._read_journal(run_id), resolved_as_read=True)

    async def verified_ends(self, run_id: str) -> tuple[Checkpoint, Checkpoint] | None:
        """Verify the whole journal's checksums and links in one read; decode only its ends."""
        return self._verified_ends(run_id)

    def checked_record(self, run_id: str, seq: int) -> Checkpoint | None:
        """Return the run's record of ``seq`` once the whole journal verified as
        :meth:`verified_ends` verifies it (every checksum and link, in one read), decoding only
        that record and the ends (``wfctl show``); None if the run holds no such seq.

        Raises:
            InvalidIdError: ``run_id`` is malformed.
            RunNotFoundError: the run has no committed checkpoint.
            CheckpointCorruptError: a record fails verification or the chain is broken.
        """
        picked = LineAt(seq)
        if self._verified_ends(validate_run_id(run_id), seen=picked.watch) is None:
            raise RunNotFoundError(run_id)
        return picked.checkpoint(str(self._layout.journal(run_id)))

    def plain_run(self, run_id: str, seq: int) -> PlainRun | None:
        """Verify a run whole as :meth:`stream_chain` does, reading its step keys from the
        journal's bytes as it goes (:class:`~._step_lines.StepLines`): if the run is plain, its
        ends, its record of ``seq`` and its records to be read again (decoded as iterated, as
        :meth:`stream_chain` gives them, its record of ``seq`` None if it has none); None if it
        is not plain, or its record of ``seq`` does not decode (the whole read says which
        record is the first that does not).

        What a replay reads of its source before it starts, when the store can tell it this.

        Raises:
            InvalidIdError: ``run_id`` is malformed.
            RunNotFoundError: the run has no committed checkpoint.
            CheckpointCorruptError: a record fails verification or the chain is broken.
        """
        path = str(self._layout.journal(validate_run_id(run_id)))
        lines, picked = StepLines(run_id, seq, path), LineAt(seq)
        try:
            ends = self._verified_ends(run_id, seen=lambda read: lines.watch(picked.watch(read)))
        except NotPlainError:
            return None
        if ends is None:
            raise RunNotFoundError(run_id)
        root, head = ends
        if root.origin_checkpoint_id is not None or not lines.is_plain(head):
            return None
        target = root if seq == 0 else head if seq == head.seq else None
        if target is None and picked.line is not None:
            # Its references are resolved when its records are read in turn, as the whole
            # read resolves them; a record that does not decode is left to the whole read,
            # which names the first record that does not.
            try:
                target = decode_checked(picked.line, f"{path}:{seq + 1}")
            except CheckpointCorruptError:
                return None
        records = self._records(run_id, head.seq, None)
        return PlainRun(root, target, head, lines, records)

    def _verified_ends(
        self,
        run_id: str,
        *,
        listed: bool = False,
        seen: Callable[[Iterable[bytes]], Iterable[bytes]] | None = None,
    ) -> tuple[Checkpoint, Checkpoint] | None:
        """Verify the whole journal's checksums and links in one read; decode only its ends.

        The journal is read up to its size when opened (one ``pread`` for most journals):
        records appended after that are not part of this read. ``listed``: see
        :meth:`_open_sized`. ``seen`` is given the lines as they are read, and returns them.
        """
        layout, fs = self._layout, self._fs
        path = layout.journal(run_id)
        # Raised once the journal has verified.
        marker, marker_error = read_end_marker_first(layout, run_id)
        try:
            fd, size = self._open_sized(run_id, listed=listed)
        except RunNotFoundError:
            return None
        try:
            lines = journal_lines(fs, fd, size)
            ends = check_journal(lines if seen is None else seen(lines), path, run_id)
        finally:
            fs.close(fd)
        if ends is None:  # no committed record: a run not started yet, unless it had ended
            if marker_error is not None:
                raise marker_error
            check_marker(marker, layout, run_id, -1, None)
            return None
        root = self._decode_root(ends[0], path, run_id, checked=True)
        head = root if ends[1] is ends[0] else decode_checked(ends[1], f"{path} (last record)")
        if marker_error is not None:
            raise marker_error
        check_marker(marker, layout, run_id, head.seq, record_crc(ends[1]))
        return root, head

    def stream_chain(
        self, run_id: str, *, resolver: Resolver | None = None
    ) -> tuple[RunSummary, Iterator[Checkpoint]]:
        """Verify a run whole, then return its summary and its records, decoded one by one.

        Every checksum and link is checked first (as ``wfctl runs`` does, without decoding), so
        a corrupt run is refused before anything is shown; then the records are read again and
        decoded as they are iterated, so memory stays flat however long the run is. Records
        appended after the check are not yielded. ``resolver`` resolves their references and
        changes (one is made if None): a caller that passes its own reads what it held after.

        Raises:
            InvalidIdError: ``run_id`` is malformed.
            RunNotFoundError: the run has no committed checkpoint.
            CheckpointCorruptError: a record fails verification or the chain is broken (while
                iterating: a record whose fields cannot be read, or a journal replaced since).
        """
        ends = self._verified_ends(validate_run_id(run_id))
        if ends is None:
            raise RunNotFoundError(run_id)
        root, head = ends
        return self._summarize_now(root, head), self._records(run_id, head.seq, resolver)

    def _records(
        self, run_id: str, last_seq: int, resolver: Resolver | None
    ) -> Iterator[Checkpoint]:
        path = self._layout.journal(run_id)
        if resolver is None:  # the references and changes each record holds, resolved
            resolver = Resolver(path)
        with self._reading(run_id) as fd:
            if fd is None:
                raise RunNotFoundError(run_id)
            for seq, line in enumerate(read_lines(self._fs, fd)):
                if seq > last_seq:
                    return
                where = f"{path}:{seq + 1}"
                checkpoint = decode_record(line, where)
                if checkpoint.seq != seq or checkpoint.run_id != run_id:
                    raise CheckpointCorruptError(where, "the journal changed while it was read")
                yield resolver.resolve(checkpoint, where)

    def verified_records(self, run_id: str) -> tuple[str, None, Generator[Checkpoint]]:
        """Return the journal's path, no head seq (the journal has no head pointer apart from
        its records) and its records, each verified (checksum, link to its parent) and decoded
        as the journal is read once: ``verify-lineage`` of a long run, in memory that does not
        grow with its length.

        Anything the whole read (:meth:`read_run`) would name as a problem or a note is raised
        instead, once the records before it were yielded: a record that fails, a torn tail, an
        end marker the journal contradicts. The caller then reads the run whole to say what it
        is. Records appended after the journal was opened are not read.

        Raises:
            InvalidIdError: ``run_id`` is malformed.
            RunNotFoundError: (while iterating) the run has no journal.
            CheckpointCorruptError: (while iterating) see above.
        """
        validate_run_id(run_id)
        path = self._layout.journal(run_id)
        return path, None, self._verified_lines(run_id, path)

    def _verified_lines(self, run_id: str, path: str) -> Generator[Checkpoint]:
        marker, marker_error = read_end_marker_first(self._layout, run_id)
        if marker_error is not None:
            raise CheckpointCorruptError(path, "its end marker cannot be read")
        fd, size = self._open_sized(run_id)
        read, last, crc_at = 0, -1, None
        try:
            lines = journal_lines(self._fs, fd, size)
            for line, checkpoint in decode_chain(lines, path, run_id, {}):
                read += len(line) + 1
                last = checkpoint.seq
                if marker is not None and last == marker.seq:
                    crc_at = record_crc(line)
                yield checkpoint
        finally:
            self._fs.close(fd)
        if last < 0 or read != size:
            raise CheckpointCorruptError(path, "no record, or a torn tail")
        if marker is not None:
            found = end_problem(marker, last, crc_at, self._layout.end(run_id))
            if found is not None:
                raise CheckpointCorruptError(path, found)

    def stream_checked_chain(
        self, run_id: str, seqs: Callable[[int], range] | None = None
    ) -> tuple[RunSummary, Iterator[Checkpoint]]:
        """Return a run's summary, read from its ends, and its records, each verified as read.

        The summary needs only the root and the head, so it is ready at once: the root is the
        journal's first record, the head its last, each verified (checksum, fields, the head
        newest and matching the end marker). Then the journal is read once, every record
        checked (checksum, link to its parent) and decoded before it is yielded, up to that
        head (records appended since are not yielded). A record that fails is raised while
        iterating, after the ones before it, with the message :meth:`stream_chain` gives for
        it (see :func:`~._journal.decode_chain`). If the ends themselves do not verify, the
        run is read as :meth:`stream_chain` reads it, which names the first problem in file
        order.

        ``seqs``, given the head's seq, names the records to yield (a page of the chain, with a
        step of 1): the records before it are checked (checksum, link) but not decoded, and the
        journal is read no further than its last.

        Raises:
            InvalidIdError: ``run_id`` is malformed.
            RunNotFoundError: the run has no committed checkpoint.
            CheckpointCorruptError: a record fails verification or the chain is broken (while
                iterating: any record but the root and head, or a journal changed since).
        """
        ends = self._checked_ends(validate_run_id(run_id))
        if ends is None:
            summary, records = self.stream_chain(run_id)
            if seqs is not None:
                wanted = seqs(summary.head_seq)
                records = (r for r in records if r.seq in wanted)
            return summary, records
        root_line, root, head_line, head = ends
        known = {root_line: root, head_line: head}
        wanted = range(head.seq + 1) if seqs is None else seqs(head.seq)
        records = self._checked_records(run_id, wanted, head.seq, known)
        return self._summarize_now(root, head), records

    def stored_chain(self, run_id: str) -> Iterator[tuple[bytes, Checkpoint]]:
        """Verify a run whole, then return its records one by one, each with its journal line
        as stored (without its newline): what ``copy`` writes elsewhere byte for byte.

        Verified as :meth:`stream_chain` verifies the run (every checksum and link, the end
        marker, in one read first), then each record again as it is read and decoded, up to
        the head that read found.

        Raises:
            InvalidIdError: ``run_id`` is malformed.
            RunNotFoundError: the run has no committed checkpoint.
            CheckpointCorruptError: a record fails verification or the chain is broken (while
                iterating: a journal changed since it was verified).
        """
        ends = self._verified_ends(validate_run_id(run_id))
        if ends is None:
            raise RunNotFoundError(run_id)
        return self._stored_lines(run_id, ends[1].seq)

    def _stored_lines(self, run_id: str, head_seq: int) -> Iterator[tuple[bytes, Checkpoint]]:
        path = self._layout.journal(run_id)
        last = -1
        with self._reading(run_id) as fd:
            if fd is None:
                raise RunNotFoundError(run_id)
            lines = itertools.islice(read_lines(self._fs, fd), head_seq + 1)
            for line, checkpoint in decode_chain(lines, path, run_id, {}):
                last = checkpoint.seq
                yield line, checkpoint
        if last != head_seq:
            raise CheckpointCorruptError(path, "the journal changed while it was read")

    def _checked_ends(self, run_id: str) -> tuple[bytes, Checkpoint, bytes, Checkpoint] | None:
        """The root and head, each verified, with their lines; None if anything is amiss."""
        path = self._layout.journal(run_id)
        marker, marker_error = read_end_marker_first(self._layout, run_id)
        try:
            with self._reading(run_id) as fd:
                if fd is None:
                    return None
                tail = self._tail(fd)
                first = read_head(self._fs, fd)
                if tail is None or tail.line is None or first is None:
                    return None
                root = self._decode_root(first, path, run_id)
                last = tail.line
                head = root if tail.offset == 0 else decode_record(last, f"{path} (last record)")
                if head.run_id != run_id:
                    return None
                check_last_is_newest(self._fs, fd, tail, head, path)
            if marker_error is not None:
                raise marker_error
            check_marker(marker, self._layout, run_id, head.seq, record_crc(last))
        except CheckpointCorruptError:
            return None  # read whole, which names the first problem as it always did
        return first, root, last, head

    def _checked_records(
        self, run_id: str, wanted: range, head_seq: int, known: dict[bytes, Checkpoint]
    ) -> Iterator[Checkpoint]:
        """The records of ``wanted`` (seqs up to ``head_seq``; the head's line is ``known``)."""
        if not wanted[: head_seq + 1]:
            return
        path = self._layout.journal(run_id)
        with self._reading(run_id) as fd:
            if fd is None:
                raise RunNotFoundError(run_id)
            yield from checked_records(
                read_lines(self._fs, fd),
                path,
                run_id,
                wanted,
                head_seq,
                known,
                "journal",
            )

    def _head(self, run_id: str) -> Checkpoint | None:
        path = self._layout.journal(run_id)
        marker, marker_error = read_end_marker_first(self._layout, run_id)
        with self._reading(run_id) as fd:
            if fd is None:
                return None
            tail = read_tail(self._fs, fd, self._fs.fstat(fd).st_size)
            if tail.line is None:
                return None
            head = decode_record(tail.line, f"{path} (last record, byte {tail.offset})")
            if head.run_id != run_id:
                raise CheckpointCorruptError(path, f"last record belongs to run {head.run_id!r}")
            check_last_is_newest(self._fs, fd, tail, head, path)
        if marker_error is not None:
            raise marker_error
        check_marker(marker, self._layout, run_id, head.seq, record_crc(tail.line))
        return head

    def _tail(self, fd: int | None) -> Tail | None:
        """The last line of the journal open at ``fd`` (None: the run has no journal)."""
        return None if fd is None else read_tail(self._fs, fd, self._fs.fstat(fd).st_size)

    def _root(self, run_id: str) -> Checkpoint | None:
        with self._reading(run_id) as fd:
            line = None if fd is None else read_head(self._fs, fd)
        if line is None:
            return None
        return self._decode_root(line, self._layout.journal(run_id), run_id)

    @staticmethod
    def _decode_root(line: bytes, path: str, run_id: str, *, checked: bool = False) -> Checkpoint:
        """Decode a journal's first line as its root (``checked``: its checksum was verified)."""
        root = (decode_checked if checked else decode_record)(line, f"{path}:1")
        if root.run_id != run_id:
            raise CheckpointCorruptError(f"{path}:1", f"record belongs to run {root.run_id!r}")
        if root.seq != 0 or root.kind != Kind.ROOT or root.previous_checkpoint_id is not None:
            raise CheckpointCorruptError(
                f"{path}:1", f"the first record is {root.checkpoint_id} ({root.kind}), not a root"
            )
        return root

    def _run_ids(self) -> list[str]:
        return self._layout.run_ids()

    def _is_locked(self, run_id: str) -> bool:
        return probe_locked(self._layout.journal(run_id))

    # The base's primitives: the synchronous reads above, which the listing below uses directly.

    async def run_ids(self) -> list[str]:
        """Return the names of the run directories (no journal is read)."""
        return self._run_ids()

    async def load_root(self, run_id: str) -> Checkpoint | None:
        """Return the journal's first record (None if it has none), checked as the root."""
        return self._root(run_id)

    async def load_head(self, run_id: str) -> Checkpoint | None:
        """Return the journal's last committed record (None if none), checked against the end."""
        return self._head(run_id)

    async def is_leased(self, run_id: str) -> bool:
        """Return whether a process holds the OS lock on the run's journal (one probe)."""
        return self._is_locked(run_id)

    async def has_run(self, run_id: str) -> bool:
        """Return whether the run's journal is there (one ``lstat``; no other run is looked at)."""
        return self._version(run_id) is not None

    async def run_version(self, run_id: str) -> tuple[int, int, int, int] | None:
        """The journal's identity, length and modification time: an append changes them."""
        return self._version(run_id)

    def _version(self, run_id: str) -> tuple[int, int, int, int] | None:
        try:
            st = self._fs.lstat(self._layout.journal(run_id))
        except OSError:
            return None
        return (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns)

    async def list_runs(self, *, workflow_name: str | None = None) -> list[RunSummary]:
        """Return one summary per run, oldest first, each run verified whole.

        The base's rules; the body is :meth:`run_summaries` (``wfctl runs``, ``gc``, ``rm``
        and ``copy`` list runs the same way, with the same reads).

        Raises:
            StoreLocationError: the store itself cannot be read as a store.
        """
        return self.run_summaries(workflow_name=workflow_name)

    async def run_summary(self, run_id: str) -> RunSummary:
        """Return one run's summary, verified whole as :meth:`list_runs` does, reading only it.

        Raises:
            InvalidIdError: ``run_id`` is malformed.
            RunNotFoundError: the run has no committed checkpoint.
        """
        summary = self._summary_now(validate_run_id(run_id), None)
        if summary is None:
            raise RunNotFoundError(run_id)
        return summary

    def run_summaries(self, *, workflow_name: str | None = None) -> list[RunSummary]:
        """:meth:`list_runs`, without an event loop (``wfctl runs`` does not load asyncio).

        The same rules as the base's (its pure functions), applied to the synchronous reads.

        A store of many runs is listed by several processes at once (see
        :mod:`._spread`): the same summaries, in less time where there are CPUs to spare.

        Raises:
            StoreLocationError: the store itself cannot be read as a store.
        """

        def summaries_of(entries: Sequence[tuple[str, bool]]) -> list[RunSummary]:
            found = []
            for rid, is_dir in entries:
                summary = self._summary_now(rid, workflow_name, listed=is_dir)
                if summary is not None:
                    found.append(summary)
            return found

        entries = self._layout.run_entries()
        return oldest_first(spread(summaries_of, entries, summary_row, summary_of_row))

    def _summary_now(
        self, run_id: str, workflow_name: str | None, *, listed: bool = False
    ) -> RunSummary | None:
        try:
            ends = self._verified_ends(run_id, listed=listed)
        except CheckpointCorruptError as exc:
            try:
                root = self._root(run_id)
            except (CheckpointCorruptError, OSError):
                root = None
            wf = None if root is None else root.workflow_name
            return corrupt_summary(run_id, workflow_name, wf, exc)
        except OSError as exc:
            return unreadable_summary(run_id, exc)
        if not is_listed(ends, workflow_name):
            return None
        return self._summarize_now(*ends)

    def _summarize_now(self, root: Checkpoint, head: Checkpoint) -> RunSummary:
        return summarize(root, head, lambda: self._is_locked(root.run_id))

    # -- locks, pauses, deletion --------------------------------------------------------------

    def lock_run(self, run_id: str) -> FileRunLock:
        """Take the run's exclusive OS lock, on its journal (creating both if needed).

        The kernel releases it if this process dies. Taking and releasing it also makes this
        storage reread the run's head before its next append; while it is held, this storage
        appends to no other file at the journal's path (see :class:`FileRunLock`).

        Raises:
            InvalidIdError: ``run_id`` is malformed.
            RunLockedError: another process, or another lock in this one, holds it.
            CheckpointCorruptError: the journal is a symbolic link or not a regular file.
        """
        validate_run_id(run_id)
        self._layout.make_run_dir(run_id, durable=self._durable)
        return self._lock(run_id, LOCK_GRACE)

    def _lock_to_remove(self, run_id: str) -> FileRunLock:
        """:meth:`lock_run` for a removal's rename: the holder is not recorded (see ``named``).

        Only for a run whose directory the removal has just seen as a directory (not a link)
        in a ``runs`` it checked (:func:`._removal.remove_runs`): nothing is created or
        checked again (an empty journal is, for a run that has none, as :meth:`lock_run` does).
        """
        return self._lock(validate_run_id(run_id), LOCK_GRACE, named=False)

    def _lock(self, run_id: str, grace: float, *, named: bool = True) -> FileRunLock:
        """:meth:`lock_run` of a run whose directory was made and checked."""
        layout = self._layout

        def released() -> None:
            self._locked.pop(run_id, None)
            self._forget(run_id)

        lock = FileRunLock.acquire(
            run_id, layout.journal(run_id), layout.owner(run_id), released, grace, named=named
        )
        self._forget(run_id)
        if lock.identity is not None:
            self._locked[run_id] = lock.identity
        return lock

    async def lease_run(self, run_id: str) -> HeldLease:
        """Take the run's lease: its OS lock (see :meth:`lock_run`) and its pause marker's probe.

        The run's queue marker is written too (see :mod:`._queue`), before any record: a worker
        finds the run while it may be driven, and the lease's release removes the marker if
        the run ended.

        Raises:
            InvalidIdError: ``run_id`` is malformed.
            RunLockedError: another process, or another lease in this one, holds it.
            CheckpointCorruptError: the journal is a symbolic link or not a regular file.
            StoreLocationError: the store's ``queue`` is a symbolic link or a file.
        """
        return self._lease(self.lock_run(run_id))

    def _lease(self, lock: FileRunLock, *, mark: bool = True) -> HeldLease:
        if mark:
            try:
                self._queue.mark(lock.run_id)
            except BaseException:
                lock.release()
                raise
        marker = self._layout.pause(lock.run_id)
        return _QueuedLease(self, lock, lambda: self._fs.lexists(marker))

    def _settle(self, run_id: str) -> None:
        """Remove the run's queue marker if its head ends it (called under its lease).

        When this storage appended to the run, its appender knows the head's seq: the journal
        is read only if the head is the pause the end marker names (a hand-over or not).
        """
        appender = self._appenders.get(run_id)
        claimable: bool | None
        if appender is None or appender.fd < 0:
            claimable = self._head_claimable(run_id)
        elif appender.last_seq < 0:
            claimable = None
        else:
            end = read_end_marker(self._layout, run_id)
            if end is None or end.seq != appender.last_seq:
                claimable = True
            elif end.kind == Kind.PAUSE:
                claimable = self._head_claimable(run_id)
            else:
                claimable = False
        if claimable is not True:
            self._queue.unmark(run_id)

    def _head_claimable(self, run_id: str) -> bool | None:
        """Whether the run's newest record lets a worker take it; None if it has no records.

        Read from the journal's last line and the end marker, decoding no record but a pause
        (a hand-over is claimable): the last line is the ending record the end marker names,
        or the run went on after it. A hint only: a claim verifies the run whole.

        Raises:
            CheckpointCorruptError: the journal or the end marker cannot be read as one.
            OSError: they cannot be read.
        """
        end = read_end_marker(self._layout, run_id)
        with self._reading(run_id) as fd:
            tail = self._tail(fd)
        if tail is None or tail.line is None:
            return None
        if end is None or record_crc(tail.line) != end.last:
            return True
        where = f"{self._layout.journal(run_id)} (last record, byte {tail.offset})"
        if record_link(tail.line, where)[1] != end.seq:
            return True
        return end.kind == Kind.PAUSE and handed_over(decode_record(tail.line, where))

    # -- claiming -----------------------------------------------------------------------------

    async def claim_run(self, exclude: Collection[str] = ()) -> HeldLease | None:
        """Lease the oldest run a worker may drive, looking only at the queue's markers.

        The rules of :meth:`RunStoreBase.claim_run <wfctl.storage.RunStoreBase.claim_run>`;
        the candidates are the runs marked in ``queue/`` (see :mod:`._queue`), oldest first by
        their root's time (read once per run and remembered), so a claim's cost does not grow
        with the runs that ended. Leased runs are skipped by one probe, and the first free one
        is verified whole under its lease; a marker found stale (the run ended, has no
        records or was removed) is removed then. The first claim of this object, and one
        every ``RESCAN_SECONDS`` after, rescans the whole store in a thread and marks the
        claimable runs that have no marker (queued by an older wfctl, or lost in a power cut).

        Nor does a claim's cost grow with the runs queued: the queue is listed and sorted at
        most once every ``RELIST_SECONDS``, and claims in between walk that order, dropping the
        runs whose markers went (one probe each, once), so a run queued meanwhile waits for the
        next listing. A walk that finds nothing lists the queue again before saying so.

        Raises:
            StoreLocationError: the store's ``runs`` or ``queue`` cannot be read as such.
        """
        import asyncio  # loaded by then: not at import (start-up time)

        now = time.monotonic()
        if self._rescanned is None or now - self._rescanned >= self._rescan_every:
            await asyncio.to_thread(self._rescan)
            self._rescanned = now
            self._listed = None  # it may have marked runs
        if self._listed is not None and now - self._listed < self._relist_every:
            lease = self._claim_first(exclude)
            if lease is not None:
                return lease
        names = self._queue.names()
        if len(self._ages) > 2 * len(names) + 64:  # forget the runs that left the queue
            self._ages = {run_id: self._ages[run_id] for run_id in names if run_id in self._ages}
        unknown = [run_id for run_id in names if run_id not in self._ages]
        if len(unknown) > _AGES_INLINE:
            await asyncio.to_thread(self._learn_ages, unknown)
        elif unknown:
            self._learn_ages(unknown)
        ages = self._ages
        self._order = sorted(names, key=lambda rid: (ages.get(rid, ""), rid))
        self._listed = time.monotonic()
        return self._claim_first(exclude)

    def _claim_first(self, exclude: Collection[str]) -> HeldLease | None:
        """Lease the first run of the listed order that can be taken; drop those gone."""
        order, gone = self._order, []
        lease = None
        for place, run_id in enumerate(order):
            if run_id in exclude or run_id in self._locked:
                continue
            if not self._queue.holds(run_id):  # ended (or removed) since the listing
                gone.append(place)
                continue
            lease = self._claim(run_id)
            if lease is not None:
                break
        for place in reversed(gone):
            del order[place]
        return lease

    def _learn_ages(self, run_ids: list[str]) -> None:
        """Remember each run's root time (its place in the queue); "" for a corrupt root."""
        for run_id in run_ids:
            try:
                root = self._root(run_id)
            except (CheckpointCorruptError, OSError):
                self._ages[run_id] = ""
                continue
            if root is not None:  # none yet: being submitted, or a stale marker
                self._ages[run_id] = root.timestamp

    def _claim(self, run_id: str) -> HeldLease | None:
        """Lease one marked run if it is free and may be driven; clean its stale marker."""
        version = self._version(run_id)
        if version is None:  # no journal: removed (or not created yet)
            if not self._fs.lexists(self._layout.run_dir(run_id)):
                self._unqueue(run_id)
            return None
        if self._skipped.get(run_id) == version or self._is_locked(run_id):
            return None
        try:
            self._layout.check_run_dir(run_id)
            lock = self._lock(run_id, 0.0)
        except (RunLockedError, CheckpointCorruptError):
            return None  # taken since the probe, or not a journal anyone can drive
        lease = self._lease(lock, mark=False)  # its marker is there: it was listed
        try:
            ends = self._verified_ends(run_id)
        except (CheckpointCorruptError, OSError):  # never driven; `wfctl runs` names it
            self._skipped[run_id] = version
            lock.release()
            return None
        if ends is not None:
            self._ages[run_id] = ends[0].timestamp
            head = ends[1]
            if head.kind not in ENDING_STATUS or handed_over(head):
                return lease
        self._unqueue(run_id)  # ended, or no records: a stale marker
        lock.release()
        return None

    def _unqueue(self, run_id: str) -> None:
        self._queue.unmark(run_id)
        self._ages.pop(run_id, None)

    def _rescan(self) -> None:
        """Mark every claimable run that has no marker (the store read whole, once)."""
        queued = set(self._queue.names())
        for run_id in self._run_ids():
            if run_id in queued:
                continue
            version = self._version(run_id)
            if version is None or self._skipped.get(run_id) == version:
                continue
            try:
                claimable = self._head_claimable(run_id)
            except (CheckpointCorruptError, OSError):
                claimable = False
            if claimable:
                self._queue.mark(run_id)
            elif claimable is not None:
                self._skipped[run_id] = version

    async def request_pause(self, run_id: str) -> None:
        """Ask the process running ``run_id`` to pause at its next step boundary.

        The request is a marker file beside the journal; the run's lease looks for it (one
        ``lstat``) at every step boundary.

        Raises:
            RunNotFoundError: no such run.
        """
        self.request_pause_now(run_id)

    def request_pause_now(self, run_id: str) -> None:
        """:meth:`request_pause`, without an event loop (from a signal handler).

        Raises:
            RunNotFoundError: no such run.
        """
        marker = self._pause_marker(run_id)
        if self._fs.lexists(marker):
            return  # asked already: a cancel request stays one (its marker names who asked)
        write_private(self._fs, marker, {"pid": os.getpid()})

    async def request_cancel(self, run_id: str, request: CancelRequest) -> None:
        """Ask the process running ``run_id`` to end it cancelled at its next step boundary.

        The pause marker, holding ``request``: the run's lease sees a pause request (one
        ``lstat``), and its driver reads who asked when it honours it (:meth:`cancel_request`).

        Raises:
            RunNotFoundError: no such run.
        """
        marker = self._pause_marker(run_id)
        write_private(self._fs, marker, {"pid": os.getpid(), "cancel": request.to_json()})

    async def cancel_request(self, run_id: str) -> CancelRequest | None:
        """Return the cancel request the run's pause marker holds (None: none, or a plain
        pause). A marker that cannot be read as one (a store is data) is no request."""
        try:
            fd = self._fs.open(self._layout.pause(validate_run_id(run_id)), READ_FLAGS)
        except OSError:
            return None
        try:
            raw = json.loads(self._fs.pread(fd, 4096, 0))
        except (OSError, ValueError, RecursionError):
            return None
        finally:
            self._fs.close(fd)
        return CancelRequest.from_json(raw.get("cancel")) if isinstance(raw, dict) else None

    def _pause_marker(self, run_id: str) -> str:
        """Return the path of a run's pause marker, once the run is known to have records.

        Raises:
            RunNotFoundError: no such run.
        """
        validate_run_id(run_id)
        layout = self._layout
        layout.check_run_dir(run_id)
        journal = layout.journal(run_id)
        if not layout.is_file(journal) or not self._fs.stat(journal).st_size:
            raise RunNotFoundError(run_id)  # no journal, or one leased but never written to
        return layout.pause(run_id)

    def pause_requested(self, run_id: str) -> bool:
        """Return whether a pause was requested for ``run_id`` (one ``lstat``)."""
        return self._fs.lexists(self._layout.pause(validate_run_id(run_id)))

    async def clear_pause(self, run_id: str) -> None:
        """Withdraw a pause request (no-op if there is none)."""
        with contextlib.suppress(FileNotFoundError):
            self._fs.unlink(self._layout.pause(validate_run_id(run_id)))

    async def delete(self, checkpoint_id: str) -> bool:
        """Cut a run's chain at ``checkpoint_id``: it and every later checkpoint are removed.

        Deleting seq 0 removes the whole run. Returns False if there was no such checkpoint.

        Raises:
            InvalidIdError: the id is malformed.
            RunLockedError: the run is being executed.
            CheckpointCorruptError: the record at that position is not that checkpoint.
        """
        run_id, seq = split_checkpoint_id(checkpoint_id)
        if seq == 0:
            return await self.delete_run(run_id)
        cut = cut_run(self._layout, run_id, seq, self.lock_run, self._durable)
        if cut:  # its head may be claimable now (a pause cut away): a stale marker is cheap
            # The cut is done whatever happens here; a marker not written is found by a rescan.
            with contextlib.suppress(OSError, StoreLocationError):
                self._queue.mark(run_id)
        return cut

    async def delete_run(self, run_id: str) -> bool:
        """Remove a run's directory; False if it did not exist.

        Raises:
            InvalidIdError: ``run_id`` is malformed.
            RunLockedError: the run is being executed.
        """
        removed = remove_run(
            self._layout, validate_run_id(run_id), self._lock_to_remove, self._durable
        )
        if removed:
            self._unqueue(run_id)
        return removed

    def follow(self, run_id: str) -> JournalFollower:
        """Return a follower of the run's journal, reading nothing yet (``wfctl log --follow``).

        Raises:
            InvalidIdError: ``run_id`` is malformed.
        """
        return JournalFollower(self._fs, self._layout.journal(validate_run_id(run_id)), run_id)

    async def delete_runs(self, run_ids: Sequence[str]) -> tuple[list[str], list[RunLockedError]]:
        """Remove several runs, syncing the store's directory twice in all (not twice per run).

        Returns the ids of the runs removed (runs that did not exist are left out) and the error
        of each run that is being executed (kept). See :func:`._removal.remove_runs`.

        Raises:
            InvalidIdError: a run id is malformed (nothing is removed).
        """
        for run_id in run_ids:
            validate_run_id(run_id)
        removed, locked = remove_runs(self._layout, run_ids, self._lock_to_remove, self._durable)
        if not removed:
            return removed, locked
        try:  # one listing of the queue, not one unlink per removed run (most have no marker)
            queued = set(self._queue.names())
        except StoreLocationError:
            queued = set()  # a queue that is a link or a file: refused, never followed
        for run_id in removed:
            if run_id in queued:
                self._unqueue(run_id)
            else:
                self._ages.pop(run_id, None)
        return removed, locked


def open_store(path: str | os.PathLike[str], *, must_exist: bool = True) -> FileCheckpointStorage:
    """Open the store at ``path`` for reading, refusing a path that cannot be one.

    Args:
        must_exist: refuse a store that does not exist (a path the user named, where a typo
            must not read as "no runs"). With False a missing store reads as empty: wfctl's
            own default location before its first run.

    Raises:
        StoreLocationError: see :meth:`FileCheckpointStorage.check_location`, and for an empty
            path or the root of the file system.
    """
    storage = FileCheckpointStorage(path)
    storage.check_location(must_exist=must_exist)
    return storage


class _QueuedLease(HeldLease):
    """A file store's lease: its release removes the run's queue marker if the run ended."""

    def __init__(
        self, storage: FileCheckpointStorage, lock: FileRunLock, probe: Callable[[], bool]
    ) -> None:
        super().__init__(lock, probe)
        self._storage = storage

    async def release(self) -> None:
        """Give the run back (idempotent), its marker removed first if the run ended."""
        if self.held:
            # A hint: if this fails, the next claim finds the marker stale and removes it.
            with contextlib.suppress(CheckpointCorruptError, OSError):
                self._storage._settle(self.run_id)
        await super().release()
