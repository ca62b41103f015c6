"""Record format versions: new runs write version 4 (BLAKE3 argument digests, records stored
lean, packed, with references, results stored as changes), a run recorded in version 1
(blake2b), 2 or 3 goes on in its version, and a journal mixing versions is refused.

A version 1 or 2 run is made as wfctl wrote it before the next version existed: a run's journal
is rewritten record by record (``rewrite_as_format_version_1``, ``..._2``).
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import blake3
import pytest

from tests.conftest import arun, failure_of
from tests.storage.helpers import ckpt, rewrite_as_format_version_1, rewrite_as_format_version_2
from wfctl import FileCheckpointStorage, step, workflow
from wfctl._errors import CheckpointCorruptError
from wfctl._records._checkpoint import FORMAT_VERSION
from wfctl._records._codec import canonical_json, digest, encode
from wfctl._storage import _journal as journal

_fail = {"on": False}
N = 4


@step
async def echo(i: int) -> int:
    return i * 10


@workflow(name="versioned")
async def versioned(n: int) -> int:
    total = 0
    for i in range(n):
        total += await echo(i)
    if _fail["on"]:
        raise RuntimeError("fail after the first steps")
    return total + await echo(n)  # executed by the resume


def _journal(store: Path, run_id: str) -> Path:
    return store / "runs" / run_id / "journal.jsonl"


def _records(store: Path, run_id: str) -> list[tuple[int, list[dict[str, object]]]]:
    """Each record's format version and step entries, read back from the journal."""
    path = _journal(store, run_id)
    out = []
    for n, line in enumerate(path.read_bytes().splitlines(), 1):
        record = journal.decode_record(line, f"{path}:{n}")
        out.append((record.version, list(record.data.get("steps", []))))
    return out


def _rewrite_as_version_1(store: Path, run_id: str) -> None:
    rewrite_as_format_version_1(_journal(store, run_id), [(i,) for i in range(N + 1)])


def _failed_run(store: Path, wf: Any = versioned) -> str:
    storage = FileCheckpointStorage(store, durability="none")
    _fail["on"] = True
    try:
        with pytest.raises(RuntimeError) as caught:
            arun(wf.build(checkpoint_storage=storage).run(N))
    finally:
        _fail["on"] = False
        storage.close()
    return str(failure_of(caught).run_id)


def test_a_new_run_writes_format_version_4_and_blake3_digests(tmp_path: Path) -> None:
    assert FORMAT_VERSION == 4
    storage = FileCheckpointStorage(tmp_path, durability="none")
    result = arun(versioned.build(checkpoint_storage=storage).run(N))
    storage.close()
    records = _records(tmp_path, result.run_id)
    assert {version for version, _ in records} == {4}
    for line in _journal(tmp_path, result.run_id).read_bytes().splitlines():
        assert b'"seq":' not in line and b'"prev":' not in line  # the id says both
    steps = [entry for _, entries in records for entry in entries]
    assert len(steps) == N + 1
    for i, entry in enumerate(steps):
        canonical = canonical_json(encode([[i], {}])).encode()
        assert entry["digest"] == blake3.blake3(canonical).hexdigest(8)


def test_a_run_recorded_in_version_1_resumes_in_version_1(tmp_path: Path) -> None:
    run_id = _failed_run(tmp_path)
    _rewrite_as_version_1(tmp_path, run_id)
    storage = FileCheckpointStorage(tmp_path, durability="none")
    done = arun(versioned.build(checkpoint_storage=storage).resume(run_id))
    storage.close()
    # Every recorded call matched by its blake2b digest: served, none executed again.
    assert done.status == "completed" and done.result == 10 * sum(range(N + 1))
    assert list(done.cached) == [f"echo#{i}" for i in range(N)]
    assert list(done.executed) == [f"echo#{N}"]
    records = _records(tmp_path, run_id)
    assert {version for version, _ in records} == {1}  # the resume wrote version 1 too
    new_step = records[-2][1]
    assert new_step == [dict(new_step[0], digest=digest((N,), {}, version=1))]


@step
async def grow(text: str) -> str:
    return text + " and more"


@workflow(name="growing")
async def growing(n: int) -> str:
    text = "a value long enough to be stored once, then referred to " * 6
    for _ in range(n):
        text = await grow(text)
    if _fail["on"]:
        raise RuntimeError("fail after the first steps")
    return await grow(text)  # executed by the resume


def test_a_run_recorded_in_version_2_resumes_in_version_2_as_version_2_wrote(
    tmp_path: Path,
) -> None:
    run_id = _failed_run(tmp_path, growing)
    path = _journal(tmp_path, run_id)
    assert path.read_bytes().count(b'"$t":"ref"') == N - 1  # each argument but the first
    rewrite_as_format_version_2(path)
    before = path.read_bytes()
    assert b'"$t":"ref"' not in before and b'"seq":1,"prev":' in before
    storage = FileCheckpointStorage(tmp_path, durability="none")
    done = arun(growing.build(checkpoint_storage=storage).resume(run_id))
    storage.close()
    assert done.status == "completed" and list(done.executed) == [f"grow#{N}"]
    records = _records(tmp_path, run_id)
    assert {version for version, _ in records} == {2}  # the resume wrote version 2 too
    added = path.read_bytes()[len(before) :]
    assert b'"$t":"ref"' not in added and b'"z":' not in added  # nor packed nor referred
    assert added.count(b'"seq":') == 3  # the resume, the step, the end: each in full


def test_a_restore_of_a_version_1_run_is_a_version_1_run(tmp_path: Path) -> None:
    run_id = _failed_run(tmp_path)
    _rewrite_as_version_1(tmp_path, run_id)
    storage = FileCheckpointStorage(tmp_path, durability="none")
    wf = versioned.build(checkpoint_storage=storage)
    restored = arun(wf.run(checkpoint_id=f"{run_id}.2", new_run=True))
    storage.close()
    assert restored.run_id != run_id and restored.status == "completed"
    assert list(restored.cached) == ["echo#0", "echo#1"]  # what the source recorded up to .2
    assert list(restored.executed) == [f"echo#{i}" for i in range(2, N + 1)]
    records = _records(tmp_path, restored.run_id)
    assert {version for version, _ in records} == {1}
    steps = [entry for _, entries in records for entry in entries]
    assert [entry["digest"] for entry in steps] == [
        digest((i,), {}, version=1) for i in range(2, N + 1)
    ]


def _lines(*checkpoints: object) -> list[bytes]:
    return [journal.encode_record(c).rstrip(b"\n") for c in checkpoints]  # type: ignore[arg-type]


def _check(lines: list[bytes]) -> object:
    return journal.check_journal(lines, "j", "r")


def _decode(lines: list[bytes]) -> object:
    return list(journal.decode_chain(lines, "j", "r", {}))


@pytest.mark.parametrize("read", [_check, _decode])
@pytest.mark.parametrize(("root", "other"), [(2, 1), (1, 2), (3, 2), (2, 3), (3, 1)])
def test_a_record_in_another_version_than_its_root_is_corrupt(
    read: Callable[[list[bytes]], object], root: int, other: int
) -> None:
    lines = _lines(
        dataclasses.replace(ckpt("r", 0), version=root),
        dataclasses.replace(ckpt("r", 1), version=other),
    )
    with pytest.raises(CheckpointCorruptError) as caught:
        read(lines)
    assert caught.value.where == "j:2"
    assert f"format version {other}, its run's root in {root}" in str(caught.value)


@pytest.mark.parametrize("version", [FORMAT_VERSION + 1, 0])
def test_a_root_of_an_unknown_version_is_refused_by_every_reader(version: int) -> None:
    lines = _lines(dataclasses.replace(ckpt("r", 0), version=version), ckpt("r", 1))
    expected = (
        f"format version {version} is newer than this wfctl ({FORMAT_VERSION})"
        if version > FORMAT_VERSION
        else f"unknown format version {version}"
    )
    for read in (_check, _decode, lambda lines: journal.decode_record(lines[0], "j:1")):
        with pytest.raises(CheckpointCorruptError, match=re.escape(expected)):
            read(lines)


@pytest.mark.parametrize("version", [1, 2])
def test_a_journal_of_either_version_verifies_without_the_slow_path(
    version: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    lines = _lines(*(dataclasses.replace(ckpt("r", seq), version=version) for seq in range(50)))

    def slow(*args: object) -> None:
        raise AssertionError("a well-formed record took the slow path")

    monkeypatch.setattr(journal, "_check_link", slow)
    assert journal.check_journal(lines, "j", "r") == (lines[0], lines[-1])
    decoded = [c for _, c in journal.decode_chain(lines, "j", "r", {})]
    assert [c.version for c in decoded] == [version] * 50


@pytest.mark.parametrize("version", [1, 2])
def test_a_page_of_a_journal_is_read_from_its_first_seq_in_its_roots_version(
    version: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``check_journal`` and ``decode_chain`` of a page (``start=S, root=ROOT``) read records
    S.. as a whole read does."""
    lines = _lines(*(dataclasses.replace(ckpt("r", seq), version=version) for seq in range(50)))

    def slow(*args: object) -> None:
        raise AssertionError("a well-formed record took the slow path")

    with monkeypatch.context() as patched:
        patched.setattr(journal, "_check_link", slow)
        for start in (1, 17, 49):
            page = lines[start:]
            assert journal.check_journal(page, "j", "r", start=start, root=lines[0]) == (
                page[0],
                page[-1],
            )
            decoded = journal.decode_chain(page, "j", "r", {}, start=start, root=lines[0])
            assert [c.seq for _, c in decoded] == list(range(start, 50))
    for read in (journal.check_journal, lambda *a, **k: list(journal.decode_chain(*a, {}, **k))):
        with pytest.raises(CheckpointCorruptError) as caught:  # a page that starts a seq late
            read(lines[18:30], "j", "r", start=17, root=lines[0])
        assert caught.value.where == "j:18"
    other = 1 if version == 2 else 2
    with pytest.raises(CheckpointCorruptError, match=f"format version {version}, its run's"):
        journal.check_journal(
            lines[17:30],
            "j",
            "r",
            start=17,
            root=_lines(dataclasses.replace(ckpt("r", 0), version=other))[0],
        )
