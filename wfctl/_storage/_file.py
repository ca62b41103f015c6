"""The durable file storage: one append-only, checksummed journal per run.

Layout under the storage root::

    runs/<run_id>/journal.jsonl   one record per checkpoint (see ._journal), append-only; the
                                  OS lock held while the run executes is on this file
    runs/<run_id>/end.json        the end marker: the last seq when the run last completed,
                                  failed or paused (see ._journal)
    runs/<run_id>/owner.json      who holds that lock (pid, host, argv, since)
    runs/<run_id>/pause           present while a pause has been requested

A commit is one ``write`` of a whole line to an ``O_APPEND`` descriptor kept open per run,
then ``fdatasync`` (unless ``durable=False``). The storage remembers each run's head after the
first append, so the hot path does no reads and no parsing: one ``lstat`` checks that the
journal is still the file, and as long, as this process left it (see ._appender). The record
still names its seq and parent, and a record that does not extend the head is refused. A
completed, failed or pause record is followed by the end marker, written atomically (and durably
in the durable mode); every read of a journal's end or of the whole journal checks it.
"""

from __future__ import annotations

import contextlib
import errno
import os
import secrets
import stat
import threading
import weakref
from pathlib import Path
from typing import Final

from wfctl._checkpoint import ENDING_STATUS, Checkpoint, Kind, split_checkpoint_id, validate_run_id
from wfctl._errors import (
    CheckpointCorruptError,
    JournalChangedError,
    RunNotFoundError,
    StoreLocationError,
)

from ._appender import READ_FLAGS, WRITE_FLAGS, JournalAppender, symlink_error
from ._base import StorageQueries, strict_chain
from ._fs import OS_FS, FileSystem, write_private, write_private_bytes
from ._journal import (
    END_MAX_BYTES,
    END_NAME,
    JOURNAL_NAME,
    EndMarker,
    check_journal,
    check_last_is_newest,
    crc_of_seq,
    decode_end,
    decode_record,
    encode_end,
    encode_record,
    end_problem,
    parse_journal,
    read_all,
    read_head,
    read_lines,
    read_tail,
    record_crc,
)
from ._lock import FileRunLock, probe_locked
from ._protocol import JournalProblem, RunJournal
from ._security import vet_store_root

__all__ = ["FileCheckpointStorage", "open_store"]

#: Journals kept open for appending at once; the least recently opened is closed beyond this.
_MAX_OPEN: Final = 128
#: Prefix of a run directory being removed: no run id starts with a dot, so no listing reads it.
_REMOVING: Final = ".removing-"


def _close_all(appenders: dict[str, JournalAppender]) -> None:
    for appender in list(appenders.values()):
        appender.close()
    appenders.clear()


class FileCheckpointStorage(StorageQueries):
    """Checkpoints in an append-only journal per run under ``path`` (the default storage).

    Args:
        path: the storage root. Nothing is written until the first save or lock.
        durable: ``True`` (default) makes every save ``fdatasync`` before it returns.
            ``False`` is the explicit faster mode: the same format, but a power loss or OS crash
            can drop the most recent commits (a process crash cannot: the data is in the page
            cache). Directories are created ``0o700`` and files ``0o600``.
        fs: the object that makes every OS call (default: the operating system itself); tests
            pass one that injects faults. See :mod:`wfctl._storage._fs`.

    The first time it finds its root already there, the storage warns
    (:class:`~wfctl._storage._security.StoreSecurityWarning`) if the root is writable by group
    or others, or not owned by the current user. The root may be a symbolic link to a directory;
    ``runs`` and the run directories inside it may not (they are refused, never followed).

    Raises:
        StoreLocationError: ``path`` is empty (which would silently mean the current
            directory) or is the root of the file system (where ``runs`` would be created).
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        durable: bool = True,
        fs: FileSystem | None = None,
    ) -> None:
        text = os.fspath(path)
        if not text:
            raise StoreLocationError(text, "is empty: name a directory (. for the current one)")
        self._root_dir = Path(os.path.abspath(text))
        real = os.path.realpath(self._root_dir)
        if os.path.dirname(real) == real:
            raise StoreLocationError(
                str(self._root_dir),
                "is the root of the file system: name a directory of its own for the store",
            )
        self._runs_dir = str(self._root_dir / "runs")
        self._durable = durable
        self._fs: FileSystem = OS_FS if fs is None else fs
        self._root_vetted = False
        self._appenders: dict[str, JournalAppender] = {}
        self._pause_markers: dict[str, str] = {}
        #: run id -> (st_dev, st_ino) of the journal this storage holds the run's lock on.
        self._locked: dict[str, tuple[int, int]] = {}
        self._mutex = threading.Lock()
        self._finalizer = weakref.finalize(self, _close_all, self._appenders)

    def __repr__(self) -> str:
        return f"FileCheckpointStorage({str(self._root_dir)!r}, durable={self._durable})"

    @property
    def root(self) -> Path:
        """The storage root directory."""
        return self._root_dir

    @property
    def durable(self) -> bool:
        """Whether each save is fsynced before it returns."""
        return self._durable

    def close(self) -> None:
        """Close the journals kept open for appending; the storage stays usable."""
        with self._mutex:
            appenders = list(self._appenders.values())
            self._appenders.clear()
        for appender in appenders:
            appender.close()

    # -- writing -----------------------------------------------------------------------------

    async def save(self, checkpoint: Checkpoint) -> None:
        """Append ``checkpoint`` to its run's journal (durably, unless ``durable=False``).

        Blocking I/O on purpose, without a thread hop: the caller decides about threads.

        Raises:
            InvalidIdError: the run id is malformed.
            CheckpointCorruptError: the checkpoint does not extend the run's head by exactly one
                link (wrong seq, wrong parent, a second root), the run's last record is corrupt,
                or the journal is not a regular file.
        """
        line = encode_record(checkpoint)  # before any state changes: bad data changes nothing
        while True:
            appender = self._appenders.get(checkpoint.run_id) or self._open_appender(checkpoint)
            try:
                if appender.append(checkpoint, line, self._durable):
                    if checkpoint.kind in ENDING_STATUS:  # the call ends: mark the end
                        self._mark_end(checkpoint, line)
                    return
            except OSError:
                self._drop(checkpoint.run_id, appender)  # it closed itself; forget it
                raise
            # Closed before we got it (a lock taken, close(), eviction, an interrupted write):
            # forget it; the next attempt reopens the journal and rereads its head.
            self._drop(checkpoint.run_id, appender)

    def _mark_end(self, checkpoint: Checkpoint, line: bytes) -> None:
        """Write the run's end marker naming ``checkpoint`` (just committed as ``line``).

        Best effort: the record is committed whatever happens here, so a failure must not
        report it as not committed. A marker that is not written leaves the older one (naming
        an earlier seq) or none, which only weakens the check, never fails a healthy journal.
        """
        path = self._end(checkpoint.run_id)
        with contextlib.suppress(OSError):
            write_private_bytes(self._fs, path, encode_end(checkpoint, line), durable=self._durable)

    def _open_appender(self, checkpoint: Checkpoint) -> JournalAppender:
        run_id = validate_run_id(checkpoint.run_id)
        if checkpoint.seq == 0:
            self._make_run_dir(run_id)
        else:
            self._check_run_dir(run_id)
        path = self._journal(run_id)
        appender = JournalAppender.open(
            self._fs, path, run_id, create=checkpoint.seq == 0, durable=self._durable
        )
        try:
            locked = self._locked.get(run_id)
            if locked is not None and locked != appender.identity:
                raise JournalChangedError(
                    path, "the journal is not the file this process locked: it was replaced"
                )
            self._check_end(run_id, appender.last_seq, appender.last_crc)
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
            old.close()
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
            appender.close()

    # -- paths and directories --------------------------------------------------------------

    def _run_dir(self, run_id: str) -> str:
        return os.path.join(self._runs_dir, run_id)

    def _journal(self, run_id: str) -> str:
        return os.path.join(self._runs_dir, run_id, JOURNAL_NAME)

    def _vet_root(self) -> None:
        """Warn once about a store root others can write to (one ``stat``, then a flag)."""
        if not self._root_vetted:
            self._root_vetted = vet_store_root(self._fs, str(self._root_dir))

    def _make_run_dir(self, run_id: str) -> None:
        fs = self._fs
        self._vet_root()  # before creating it: a root we create ourselves is private
        created = []
        root = str(self._root_dir)
        try:
            fs.mkdir(root, 0o700)
            created.append(root)
        except FileExistsError:
            pass
        except FileNotFoundError:
            fs.makedirs(root, 0o700)
            created.append(root)
        except NotADirectoryError:
            raise StoreLocationError(
                root, "cannot be created: part of its path is a file"
            ) from None
        try:
            fs.mkdir(self._runs_dir, 0o700)
            created.append(self._runs_dir)
        except FileExistsError:
            pass
        except NotADirectoryError:
            raise StoreLocationError(root, "is not a directory") from None
        self._check_runs_dir()  # before anything is created inside it
        try:
            fs.mkdir(self._run_dir(run_id), 0o700)
            created.append(self._run_dir(run_id))
        except FileExistsError:
            pass
        self._check_run_dir(run_id)
        if self._durable:
            for path in created:
                fs.fsync_dir(os.path.dirname(path))

    def _check_runs_dir(self) -> bool:
        """Return whether ``runs`` exists; refuse it as a symbolic link or as a file.

        A run directory that is a link is refused (see :meth:`_check_run_dir`), so the directory
        holding them all is too: following it would read and write runs outside the store.

        Raises:
            StoreLocationError: ``runs`` is a link or not a directory, or the root is a file.
        """
        root = str(self._root_dir)
        try:
            mode = self._fs.lstat(self._runs_dir).st_mode
        except FileNotFoundError:
            return False
        except NotADirectoryError:
            raise StoreLocationError(root, "is not a directory") from None
        if stat.S_ISLNK(mode):
            raise StoreLocationError(root, "holds runs as a symbolic link, which is not followed")
        if not stat.S_ISDIR(mode):
            raise StoreLocationError(root, "holds runs as a file, not a directory")
        return True

    def check_location(self, *, must_exist: bool = True) -> None:
        """Check that the root is a directory that can be read as a store.

        Args:
            must_exist: refuse a root that does not exist. With False, a missing root is a
                store with no runs yet (as every read of this storage treats it).

        Raises:
            StoreLocationError: the root is missing (``must_exist``), or is not a directory, or
                its ``runs`` is a symbolic link or a file.
        """
        root = str(self._root_dir)
        try:
            is_dir = stat.S_ISDIR(self._fs.stat(root).st_mode)
        except (FileNotFoundError, NotADirectoryError):
            if must_exist:
                raise StoreLocationError(root, "does not exist") from None
            return
        if not is_dir:
            raise StoreLocationError(root, "is not a directory")
        self._check_runs_dir()

    def _check_run_dir(self, run_id: str) -> None:
        self._vet_root()
        self._check_runs_dir()
        path = self._run_dir(run_id)
        try:
            if stat.S_ISLNK(self._fs.lstat(path).st_mode):
                raise CheckpointCorruptError(path, "run directory is a symbolic link, not followed")
        except FileNotFoundError:
            pass

    def _open_read(self, run_id: str) -> int:
        """Open a run's journal for reading, refusing symbolic links and non-regular files.

        Raises:
            RunNotFoundError: there is no journal.
            CheckpointCorruptError: it (or the run directory) is a link or not a regular file.
        """
        self._check_run_dir(run_id)
        path = self._journal(run_id)
        fs = self._fs
        try:
            fd = fs.open(path, READ_FLAGS)
        except (FileNotFoundError, NotADirectoryError):
            if self._end_marker(run_id) is not None:  # it ended once: its journal was removed
                raise CheckpointCorruptError(
                    path, "journal is missing, but the run's end marker says it was written"
                ) from None
            raise RunNotFoundError(run_id) from None
        except OSError as exc:
            raise symlink_error(path, exc) from None
        try:
            regular = stat.S_ISREG(fs.fstat(fd).st_mode)
        except BaseException:
            fs.close(fd)
            raise
        if not regular:
            fs.close(fd)
            raise CheckpointCorruptError(path, "journal is not a regular file")
        return fd

    # -- reading -----------------------------------------------------------------------------

    async def read_run(self, run_id: str) -> RunJournal:
        """Read everything stored for a run, naming each record that cannot be trusted.

        Raises:
            InvalidIdError: ``run_id`` is malformed.
            RunNotFoundError: the run has no journal.
        """
        return self._read_journal(validate_run_id(run_id))

    def _read_journal(self, run_id: str) -> RunJournal:
        path = self._journal(run_id)
        try:
            fd = self._open_read(run_id)
        except CheckpointCorruptError as exc:
            return RunJournal(run_id, (), (JournalProblem.from_error(exc),), 0, path)
        try:
            data = read_all(self._fs, fd)
        finally:
            self._fs.close(fd)
        checkpoints, problems, torn = parse_journal(data, path, run_id)
        try:
            marker = self._end_marker(run_id)
        except CheckpointCorruptError as exc:
            problems.append(JournalProblem.from_error(exc))
        else:
            if marker is not None:
                last = max((c.seq for c in checkpoints), default=-1)
                found = end_problem(marker, last, crc_of_seq(data, marker.seq), self._end(run_id))
                if found is not None:
                    problems.append(JournalProblem(path, found))
        return RunJournal(run_id, tuple(checkpoints), tuple(problems), torn, path)

    def _end(self, run_id: str) -> str:
        return os.path.join(self._runs_dir, run_id, END_NAME)

    def _end_marker(self, run_id: str) -> EndMarker | None:
        """Read the run's end marker (None if it has none).

        Raises:
            CheckpointCorruptError: it is a link, not a small regular file, or does not verify.
            OSError: it cannot be read (as for the journal itself).
        """
        path = self._end(run_id)
        fs = self._fs
        try:
            fd = fs.open(path, READ_FLAGS)
        except FileNotFoundError:
            return None
        except OSError as exc:
            if exc.errno in (errno.ELOOP, errno.EMLINK):
                raise CheckpointCorruptError(path, "end marker is a symbolic link") from None
            raise
        try:
            st = fs.fstat(fd)
            if not stat.S_ISREG(st.st_mode) or st.st_size > END_MAX_BYTES:
                raise CheckpointCorruptError(path, "end marker is not a small regular file")
            data = fs.pread(fd, END_MAX_BYTES, 0)
        finally:
            fs.close(fd)
        return decode_end(data, path, run_id)

    def _check_end(self, run_id: str, last_seq: int, last_crc: str | None) -> None:
        """Refuse a journal whose records end at ``last_seq`` before its end marker.

        ``last_crc`` is the checksum field of the record at ``last_seq``; it is compared when
        the marker names that seq.

        Raises:
            CheckpointCorruptError: the marker is unreadable, or the journal was cut back.
        """
        marker = self._end_marker(run_id)
        if marker is None:
            return
        crc = last_crc if last_seq == marker.seq else None
        found = end_problem(marker, last_seq, crc, self._end(run_id))
        if found is not None:
            raise CheckpointCorruptError(self._journal(run_id), found)

    def _chain(self, run_id: str) -> list[Checkpoint]:
        return strict_chain(self._read_journal(run_id))

    def _verified_ends(self, run_id: str) -> tuple[Checkpoint, Checkpoint] | None:
        """Verify the whole journal's checksums and links in one read; decode only its ends."""
        try:
            fd = self._open_read(run_id)
        except RunNotFoundError:
            return None
        path = self._journal(run_id)
        try:
            ends = check_journal(read_lines(self._fs, fd), path, run_id)
        finally:
            self._fs.close(fd)
        if ends is None:
            return None
        root = self._decode_root(ends[0], path, run_id)
        head = root if ends[1] is ends[0] else decode_record(ends[1], f"{path} (last record)")
        self._check_end(run_id, head.seq, record_crc(ends[1]))
        return root, head

    def _head(self, run_id: str) -> Checkpoint | None:
        try:
            fd = self._open_read(run_id)
        except RunNotFoundError:
            return None
        path = self._journal(run_id)
        try:
            tail = read_tail(self._fs, fd, self._fs.fstat(fd).st_size)
            if tail.line is None:
                return None
            head = decode_record(tail.line, f"{path} (last record, byte {tail.offset})")
            if head.run_id != run_id:
                raise CheckpointCorruptError(path, f"last record belongs to run {head.run_id!r}")
            check_last_is_newest(self._fs, fd, tail, head, path)
        finally:
            self._fs.close(fd)
        self._check_end(run_id, head.seq, record_crc(tail.line))
        return head

    def _root(self, run_id: str) -> Checkpoint | None:
        try:
            fd = self._open_read(run_id)
        except RunNotFoundError:
            return None
        try:
            line = read_head(self._fs, fd)
        finally:
            self._fs.close(fd)
        if line is None:
            return None
        return self._decode_root(line, self._journal(run_id), run_id)

    @staticmethod
    def _decode_root(line: bytes, path: str, run_id: str) -> Checkpoint:
        root = decode_record(line, f"{path}:1")
        if root.run_id != run_id:
            raise CheckpointCorruptError(f"{path}:1", f"record belongs to run {root.run_id!r}")
        if root.seq != 0 or root.kind != Kind.ROOT or root.previous_checkpoint_id is not None:
            raise CheckpointCorruptError(
                f"{path}:1", f"the first record is {root.checkpoint_id} ({root.kind}), not a root"
            )
        return root

    def _run_ids(self) -> list[str]:
        self._vet_root()
        if not self._check_runs_dir():
            return []
        try:
            entries = self._fs.scandir(self._runs_dir)
        except FileNotFoundError:
            return []
        run_ids = []
        for entry in entries:
            try:
                validate_run_id(entry.name)
            except ValueError:
                continue
            if entry.is_dir(follow_symlinks=False) or entry.is_symlink():
                run_ids.append(entry.name)
        return run_ids

    def _is_locked(self, run_id: str) -> bool:
        return probe_locked(self._journal(run_id))

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
        self._make_run_dir(run_id)
        run_dir = self._run_dir(run_id)

        def released() -> None:
            self._locked.pop(run_id, None)
            self._forget(run_id)

        lock = FileRunLock.acquire(
            run_id, self._journal(run_id), os.path.join(run_dir, "owner.json"), released
        )
        self._forget(run_id)
        if lock.identity is not None:
            self._locked[run_id] = lock.identity
        return lock

    def request_pause(self, run_id: str) -> None:
        """Ask the process running ``run_id`` to pause at its next step boundary.

        Raises:
            RunNotFoundError: no such run.
        """
        validate_run_id(run_id)
        self._check_run_dir(run_id)
        if not self._is_file(self._journal(run_id)):
            raise RunNotFoundError(run_id)
        write_private(self._fs, os.path.join(self._run_dir(run_id), "pause"), {"pid": os.getpid()})

    def pause_requested(self, run_id: str) -> bool:
        """Return whether a pause was requested for ``run_id`` (one ``lstat``).

        The engine asks at every step boundary, so the marker's path is worked out once per run.
        """
        path = self._pause_markers.get(run_id)
        if path is None:
            path = os.path.join(self._runs_dir, validate_run_id(run_id), "pause")
            self._pause_markers[run_id] = path
        return self._fs.lexists(path)

    def clear_pause(self, run_id: str) -> None:
        """Withdraw a pause request (no-op if there is none)."""
        with contextlib.suppress(FileNotFoundError):
            self._fs.unlink(os.path.join(self._runs_dir, validate_run_id(run_id), "pause"))

    def _is_file(self, path: str) -> bool:
        """Like :func:`os.path.isfile`, through the seam."""
        try:
            return stat.S_ISREG(self._fs.stat(path).st_mode)
        except (OSError, ValueError):
            return False

    async def delete(self, checkpoint_id: str) -> bool:
        """Cut a run's chain at ``checkpoint_id``: it and every later checkpoint are removed.

        Deleting seq 0 removes the whole run. Returns False if there was no such checkpoint.

        Raises:
            InvalidIdError: the id is malformed.
            RunLockedError: the run is being executed.
            CheckpointCorruptError: the record at that position is not that checkpoint.
        """
        run_id, seq = split_checkpoint_id(checkpoint_id)
        return self._remove_run(run_id) if seq == 0 else self._cut_run(run_id, seq)

    async def delete_run(self, run_id: str) -> bool:
        """Remove a run's directory; False if it did not exist.

        Raises:
            InvalidIdError: ``run_id`` is malformed.
            RunLockedError: the run is being executed.
        """
        return self._remove_run(validate_run_id(run_id))

    def _remove_run(self, run_id: str) -> bool:
        run_dir = self._run_dir(run_id)
        fs = self._fs
        if not self._check_runs_dir():
            return False
        self._finish_removals()
        try:
            is_link = stat.S_ISLNK(fs.lstat(run_dir).st_mode)
        except (FileNotFoundError, NotADirectoryError):
            return False
        if is_link:
            fs.unlink(run_dir)  # the link itself, never what it points to
        else:
            try:
                lock: FileRunLock | None = self.lock_run(run_id)
            except CheckpointCorruptError:
                lock = None  # a journal that is a link or no file: no writer can hold it
            # One rename takes the whole run out of the store; only then are its files deleted.
            # A process killed part way leaves the run whole, or a removal directory that no
            # listing reads (its name is no run id) and the next removal finishes: never a run
            # directory that lost its journal but kept the rest.
            doomed = os.path.join(self._runs_dir, f"{_REMOVING}{run_id}.{secrets.token_hex(4)}")
            try:
                fs.replace(run_dir, doomed)
            finally:
                if lock is not None:
                    lock.release()
            if self._durable:
                fs.fsync_dir(self._runs_dir)
            fs.rmtree(doomed)
        if self._durable:
            fs.fsync_dir(self._runs_dir)
        return True

    def _finish_removals(self) -> None:
        """Delete what removals interrupted by a crash left behind (see :meth:`_remove_run`)."""
        for entry in self._fs.scandir(self._runs_dir):
            if entry.name.startswith(_REMOVING) and entry.is_dir(follow_symlinks=False):
                with contextlib.suppress(FileNotFoundError):  # another remover got there first
                    self._fs.rmtree(entry.path)

    def _cut_run(self, run_id: str, seq: int) -> bool:
        if not self._is_file(self._journal(run_id)):
            return False
        with self.lock_run(run_id):
            return self._truncate_at(run_id, seq)

    def _truncate_at(self, run_id: str, seq: int) -> bool:
        path = self._journal(run_id)
        fs = self._fs
        fd = fs.open(path, WRITE_FLAGS)
        try:
            data = read_all(fs, fd)
            start = 0
            for _ in range(seq):
                newline = data.find(b"\n", start)
                if newline < 0:
                    return False
                start = newline + 1
            end = data.find(b"\n", start)
            if end < 0:
                return False
            where = f"{path}:{seq + 1}"
            found = decode_record(data[start:end], where)
            if found.seq != seq or found.run_id != run_id:
                raise CheckpointCorruptError(where, f"holds {found.checkpoint_id}; refusing to cut")
            self._drop_end_marker(run_id, seq)  # first: a crash in between must not look cut
            fs.ftruncate(fd, start)
            if self._durable:
                fs.fdatasync(fd)
            return True
        finally:
            fs.close(fd)

    def _drop_end_marker(self, run_id: str, cut: int) -> None:
        """Remove the end marker before records from seq ``cut`` on are cut off on purpose.

        A marker naming an earlier seq stays: the cut leaves what it describes.
        """
        try:
            marker = self._end_marker(run_id)
        except CheckpointCorruptError:
            marker = None  # unreadable: it goes too
        else:
            if marker is None or marker.seq < cut:
                return
        with contextlib.suppress(FileNotFoundError):
            self._fs.unlink(self._end(run_id))
        if self._durable:
            self._fs.fsync_dir(self._run_dir(run_id))


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
