"""A run's end marker: its format, writing it, checking a journal against it, dropping it.

An append-only journal cannot know its own end: records cut off at a line boundary leave a
journal that reads as a shorter, healthy one. So when a run completes, fails or pauses, the
storage also writes an *end marker* beside the journal, checksummed as a record is (see ._journal)::

    {"v":1,"run":"r1","seq":9,"kind":"pause","last":"1a2b3c4d","crc":"..."}

naming the last seq committed at that moment and that record's own checksum (``last``). It is
written after the record is durable, so it never names more than the journal holds; a newer
marker replaces it. A journal that ends before its marker's seq (or holds another record there)
has lost committed records: :func:`end_problem` says so.

It is not a checkpoint and not in the chain. Every read of a journal's end or of the whole
journal checks it; a deliberate cut (``delete``) drops a marker the cut would contradict first.
"""

from __future__ import annotations

import contextlib
import errno
import json
import re
import stat
import zlib
from dataclasses import dataclass
from typing import Final

from wfctl._errors import CheckpointCorruptError
from wfctl._records._checkpoint import Checkpoint

from ._appender import READ_FLAGS
from ._fs import write_private_bytes
from ._journal import crc_of_seq, load_body, verified_body
from ._layout import StoreLayout
from ._protocol import JournalProblem

__all__ = [
    "EndMarker",
    "check_end",
    "check_marker",
    "decode_end",
    "drop_end_marker",
    "encode_end",
    "end_marker_problem",
    "end_problem",
    "mark_end",
    "read_end_marker",
    "read_end_marker_first",
]

_END_VERSION: Final = 1
#: A marker is a few dozen bytes; anything much larger is not one.
_MAX_BYTES: Final = 4096
_HEX8: Final = re.compile(rb"[0-9a-f]{8}")
_ENCODER: Final = json.JSONEncoder(separators=(",", ":"), check_circular=False)


@dataclass(frozen=True, slots=True)
class EndMarker:
    """What a run's end marker says: its journal held ``seq`` (a ``kind`` record) at least."""

    run_id: str
    seq: int
    kind: str
    #: The checksum field of record ``seq`` (8 hex digits), as written in its line.
    last: str


def encode_end(checkpoint: Checkpoint, line: bytes) -> bytes:
    """Return the end marker naming ``checkpoint``, committed as the journal line ``line``."""
    raw = {
        "v": _END_VERSION,
        "run": checkpoint.run_id,
        "seq": checkpoint.seq,
        "kind": checkpoint.kind,
        "last": line[-11:-3].decode("ascii"),  # the record's own crc: line ends '"crc":"…"}\n'
    }
    body = _ENCODER.encode(raw).encode()
    return b'%s,"crc":"%08x"}\n' % (body[:-1], zlib.crc32(body))


def decode_end(data: bytes, where: str, run_id: str) -> EndMarker:
    """Verify and decode an end marker's bytes.

    Raises:
        CheckpointCorruptError: bad checksum, JSON or fields, or another run's marker.
    """
    raw = load_body(verified_body(data.rstrip(b"\n"), where), where)
    if not isinstance(raw, dict) or raw.get("v") != _END_VERSION:
        raise CheckpointCorruptError(where, "not an end marker of a known version")
    seq, kind, last = raw.get("seq"), raw.get("kind"), raw.get("last")
    if (
        type(seq) is not int
        or seq < 0
        or not isinstance(kind, str)
        or not isinstance(last, str)
        or not _HEX8.fullmatch(last.encode())
    ):
        raise CheckpointCorruptError(where, "end marker has malformed fields")
    if raw.get("run") != run_id:
        raise CheckpointCorruptError(where, f"end marker belongs to run {raw.get('run')!r}")
    return EndMarker(run_id, seq, kind, last)


def end_problem(
    marker: EndMarker, last_seq: int, crc_at: str | None, marker_path: str
) -> str | None:
    """Say how a journal whose records end at ``last_seq`` contradicts its end marker, if it does.

    ``crc_at`` is the checksum field of the journal's record at the marker's seq (None if that
    record was not read). A journal longer than its marker is fine: the run went on after it
    paused, or crashed after committing more.
    """
    if last_seq < marker.seq:
        return (
            f"journal ends at seq {last_seq} but its end marker {marker_path} says the run "
            f"reached seq {marker.seq} ({marker.kind}): committed records were cut off its end"
        )
    if crc_at is not None and crc_at != marker.last:
        return (
            f"record seq {marker.seq} has checksum {crc_at} but the end marker {marker_path} "
            f"names checksum {marker.last} ({marker.kind}): the journal's end was rewritten"
        )
    return None


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
        if not stat.S_ISREG(st.st_mode) or st.st_size > _MAX_BYTES:
            raise CheckpointCorruptError(path, "end marker is not a small regular file")
        data = fs.pread(fd, _MAX_BYTES, 0)
    finally:
        fs.close(fd)
    return decode_end(data, path, run_id)


def read_end_marker_first(
    layout: StoreLayout, run_id: str
) -> tuple[EndMarker | None, CheckpointCorruptError | OSError | None]:
    """Read the run's end marker before its journal is read: the marker, or why it could not be.

    A reader checking a journal against its marker reads the marker first: it never names more
    than the journal held when it was written, and a journal only grows, so the journal read
    after it holds at least that much. Read after the journal, a run ending in between (its
    last record, then its marker, committed by another process) would look cut back. The error
    is returned, not raised: the caller raises it once the journal is known to exist.
    """
    try:
        return read_end_marker(layout, run_id), None
    except (CheckpointCorruptError, OSError) as exc:
        return None, exc


def check_end(layout: StoreLayout, run_id: str, last_seq: int, last_crc: str | None) -> None:
    """Refuse a journal whose records end at ``last_seq`` before its end marker.

    ``last_crc`` is the checksum field of the record at ``last_seq``; it is compared when
    the marker names that seq.

    Raises:
        CheckpointCorruptError: the marker is unreadable, or the journal was cut back.
    """
    check_marker(read_end_marker(layout, run_id), layout, run_id, last_seq, last_crc)


def check_marker(
    marker: EndMarker | None,
    layout: StoreLayout,
    run_id: str,
    last_seq: int,
    last_crc: str | None,
) -> None:
    """:func:`check_end` with the run's end marker already read (None: it has none).

    Raises:
        CheckpointCorruptError: the journal was cut back.
    """
    if marker is None:
        return
    crc = last_crc if last_seq == marker.seq else None
    found = end_problem(marker, last_seq, crc, layout.end(run_id))
    if found is not None:
        raise CheckpointCorruptError(layout.journal(run_id), found)


def end_marker_problem(
    read: tuple[EndMarker | None, CheckpointCorruptError | OSError | None],
    layout: StoreLayout,
    run_id: str,
    data: bytes,
    checkpoints: list[Checkpoint],
) -> JournalProblem | None:
    """Say how the run's whole journal (``data``, read as ``checkpoints``) contradicts its marker.

    ``read`` is what :func:`read_end_marker_first` gave before the journal was read. An
    unreadable marker is a problem too; no marker is none.

    Raises:
        OSError: the marker could not be read.
    """
    marker, error = read
    if isinstance(error, CheckpointCorruptError):
        return JournalProblem.from_error(error)
    if error is not None:
        raise error
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
