"""A record's big data stored compressed: packed when that is shorter, opened only when its
frame states its size, and zstd imported only when a record needs it."""

from __future__ import annotations

import base64
import contextlib
import os
import subprocess
import sys
import threading

import pytest
import zstandard

from wfctl._errors import CheckpointCorruptError
from wfctl._records import _packing
from wfctl._records._packing import PACK_FROM, pack, pack_against, unpack

PROSE = b'{"text":"' + b"a sentence that repeats, as prose half does. " * 200 + b'"}'


def test_data_of_1_kb_or_more_is_packed_when_that_is_shorter() -> None:
    packed = pack(PROSE)
    assert packed is not None
    assert len(packed) < len(PROSE) // 10
    assert unpack(packed.decode(), "t") == PROSE
    assert pack(PROSE[: PACK_FROM - 1]) is None  # too short to be worth a frame
    noise = b'"' + base64.b64encode(os.urandom(3000)) + b'"'
    assert pack(noise) is None  # random text packs no shorter: stored as it is


def test_a_big_value_that_does_not_compress_is_told_by_a_slice(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    noise = b'"' + base64.b64encode(os.urandom(300_000)) + b'"'
    sizes: list[int] = []
    compressor = _packing._zstd()[0]

    class Counting:
        def compress(self, data: bytes) -> bytes:
            sizes.append(len(data))
            return compressor.compress(data)

    monkeypatch.setattr(_packing, "_zstd", lambda: (Counting(), None))
    assert pack(noise) is None
    assert sizes == [_packing._PROBE]  # the slice alone: the whole was never compressed
    assert pack(b"x" * 300_000) is not None


@pytest.mark.parametrize(
    ("packed", "reason"),
    [
        (12, "packed data is not text"),
        ("not base64!", "packed data is not base64"),
        (base64.b64encode(b"not a frame at all").decode(), "packed data is not a zstd frame"),
        (
            base64.b64encode(
                zstandard.ZstdCompressor(write_content_size=False).compress(PROSE)
            ).decode(),
            "packed data states no size wfctl writes (-1)",
        ),
    ],
)
def test_a_damaged_frame_is_corrupt(packed: object, reason: str) -> None:
    with pytest.raises(CheckpointCorruptError) as caught:
        unpack(packed, "j:3")
    assert caught.value.where == "j:3" and caught.value.reason.startswith(reason)


def test_a_frame_stating_more_than_wfctl_writes_is_refused_before_it_is_opened(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    packed = pack(PROSE)
    assert packed is not None
    monkeypatch.setattr(_packing, "MAX_UNPACKED", len(PROSE) - 1)
    with pytest.raises(CheckpointCorruptError, match="states no size wfctl writes"):
        unpack(packed.decode(), "t")


def test_a_frame_cut_short_is_corrupt() -> None:
    packed = pack(PROSE)
    assert packed is not None
    frame = base64.b64decode(packed)
    cut = base64.b64encode(frame[: len(frame) - 8]).decode()
    with pytest.raises(CheckpointCorruptError, match="packed data"):
        unpack(cut, "t")


def test_zstd_is_imported_only_by_a_record_that_needs_it() -> None:
    probe = (
        "import sys, wfctl, wfctl._cli, wfctl._storage._journal;print('zstandard' in sys.modules)"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "False"


def test_each_thread_packs_and_unpacks_with_its_own_zstd() -> None:
    # python-zstandard's objects are not thread safe; ``wfctl ui`` reads runs in several
    # threads at once. Both threads hold theirs while the other takes its own.
    both_taken = threading.Barrier(2)
    taken: list[tuple[object, object]] = []

    def take() -> None:
        taken.append(_packing._zstd())
        both_taken.wait(timeout=30)

    threads = [threading.Thread(target=take) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    (compressor, decompressor), (other_compressor, other_decompressor) = taken
    assert compressor is not other_compressor and decompressor is not other_decompressor
    assert _packing._zstd() is _packing._zstd()  # one thread's are made once


#: Four threads unpack the same frames at once, as the ``ui`` listing and its pages do.
_CONCURRENT_UNPACKS = """
import json, random, threading
from wfctl._records._packing import pack, unpack
random.seed(1)
values = [json.dumps("".join(random.choice("ab") for _ in range(n))).encode()
          for n in range(1500, 3000, 7)]
frames = [pack(value).decode() for value in values]
wrong = []
def read():
    for _ in range(20):
        for i, frame in enumerate(frames):
            try:
                if unpack(frame, "t") != values[i]:
                    wrong.append(i)
            except Exception:  # a shared decompressor: "Data corruption detected"
                wrong.append(i)
threads = [threading.Thread(target=read) for _ in range(4)]
for thread in threads: thread.start()
for thread in threads: thread.join()
print(len(wrong))
"""


def test_threads_unpacking_at_once_read_each_frame_as_written() -> None:
    # One shared decompressor crashed this process (SIGSEGV) or found good frames corrupt.
    done = subprocess.run(
        [sys.executable, "-c", _CONCURRENT_UNPACKS], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "0"


def test_a_change_read_against_another_text_or_altered_fails_not_misreads() -> None:
    # A frame made with a dictionary holds its content's checksum: read against another text
    # of the same size, or with one character of its base64 changed, it is corrupt, where
    # without it zstd gave a text of the stated size.
    text = "Every value is stored once; big data is stored compressed. " * 60
    changed = text.replace("once", "twice", 1)
    packed = pack_against(changed.encode(), text.encode())
    assert packed is not None
    assert unpack(packed.decode(), "t", text.encode()) == changed.encode()
    other = text.replace("big", "old")
    with pytest.raises(CheckpointCorruptError, match="checksum"):
        unpack(packed.decode(), "t", other.encode())
    misread = 0
    for at in range(len(packed) // 2, len(packed) - 4):
        altered = packed[:at] + (b"A" if packed[at : at + 1] != b"A" else b"B") + packed[at + 1 :]
        with contextlib.suppress(CheckpointCorruptError):
            misread += unpack(altered.decode(), "t", text.encode()) != changed.encode()
    assert misread == 0
