"""What a 1 MB value costs a step, counted: one encode, one checksum, one hash, no read back.

Internals on purpose: the encoder (orjson), the checksum (``_journal._crc32``), the digest's hash
(BLAKE3, or ``hashlib.blake2b`` in a run of format version 1) and the decoders are wrapped to record every call whose input or output
is big, so a second pass over a payload (a re-encode, a join, a decode of what was just
written) fails here rather than only in a benchmark.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import zlib
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson
import pytest
from hypothesis import given
from hypothesis import strategies as st

import wfctl._records._codec as codec
import wfctl._storage._journal as journal
from tests.storage.helpers import ckpt
from wfctl import FileCheckpointStorage, step, workflow

MB = 1_000_000


@step
async def produce(i: int) -> str:
    return f"{i:04d}" + "é" * (MB // 2)  # non-ASCII: 1 MB of UTF-8


@step
async def consume(text: str) -> int:
    return len(text)


@step(record_args=False)
async def consume_unrecorded(text: str) -> int:
    return len(text)


@step
async def small(i: int) -> int:
    return i


@workflow(name="big_payload_work")
async def work_flow(n: int) -> int:
    total = 0
    for i in range(n):
        text = await produce(i)
        total += await consume(text) + await consume_unrecorded(text)
        total += await small(i)  # the run's head is a small record
    return total


def _big(value: object) -> bool:
    return isinstance(value, bytes | bytearray | memoryview | str) and len(value) >= MB


class _Calls:
    """Counts the calls of wrapped functions that saw a big input or gave a big output."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.big: Counter[str] = Counter()
        self.inputs: dict[str, list[object]] = {}
        self._patch = monkeypatch

    def wrap(self, owner: object, name: str, label: str) -> None:
        original: Callable[..., Any] = getattr(owner, name)

        def counted(*args: Any, **kwargs: Any) -> Any:
            out = original(*args, **kwargs)
            if any(_big(a) for a in args) or _big(out):
                self.big[label] += 1
                self.inputs.setdefault(label, []).append(args[0] if args else None)
            return out

        self._patch.setattr(owner, name, counted)


def test_each_big_value_is_encoded_checksummed_and_hashed_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls = _Calls(monkeypatch)
    calls.wrap(orjson, "dumps", "encode")
    calls.wrap(journal, "_crc32", "crc32")
    calls.wrap(journal, "_stdlib_body", "stdlib encode")
    codec._load_blake3()  # imported by the first digest: wrap the function it keeps
    calls.wrap(codec, "_blake3", "hash")
    calls.wrap(hashlib, "blake2b", "version 1 hash")
    calls.wrap(orjson, "loads", "decode")
    calls.wrap(json, "loads", "decode")
    calls.wrap(zlib, "crc32", "zlib crc32")
    storage = FileCheckpointStorage(tmp_path / "store", durability="none")
    n = 2
    result = asyncio.run(work_flow.build(checkpoint_storage=storage).run(n))
    storage.close()
    assert result.status == "completed"
    # Per round: produce's record (its result) and the two digests of the argument (consume's
    # and consume_unrecorded's), each encoded once. consume's record holds a reference to
    # produce's result, and produce's record is stored compressed: no checksum sees 1 MB.
    assert calls.big == {
        "encode": 3 * n,  # 1 record holding the value + 2 digests' canonical text
        "hash": 2 * n,  # one hash per digest (BLAKE3: a new run is in format version 3)
    }


def test_a_record_is_checksummed_once_over_its_encoded_body(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    seen: list[object] = []
    fast = journal._crc32

    def crc(data: Any, value: int = 0) -> int:
        seen.append(data)
        return fast(data, value)

    monkeypatch.setattr(journal, "_crc32", crc)
    body, trailer = journal.encode_record_parts(ckpt("r1", 1, data={"result": "ü" * MB}))
    assert len(seen) == 1 and seen[0] is body.obj  # the encoder's buffer, in place
    assert trailer == b',"crc":"%08x"}\n' % zlib.crc32(body.obj)


@given(st.binary(max_size=3000), st.integers(min_value=0, max_value=2**32 - 1))
def test_the_record_checksum_is_zlibs_crc32(data: bytes, start: int) -> None:
    assert journal._crc32(data, start) == zlib.crc32(data, start)
    assert journal._crc32(data) == zlib.crc32(data)


@pytest.mark.parametrize("size", [MB - 1, MB, 3 * MB + 7])
def test_the_record_checksum_is_zlibs_crc32_on_big_buffers(size: int) -> None:
    data = bytes(range(256)) * (size // 256) + b"\xff" * (size % 256)
    assert journal._crc32(data) == zlib.crc32(data)
    assert journal._crc32(memoryview(data)[1:]) == zlib.crc32(memoryview(data)[1:])
