"""Where a file store keeps each run's files, and the checks made before any is used.

Layout under the storage root::

    runs/<run_id>/journal.jsonl   one record per checkpoint (see ._journal)
    runs/<run_id>/end.json        the end marker (see ._marker)
    runs/<run_id>/owner.json      who holds the run's lock (see ._lock)
    runs/<run_id>/pause           present while a pause has been requested
    runs/.copying-<run_id>/       a run being copied into the store (see ._staging)
    queue/<run_id>                a run a worker may take (see ._queue)

The root may be a symbolic link to a directory; ``runs`` and the run directories inside it may
not (they are refused, never followed).
"""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import Final

from wfctl._errors import CheckpointCorruptError, StoreLocationError
from wfctl._records._checkpoint import validate_run_id

from ._fs import FileSystem
from ._journal import JOURNAL_NAME
from ._security import vet_store_root

__all__ = ["COPYING", "REMOVING", "TEMPLATE_NAME", "StoreLayout"]

#: Prefix of a run directory being removed (see ._removal), and of a run being copied into the
#: store (see ._staging): no run id starts with a dot, so no listing reads either.
REMOVING: Final = ".removing-"
COPYING: Final = ".copying-"

#: The answers template's file name inside a paused run's directory (wfctl writes it there).
TEMPLATE_NAME: Final = "answers.toml"


class StoreLayout:
    """The paths of one store's files, and the checks of its directories, through ``fs``.

    Raises:
        StoreLocationError: ``path`` is empty (which would silently mean the current
            directory) or is the root of the file system (where ``runs`` would be created).
    """

    __slots__ = ("_vetted", "fs", "root", "runs")

    def __init__(self, path: str | os.PathLike[str], fs: FileSystem) -> None:
        text = os.fspath(path)
        if not text:
            raise StoreLocationError(text, "is empty: name a directory (. for the current one)")
        self.root = Path(os.path.abspath(text))
        real = os.path.realpath(self.root)
        if os.path.dirname(real) == real:
            raise StoreLocationError(
                str(self.root),
                "is the root of the file system: name a directory of its own for the store",
            )
        #: The directory holding one directory per run.
        self.runs = str(self.root / "runs")
        self.fs = fs
        self._vetted = False

    # -- paths -------------------------------------------------------------------------------

    # Joined by hand, not by os.path.join (~1 µs a call, three per run listed): ``runs`` is
    # absolute and never ends with a separator, and a run id never holds one.

    def run_dir(self, run_id: str) -> str:
        return f"{self.runs}{os.sep}{run_id}"

    def journal(self, run_id: str) -> str:
        return f"{self.runs}{os.sep}{run_id}{os.sep}{JOURNAL_NAME}"

    def end(self, run_id: str) -> str:
        return f"{self.runs}{os.sep}{run_id}{os.sep}end.json"

    def owner(self, run_id: str) -> str:
        return os.path.join(self.runs, run_id, "owner.json")

    def pause(self, run_id: str) -> str:
        return os.path.join(self.runs, run_id, "pause")

    # -- checks ------------------------------------------------------------------------------

    def vet_root(self) -> None:
        """Warn once about a store root others can write to (one ``stat``, then a flag)."""
        if not self._vetted:
            self._vetted = vet_store_root(self.fs, str(self.root))

    def make_run_dir(self, run_id: str, *, durable: bool) -> None:
        """Create the root, ``runs`` and the run's directory as needed, then check them.

        With ``durable``, each directory created is made durable in its parent.
        """
        created = self._make_runs_dir()
        fs = self.fs
        try:
            fs.mkdir(self.run_dir(run_id), 0o700)
            created.append(self.run_dir(run_id))
        except FileExistsError:
            pass
        self.check_run_dir(run_id)
        if durable:
            for path in created:
                fs.fsync_dir(os.path.dirname(path))

    def make_runs_dir(self, *, durable: bool) -> None:
        """Create the root and ``runs`` as needed, then check them (see :meth:`make_run_dir`)."""
        created = self._make_runs_dir()
        if durable:
            for path in created:
                self.fs.fsync_dir(os.path.dirname(path))

    def _make_runs_dir(self) -> list[str]:
        """Create the root and ``runs`` as needed and check ``runs``; return what was created."""
        fs = self.fs
        self.vet_root()  # before creating it: a root we create ourselves is private
        created = []
        root = str(self.root)
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
            fs.mkdir(self.runs, 0o700)
            created.append(self.runs)
        except FileExistsError:
            pass
        except NotADirectoryError:
            raise StoreLocationError(root, "is not a directory") from None
        self.check_runs_dir()  # before anything is created inside it
        return created

    def check_runs_dir(self) -> bool:
        """Return whether ``runs`` exists; refuse it as a symbolic link or as a file.

        A run directory that is a link is refused (see :meth:`check_run_dir`), so the directory
        holding them all is too: following it would read and write runs outside the store.

        Raises:
            StoreLocationError: ``runs`` is a link or not a directory, or the root is a file.
        """
        root = str(self.root)
        try:
            mode = self.fs.lstat(self.runs).st_mode
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

        The check behind ``FileCheckpointStorage.check_location`` (see there).
        """
        root = str(self.root)
        try:
            is_dir = stat.S_ISDIR(self.fs.stat(root).st_mode)
        except (FileNotFoundError, NotADirectoryError):
            if must_exist:
                raise StoreLocationError(root, "does not exist") from None
            return
        if not is_dir:
            raise StoreLocationError(root, "is not a directory")
        self.check_runs_dir()

    def check_run_dir(self, run_id: str) -> None:
        """Refuse a run entry that is not a directory (after :meth:`check_runs_dir`).

        Raises:
            StoreLocationError: as :meth:`check_runs_dir`.
            CheckpointCorruptError: the run's entry is a symbolic link, or a file (or any
                other kind of entry) where its directory should be.
        """
        self.vet_root()
        self.check_runs_dir()
        path = self.run_dir(run_id)
        try:
            mode = self.fs.lstat(path).st_mode
        except FileNotFoundError:
            return
        if stat.S_ISLNK(mode):
            raise CheckpointCorruptError(path, "run directory is a symbolic link, not followed")
        if not stat.S_ISDIR(mode):
            raise CheckpointCorruptError(path, "run entry is a file, not a directory")

    def is_file(self, path: str) -> bool:
        """Like :func:`os.path.isfile`, through the seam."""
        try:
            return stat.S_ISREG(self.fs.stat(path).st_mode)
        except (OSError, ValueError):
            return False

    def run_ids(self) -> list[str]:
        """The ids of the store's runs: its run entries (a link or a file is refused when read)."""
        return [run_id for run_id, _ in self.run_entries()]

    def run_entries(self) -> list[tuple[str, bool]]:
        """The store's run ids, each with whether its entry is a directory (not a link, a file).

        ``runs`` is checked (:meth:`check_runs_dir`) and listed once; whether each entry is a
        directory comes from that listing (the directory entry's type, no ``lstat`` per run on
        most file systems). A listing that reads every run needs no :meth:`check_run_dir` for a
        run listed as a directory; a link or a file is listed so that reading it refuses it.
        """
        self.vet_root()
        if not self.check_runs_dir():
            return []
        try:
            entries = self.fs.scandir(self.runs)
        except FileNotFoundError:
            return []
        found = []
        for entry in entries:
            try:
                validate_run_id(entry.name)
            except ValueError:
                continue
            # Anything else named like a run (a link, a file) is listed too: reading it refuses
            # it (check_run_dir), so it shows as corrupt instead of going unseen.
            found.append((entry.name, entry.is_dir(follow_symlinks=False)))
        return found
