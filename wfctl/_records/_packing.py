"""A record's ``data`` compressed on disk: zstd, then base64, in the record's ``z`` field.

From format version 3 a record whose ``data`` encodes to :data:`PACK_FROM` bytes or more is
stored as ``"z": "<base64 of the zstd frame of that JSON>"`` in place of ``"data"``, when that
is smaller. The record's checksum covers the line as stored, so a damaged frame is found before
it is opened; opening one never runs anything, and a frame that says it holds more than
:data:`MAX_UNPACKED` bytes, or holds other than it says, is refused as corrupt.
"""

from __future__ import annotations

import base64
import binascii
import threading
from typing import TYPE_CHECKING, Final

from wfctl._errors import CheckpointCorruptError

if TYPE_CHECKING:
    import zstandard

__all__ = ["MAX_UNPACKED", "PACK_FROM", "pack", "pack_against", "unpack"]

#: ``data`` of fewer bytes is stored as it is: below about 1 KB, zstd's frame and base64's
#: third eat what compression saves, and each record would pay ~10 us for nothing.
PACK_FROM: Final = 1024
#: zstd's level: 3, its default, takes ~30 us a 12 KB record here and keeps within 5% of
#: level 6's size at a third of its CPU (docs/decisions/0189-big-record-data-is-stored-compressed.md).
LEVEL: Final = 3
#: How much of a big record's data is compressed first, to see whether the rest is worth it.
_PROBE: Final = 64 * 1024
#: The most a packed ``data`` may unpack to: what a frame says beyond it is a damaged or
#: hostile record, not something to allocate.
MAX_UNPACKED: Final = 1 << 31


class _PerThread(threading.local):
    """zstd's compressor and decompressor of one thread. python-zstandard's objects are not
    thread safe: two threads in one decompressor read each other's frames or crash the process,
    and ``wfctl ui`` reads runs in its listing thread and its request threads at once."""

    zstd: tuple[zstandard.ZstdCompressor, zstandard.ZstdDecompressor] | None = None


_per_thread: Final = _PerThread()


def _zstd() -> tuple[zstandard.ZstdCompressor, zstandard.ZstdDecompressor]:
    """This thread's zstd compressor and decompressor, made at its first record of 1 KB or more:
    imported then, not by every command (7 ms, a command that meets no such record never pays)."""
    made = _per_thread.zstd
    if made is None:
        import zstandard

        made = _per_thread.zstd = (
            zstandard.ZstdCompressor(level=LEVEL, write_content_size=True),
            zstandard.ZstdDecompressor(),
        )
    return made


def pack(data: bytes | memoryview) -> bytes | None:
    """Return ``data`` (a record's JSON ``data``) as the base64 text of its zstd frame, or None
    when it is shorter than :data:`PACK_FROM` or would not get smaller."""
    if len(data) < PACK_FROM:
        return None
    compressor = _zstd()[0]
    if len(data) > 2 * _PROBE:
        # A big value that does not compress (random bytes, data compressed already) would cost
        # a whole attempt, 3.7 ms a MB: a slice of it says first (base64 takes a third back).
        middle = len(data) // 2
        if len(compressor.compress(data[middle : middle + _PROBE])) * 4 > _PROBE * 3:
            return None
    packed = base64.b64encode(compressor.compress(data))
    return packed if len(packed) + 6 < len(data) else None


def pack_against(data: bytes, dictionary: bytes) -> bytes | None:
    """Return ``data`` as the base64 text of its zstd frame made with ``dictionary`` (raw
    content: what the frame may copy from), or None when that is not smaller than ``data``.

    A text that differs from the dictionary in a sentence packs to a few hundred bytes.
    """
    import zstandard

    # Tables sized for these two inputs, not for a stream of unknown size: ~35 us for 8 KB
    # against 8 KB, where the level's own tables take ~190 us to set up. The frame holds its
    # content's checksum (4 bytes): read against any other text than it was made with, or
    # changed, it fails instead of giving a text of the same size (decision 0197).
    params = zstandard.ZstdCompressionParameters.from_level(
        LEVEL,
        source_size=len(data),
        dict_size=len(dictionary),
        write_content_size=True,
        write_checksum=True,
    )
    made = zstandard.ZstdCompressionDict(dictionary, dict_type=zstandard.DICT_TYPE_RAWCONTENT)
    made.precompute_compress(compression_params=params)
    compressor = zstandard.ZstdCompressor(dict_data=made, compression_params=params)
    packed = base64.b64encode(compressor.compress(data))
    return packed if len(packed) + 6 < len(data) else None


def unpack(packed: object, where: str, dictionary: bytes | None = None) -> bytes:
    """Return the JSON bytes a record's ``z`` field packs.

    ``dictionary``: what the frame was made with (:func:`pack_against`), if it was.

    Raises:
        CheckpointCorruptError: ``z`` is not base64 text of one zstd frame whose stated size is
            at most :data:`MAX_UNPACKED` and which holds exactly that many bytes.
    """
    if not isinstance(packed, str):
        raise CheckpointCorruptError(where, "packed data is not text")
    try:
        frame = base64.b64decode(packed, validate=True)
    except (binascii.Error, ValueError):
        raise CheckpointCorruptError(where, "packed data is not base64") from None
    import zstandard

    try:
        size = zstandard.frame_content_size(frame)
    except zstandard.ZstdError:
        raise CheckpointCorruptError(where, "packed data is not a zstd frame") from None
    if size < 0 or size > MAX_UNPACKED:
        raise CheckpointCorruptError(where, f"packed data states no size wfctl writes ({size})")
    decompressor = (
        _zstd()[1]
        if dictionary is None
        else zstandard.ZstdDecompressor(
            dict_data=zstandard.ZstdCompressionDict(
                dictionary, dict_type=zstandard.DICT_TYPE_RAWCONTENT
            )
        )
    )
    try:
        data = decompressor.decompress(frame, max_output_size=size)
    except zstandard.ZstdError as exc:
        raise CheckpointCorruptError(where, f"packed data does not unpack: {exc}") from None
    if len(data) != size:
        raise CheckpointCorruptError(where, "packed data holds other than its stated size")
    return data
