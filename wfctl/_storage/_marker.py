"""A run's end marker on disk: writing it, reading and checking it, dropping it before a cut.

An append-only journal cannot know its own end, so a completed, failed or pause record is
followed by ``end.json``, naming the last seq and that record's checksum (its format is in
:mod:`._journal`). Every read of a journal's end or of the whole journal checks it.
"""

from __future__ import annotations

import contextlib
import errno
import stat

from wfctl._checkpoint import Checkpoint
from wfctl._errors import CheckpointCorruptError

from ._appender import READ_FLAGS
from ._fs import write_private_bytes
from ._journal import END_MAX_BYTES, EndMarker, crc_of_seq, decode_end, encode_end, end_problem
from ._layout import StoreLayout
from ._protocol import JournalProblem

__all__ = [
    "check_end",
    "drop_end_marker",
    "end_marker_problem",
    "mark_end",
    "read_end_marker",
]


def mark_end(layout: StoreLayout, checkpoint: Checkpoint, line: bytes, durable: bool) -> None:
    """Write the run's end marker naming ``checkpoint`` (just committed as ``line``).

    Best effort: the record is committed whatever happens here, so a failure must not
    report it as not committed. A marker that is not written leaves the older one (naming
    an earlier seq) or none, which only weakens the check, never fails a healthy journal.
    """
    path = layout.end(checkpoint.run_id)
    with contextlib.suppress(OSError):
        write_private_bytes(layout.fs, path, encode_end(checkpoint, line), durable=durable)


def read_end_marker(layout: StoreLayout, run_id: str) -> EndMarker | None:
    """Read the run's end marker (None if it has none).

    Raises:
        CheckpointCorruptError: it is a link, not a small regular file, or does not verify.
        OSError: it cannot be read (as for the journal itself).
    """
    path = layout.end(run_id)
    fs = layout.fs
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


def check_end(layout: StoreLayout, run_id: str, last_seq: int, last_crc: str | None) -> None:
    """Refuse a journal whose records end at ``last_seq`` before its end marker.

    ``last_crc`` is the checksum field of the record at ``last_seq``; it is compared when
    the marker names that seq.

    Raises:
        CheckpointCorruptError: the marker is unreadable, or the journal was cut back.
    """
    marker = read_end_marker(layout, run_id)
    if marker is None:
        return
    crc = last_crc if last_seq == marker.seq else None
    found = end_problem(marker, last_seq, crc, layout.end(run_id))
    if found is not None:
        raise CheckpointCorruptError(layout.journal(run_id), found)


def end_marker_problem(
    layout: StoreLayout, run_id: str, data: bytes, checkpoints: list[Checkpoint]
) -> JournalProblem | None:
    """Say how the run's whole journal (``data``, read as ``checkpoints``) contradicts its marker.

    An unreadable marker is a problem too; no marker is none.
    """
    try:
        marker = read_end_marker(layout, run_id)
    except CheckpointCorruptError as exc:
        return JournalProblem.from_error(exc)
    if marker is None:
        return None
    last = max((c.seq for c in checkpoints), default=-1)
    found = end_problem(marker, last, crc_of_seq(data, marker.seq), layout.end(run_id))
    return None if found is None else JournalProblem(layout.journal(run_id), found)


def drop_end_marker(layout: StoreLayout, run_id: str, cut: int, durable: bool) -> None:
    """Remove the end marker before records from seq ``cut`` on are cut off on purpose.

    A marker naming an earlier seq stays: the cut leaves what it describes.
    """
    try:
        marker = read_end_marker(layout, run_id)
    except CheckpointCorruptError:
        marker = None  # unreadable: it goes too
    else:
        if marker is None or marker.seq < cut:
            return
    with contextlib.suppress(FileNotFoundError):
        layout.fs.unlink(layout.end(run_id))
    if durable:
        layout.fs.fsync_dir(layout.run_dir(run_id))
