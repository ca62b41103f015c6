"""A 1 MB step result or argument is stored once, and nothing rebuilds it as text by the way."""

from __future__ import annotations

import asyncio
import base64
import hashlib
from collections.abc import Iterator
from pathlib import Path

import pytest

from wfctl import FileCheckpointStorage, step, workflow
from wfctl._records import _refs

MB = 1_000_000


@step
async def blob(i: int) -> str:
    # Incompressible (base64 of a hash chain): what is stored is the value, not a frame of it.
    return f"{i:04d}" + base64.b64encode(b"".join(_chain(i, MB // 64))[: MB * 3 // 4]).decode()


def _chain(seed: int, count: int) -> Iterator[bytes]:
    digest = hashlib.sha512(b"%d" % seed).digest()
    for _ in range(count):
        digest = hashlib.sha512(digest).digest()
        yield digest


@step
async def measure(text: str) -> int:
    return len(text)


@workflow(name="big_payloads")
async def big_flow(n: int) -> int:
    total = 0
    for i in range(n):
        total += await measure(await blob(i))
    return total


def test_a_result_with_big_values_has_a_short_repr(tmp_path: Path) -> None:
    """asyncio.run() builds the repr of what it returns (its SIGINT handler's task shows it)."""
    storage = FileCheckpointStorage(tmp_path / "store")
    result = asyncio.run(big_flow.build(checkpoint_storage=storage).run(3))
    assert result.status == "completed" and result.result == 3 * (MB + 4)
    shown = repr(result)
    assert len(shown) < 300, shown[:300]
    assert f"run_id={result.run_id!r}" in shown and "status='completed'" in shown


def test_each_big_value_is_stored_once(tmp_path: Path) -> None:
    """Each 1 MB is in the journal once: as blob's result; measure's argument, the same value,
    is a reference to it (format version 3)."""
    storage = FileCheckpointStorage(tmp_path / "store")
    result = asyncio.run(big_flow.build(checkpoint_storage=storage).run(2))
    storage.close()
    journal = tmp_path / "store" / "runs" / result.run_id / "journal.jsonl"
    size = journal.stat().st_size
    assert 2 * MB < size < 2 * MB + 8_000
    assert journal.read_bytes().count(b'{"$t":"ref","v":[') == 2


@step
async def keep(text: str, other: str) -> str:
    return other[:4] + text[4:]


@workflow(name="big_held")
async def big_held(n: int) -> str:
    first = await blob(0)
    last = first
    for i in range(1, n):
        last = await keep(first, await blob(i))  # ``first``: from more and more records back
    return last[:4]


def test_results_let_go_by_the_writer_are_stored_whole_and_read_back(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The writer holds at most HELD_MAX of results (the newest aside): an argument equal to
    a result it let go is stored whole, never as a reference a reader could not resolve."""
    monkeypatch.setattr(_refs, "HELD_MAX", 2 * MB + MB // 2)  # two blobs and a bit
    storage = FileCheckpointStorage(tmp_path / "store")
    result = asyncio.run(big_held.build(checkpoint_storage=storage).run(4))
    storage.close()
    assert result.status == "completed"
    journal = (tmp_path / "store" / "runs" / result.run_id / "journal.jsonl").read_bytes()
    # keep#1 refers to blob#0 and blob#1; by keep#2, blob#0 was let go: whole from then on
    assert journal.count(b'{"$t":"ref","v":[') == 2 + 1 + 1
    firsts = [
        record["args"][0]
        for checkpoint in asyncio.run(storage.load_chain(result.run_id))
        for record in checkpoint.data.get("steps", ())
        if record["key"].startswith("keep")
    ]
    assert firsts == [asyncio.run(blob.__wrapped__(0))] * 3  # type: ignore[attr-defined]
