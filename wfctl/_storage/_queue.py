"""The file store's queue: an empty marker file per run a worker may take.

Layout under the storage root::

    queue/<run_id>    present while the run may be claimable (see below)

A marker is written when a run's lease is taken (before its first record, so no crash leaves
a run's records without it) and removed when a lease is given back with the run's head an
ending record (completed, failed, cancelled, or a pause other than a worker's hand-over), and
when the run is removed. So a queued run, a run being driven, one whose driver died and one
handed over all have one, and a worker's claim looks at the markers only, not at every run.

A marker is a hint, never the truth: the run's own records are. A claim verifies the run whole
under its lease before driving it, so a stale marker (a run that ended or was removed while
its marker stayed: a crash between the end and the removal) costs one look and is removed
then. A missing marker (a run queued by an older wfctl, or a marker lost with a power cut:
markers are not synced) is found by the full rescan a file store makes at its first claim and
every ``RESCAN_SECONDS`` after (see ``FileCheckpointStorage.claim_run``).
"""

from __future__ import annotations

import contextlib
import os
import stat
from typing import Final

from wfctl._errors import StoreLocationError
from wfctl._records._checkpoint import validate_run_id

from ._layout import StoreLayout

__all__ = ["RESCAN_SECONDS", "RunQueue"]

#: Seconds between two full rescans of a store by one storage object (its first claim makes one).
RESCAN_SECONDS: Final = 600.0

_MARK_FLAGS: Final = (
    os.O_WRONLY | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
)


class RunQueue:
    """The markers of one store's claimable runs, through the store's file-system seam."""

    __slots__ = ("_checked", "_layout", "path")

    def __init__(self, layout: StoreLayout) -> None:
        self._layout = layout
        #: The directory holding one marker per run.
        self.path = os.path.join(layout.root, "queue")
        self._checked = False

    def marker(self, run_id: str) -> str:
        return os.path.join(self.path, run_id)

    def mark(self, run_id: str) -> None:
        """Write the run's marker (nothing if it is there). Not synced: it is a hint.

        Raises:
            StoreLocationError: ``queue`` is a symbolic link or not a directory.
        """
        fs = self._layout.fs
        path = self.marker(run_id)
        if not self._checked:
            with contextlib.suppress(FileExistsError):
                fs.mkdir(self.path, 0o700)
            self._check()
        fs.close(fs.open(path, _MARK_FLAGS, 0o600))

    def holds(self, run_id: str) -> bool:
        """Whether the run's marker is there (one system call, no file opened)."""
        return self._layout.fs.lexists(self.marker(run_id))

    def unmark(self, run_id: str) -> None:
        """Remove the run's marker (nothing if there is none)."""
        with contextlib.suppress(FileNotFoundError):
            self._layout.fs.unlink(self.marker(run_id))

    def names(self) -> list[str]:
        """Return the ids of the runs marked (one directory listing, no file opened).

        Raises:
            StoreLocationError: ``queue`` is a symbolic link or not a directory.
        """
        if not self._check():
            return []
        try:
            entries = self._layout.fs.scandir(self.path)
        except FileNotFoundError:
            return []
        names = []
        for entry in entries:
            try:
                validate_run_id(entry.name)
            except ValueError:
                continue
            names.append(entry.name)
        return names

    def _check(self) -> bool:
        """Return whether ``queue`` exists (checked once it does); refuse a link or a file."""
        if self._checked:
            return True
        try:
            mode = self._layout.fs.lstat(self.path).st_mode
        except FileNotFoundError:
            return False
        root = str(self._layout.root)
        if stat.S_ISLNK(mode):
            raise StoreLocationError(root, "holds queue as a symbolic link, which is not followed")
        if not stat.S_ISDIR(mode):
            raise StoreLocationError(root, "holds queue as a file, not a directory")
        self._checked = True
        return True
