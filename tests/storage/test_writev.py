"""A record reaches the kernel as its buffers, in one ``writev``, never joined into one copy.

Internals on purpose: the seam (``wfctl._storage._fs``) and the record encoder are what keep a
big payload from being copied on its way to the disk, and only they can show it.
"""

from __future__ import annotations

import base64
import errno
import os
from collections.abc import Sequence
from pathlib import Path

import pytest

from tests.harness.faulty_fs import Fault, FaultyFS
from tests.storage.helpers import arun, build_run, ckpt
from wfctl._storage import FileCheckpointStorage
from wfctl._storage._fs import OsFileSystem, writev_all
from wfctl._storage._journal import encode_record, encode_record_parts

MB = 1_000_000


class ShortFS(OsFileSystem):
    """Stores at most the next of ``limits`` bytes per call (0 after they run out)."""

    def __init__(self, limits: list[int]) -> None:
        self.limits = limits
        self.calls: list[list[bytes]] = []  # what each call was given, as bytes

    def _store(self, fd: int, data: bytes) -> int:
        limit = self.limits.pop(0) if self.limits else 0
        return os.write(fd, data[:limit]) if limit else 0

    def write(self, fd: int, data: bytes | memoryview) -> int:
        self.calls.append([bytes(data)])
        return self._store(fd, bytes(data))

    def writev(self, fd: int, buffers: Sequence[bytes | memoryview]) -> int:
        self.calls.append([bytes(b) for b in buffers])
        return self._store(fd, b"".join(buffers))


@pytest.mark.parametrize("limits", [[3, 2, 100], [5, 1, 1, 100], [10, 100], [100]])
def test_writev_all_goes_on_after_short_writes_cut_inside_or_between_parts(
    tmp_path: Path, limits: list[int]
) -> None:
    parts = [b"abcde", memoryview(b"fghij"), b"", b"klmno"]
    fs = ShortFS(list(limits))
    fd = os.open(tmp_path / "f", os.O_WRONLY | os.O_CREAT | os.O_APPEND)
    try:
        writev_all(fs, fd, parts, "f")
    finally:
        os.close(fd)
    assert (tmp_path / "f").read_bytes() == b"abcdefghijklmno"
    done = 0
    for call, limit in zip(fs.calls, limits, strict=False):
        assert b"".join(call) == b"abcdefghijklmno"[done:]  # exactly the rest, each time
        done += limit


def test_a_writev_that_stores_nothing_is_a_full_disk(tmp_path: Path) -> None:
    fd = os.open(tmp_path / "f", os.O_WRONLY | os.O_CREAT | os.O_APPEND)
    try:
        with pytest.raises(OSError, match="No space left") as caught:
            writev_all(ShortFS([2]), fd, [b"abc", b"def"], "named")
    finally:
        os.close(fd)
    assert (caught.value.errno, caught.value.filename) == (errno.ENOSPC, "named")


def test_a_big_record_is_written_from_its_encoded_body_without_a_copy(tmp_path: Path) -> None:
    fs = ShortFS([1 << 40] * 10)  # records every call; stores everything
    storage = FileCheckpointStorage(tmp_path / "store", fs=fs)
    arun(build_run(storage, "r1", 1))
    fs.calls.clear()
    # Incompressible: a big record stored as encoded (one that compresses is stored packed).
    big = ckpt("r1", 1, data={"result": base64.b64encode(os.urandom(MB)).decode()})

    received: list[Sequence[bytes | memoryview]] = []
    original = fs.writev

    def keep(fd: int, buffers: Sequence[bytes | memoryview]) -> int:
        received.append(list(buffers))
        return original(fd, buffers)

    fs.writev = keep  # type: ignore[method-assign]  # watch the buffers themselves
    arun(storage.save(big))
    storage.close()
    assert len(received) == 1 and len(fs.calls) == 1  # one writev, no write beside it
    body, trailer = received[0]
    assert isinstance(body, memoryview) and len(body) > MB  # the encoder's output, not a join
    assert bytes(trailer).startswith(b',"crc":"') and len(trailer) == 19
    journal = (tmp_path / "store" / "runs" / "r1" / "journal.jsonl").read_bytes()
    assert journal.endswith(encode_record(big))
    assert b"".join(encode_record_parts(big)) == encode_record(big)


@pytest.mark.parametrize("effect", ["short", "partial-raise", "full-raise", "enospc"])
def test_a_faulty_writev_of_a_big_record_leaves_no_part_of_it(tmp_path: Path, effect: str) -> None:
    """A writev that stops part way is handled as a write would be: finished, or cut off."""
    fs = FaultyFS(7, [Fault("write", effect, 2)])  # the record after the root and step 1
    storage = FileCheckpointStorage(tmp_path / "store", fs=fs)
    arun(build_run(storage, "r1", 2))
    big = ckpt("r1", 2, data={"result": "y" * MB})
    if effect == "short":
        arun(storage.save(big))  # the rest is written by the next call
    else:
        with pytest.raises(OSError, match="injected"):
            arun(storage.save(big))
    storage.close()
    assert fs.injected == [f"write:{effect}@2/once#2"]
    journal = arun(FileCheckpointStorage(tmp_path / "store").read_run("r1"))
    assert (journal.torn_tail, journal.problems) == (0, ())
    assert [c.seq for c in journal.checkpoints] == ([0, 1, 2] if effect == "short" else [0, 1])
