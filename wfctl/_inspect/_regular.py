"""Reading a file of a directory that is data: a regular file only, never through a link.

A directory a command inspects (an agent-framework checkpoint directory) is data: nothing in it
leads elsewhere. So a link is not followed out of it, and a FIFO or a device is not read (its
open would wait for a writer, or its read would never end). One helper does this for every
reader of such a directory.
"""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path

__all__ = ["NotRegularFileError", "read_regular_file"]


class NotRegularFileError(OSError):
    """The entry is a link, a FIFO, a device or a directory: it is not read."""


def read_regular_file(file: Path) -> bytes:
    """Return the bytes of ``file`` when it is a regular file, not following a link.

    The open neither follows a link (``O_NOFOLLOW``) nor waits on a FIFO (``O_NONBLOCK``);
    what it opened is checked to be a regular file before a byte is read.

    Raises:
        NotRegularFileError: ``file`` is not a regular file (a link, a FIFO, a device, ...).
        OSError: it cannot be read.
    """
    try:
        fd = os.open(file, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError as exc:
        if exc.errno == errno.ELOOP or (os.path.islink(file) and exc.errno != errno.ENOENT):
            raise NotRegularFileError(errno.ELOOP, "a link, not followed") from None
        raise
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise NotRegularFileError(errno.EINVAL, "not a regular file (a FIFO, a device, ...)")
        with os.fdopen(fd, "rb", closefd=False) as opened:
            return opened.read()
    finally:
        os.close(fd)
