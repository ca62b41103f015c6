"""The file storage's journal (SPEC §5): format, torn tails, corruption, links, permissions.

These tests read and edit journal files directly, and use ``wfctl._storage._journal`` (an
internal) to build records of a future format version, which no public API can write.
"""

from __future__ import annotations

import dataclasses
import datetime
import errno
import json
import os
import stat
import zlib
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.storage.helpers import arun, build_run, ckpt
from wfctl._errors import CheckpointCorruptError
from wfctl._records._checkpoint import FORMAT_VERSION, Checkpoint
from wfctl._records._packing import unpack
from wfctl._storage import FileCheckpointStorage
from wfctl._storage._journal import decode_record, encode_record


def journal_of(storage: FileCheckpointStorage, run_id: str = "r1") -> Path:
    return storage.root / "runs" / run_id / "journal.jsonl"


def test_each_line_is_json_with_its_checksum_last(file_storage: Any) -> None:
    arun(build_run(file_storage, "r1", 3))
    arun(file_storage.save(ckpt("r1", 3, data={"text": "héllo"})))
    raw = journal_of(file_storage).read_bytes()
    assert raw.endswith(b"\n")
    assert "héllo".encode() in raw  # UTF-8, not \u escapes: people read these files
    lines = raw.split(b"\n")[:-1]
    assert len(lines) == 4
    for seq, line in enumerate(lines):
        record = json.loads(line)
        assert list(record)[-1] == "crc"
        assert record["v"] == FORMAT_VERSION == 4
        assert "seq" not in record and "prev" not in record  # the id says both
        assert record["id"] == f"r1.{seq}"
        body = line[: -len(b',"crc":"00000000"}')] + b"}"
        assert record["crc"] == f"{zlib.crc32(body):08x}"


def test_constructing_and_reading_an_empty_store_writes_nothing(tmp_path: Path) -> None:
    storage = FileCheckpointStorage(tmp_path / "store")
    assert arun(storage.list_runs()) == []
    assert arun(storage.list_checkpoints()) == []
    assert arun(storage.get_latest()) is None
    assert storage.pause_requested("r1") is False
    assert not (tmp_path / "store").exists()
    assert storage.durable is True
    assert storage.root == tmp_path / "store"


def test_a_torn_tail_is_uncommitted_and_truncated_by_the_next_save(tmp_path: Path) -> None:
    writer = FileCheckpointStorage(tmp_path / "store")
    arun(build_run(writer, "r1", 3))
    writer.close()
    path = journal_of(writer)
    clean = path.read_bytes()
    torn = encode_record(ckpt("r1", 3))[:40]  # a crash in the middle of a write
    with path.open("ab") as f:
        f.write(torn)

    reader = FileCheckpointStorage(tmp_path / "store")  # as a new process would
    journal = arun(reader.read_run("r1"))
    assert journal.torn_tail == len(torn)
    assert journal.problems == ()
    assert [c.seq for c in journal.checkpoints] == [0, 1, 2]
    assert [c.seq for c in arun(reader.load_chain("r1"))] == [0, 1, 2]
    head = arun(reader.get_latest(run_id="r1"))
    assert head is not None
    assert head.seq == 2

    after = ckpt("r1", 3, data={"after": "crash"})
    arun(reader.save(after))
    assert path.read_bytes() == clean + encode_record(after)
    journal = arun(reader.read_run("r1"))
    assert journal.torn_tail == 0
    assert journal.problems == ()
    assert [c.seq for c in journal.checkpoints] == [0, 1, 2, 3]
    reader.close()


def test_a_tail_of_nul_bytes_is_torn_too(tmp_path: Path) -> None:
    storage = FileCheckpointStorage(tmp_path / "store")
    arun(build_run(storage, "r1", 2))
    storage.close()
    with journal_of(storage).open("ab") as f:
        f.write(b"\0" * 4096)  # what some file systems leave after a crash
    journal = arun(storage.read_run("r1"))
    assert journal.torn_tail == 4096
    assert journal.problems == ()
    arun(storage.save(ckpt("r1", 2)))
    assert b"\0" not in journal_of(storage).read_bytes()
    storage.close()


def _flip_byte_in_line(path: Path, lineno: int, needle: bytes, replacement: bytes) -> None:
    lines = path.read_bytes().split(b"\n")
    assert needle in lines[lineno - 1]
    lines[lineno - 1] = lines[lineno - 1].replace(needle, replacement, 1)
    path.write_bytes(b"\n".join(lines))


def test_mid_file_corruption_is_named_by_file_and_line(file_storage: Any) -> None:
    arun(build_run(file_storage, "r1", 4))
    path = journal_of(file_storage)
    _flip_byte_in_line(path, 2, b'"n":1', b'"n":7')

    journal = arun(file_storage.read_run("r1"))
    [problem] = journal.problems
    assert (problem.where, problem.line) == (f"{path}:2", 2)
    assert problem.reason.startswith("checksum mismatch")
    assert str(problem) == f"{path}:2: {problem.reason}"
    assert [c.seq for c in journal.checkpoints] == [0, 2, 3]  # file order, the bad one named
    with pytest.raises(CheckpointCorruptError) as info:
        arun(file_storage.load_chain("r1"))
    assert info.value.where == f"{path}:2"
    with pytest.raises(CheckpointCorruptError):
        arun(file_storage.load("r1.0"))  # restore reads strictly
    with pytest.raises(CheckpointCorruptError):
        arun(file_storage.list_checkpoints())
    head = arun(file_storage.get_latest(run_id="r1"))
    assert head is not None
    assert head.seq == 3
    [summary] = arun(file_storage.list_runs())  # it verifies every record, not just the ends
    assert summary.status == "corrupt"
    assert summary.problem is not None and summary.problem.startswith(f"{path}:2: checksum")


def test_a_corrupt_last_line_is_never_skipped_for_an_older_one(tmp_path: Path) -> None:
    storage = FileCheckpointStorage(tmp_path / "store")
    arun(build_run(storage, "r1", 4, workflow="alpha", minute=1))
    arun(build_run(storage, "r2", 2, workflow="beta", minute=2))
    storage.close()
    path = journal_of(storage)
    _flip_byte_in_line(path, 4, b'"n":3', b'"n":9')

    with pytest.raises(CheckpointCorruptError):
        arun(storage.get_latest(run_id="r1"))
    with pytest.raises(CheckpointCorruptError):
        arun(storage.get_latest(workflow_name="alpha"))
    with pytest.raises(CheckpointCorruptError):
        arun(storage.get_latest())
    beta = arun(storage.get_latest(workflow_name="beta"))  # r1's root says it is alpha's
    assert beta is not None
    assert beta.run_id == "r2"
    runs = {r.run_id: r for r in arun(storage.list_runs())}
    assert runs["r1"].status == "corrupt"
    assert "checksum" in str(runs["r1"].problem)
    assert runs["r1"].workflow_name == "alpha"
    assert runs["r2"].status == "interrupted"
    with pytest.raises(CheckpointCorruptError):
        arun(storage.save(ckpt("r1", 4)))  # never append after a head that cannot be trusted
    with pytest.raises(CheckpointCorruptError):
        arun(storage.save(ckpt("r1", 3)))


def test_an_edited_record_without_checksum_is_named(file_storage: Any) -> None:
    arun(build_run(file_storage, "r1", 3))
    path = journal_of(file_storage)
    lines = path.read_bytes().split(b"\n")
    lines[1] = json.dumps(ckpt("r1", 1).to_dict()).encode()  # hand-written, no crc
    path.write_bytes(b"\n".join(lines))
    journal = arun(file_storage.read_run("r1"))
    assert len(journal.problems) == 1
    assert (journal.problems[0].where, journal.problems[0].line) == (f"{path}:2", 2)
    assert "no checksum" in journal.problems[0].reason


def test_a_record_from_another_run_is_a_problem(file_storage: Any) -> None:
    arun(build_run(file_storage, "r1", 2))
    arun(build_run(file_storage, "r2", 2))
    stray = journal_of(file_storage, "r2").read_bytes().split(b"\n")[1]
    with journal_of(file_storage).open("ab") as f:
        f.write(stray + b"\n")
    journal = arun(file_storage.read_run("r1"))
    assert journal.problems
    assert "belongs to run 'r2'" in journal.problems[0].reason
    assert journal.problems[0].line == 3


def test_a_future_format_version_is_refused(file_storage: Any) -> None:
    arun(build_run(file_storage, "r1", 2))
    future = Checkpoint(**{**_fields(ckpt("r1", 2)), "version": FORMAT_VERSION + 1})
    with journal_of(file_storage).open("ab") as f:
        f.write(encode_record(future))
    with pytest.raises(CheckpointCorruptError, match="newer than this wfctl"):
        arun(file_storage.load_chain("r1"))
    with pytest.raises(CheckpointCorruptError, match="newer than this wfctl"):
        arun(file_storage.get_latest(run_id="r1"))
    assert "newer" in arun(file_storage.read_run("r1")).problems[0].reason


def test_a_journal_replaced_by_a_symlink_is_not_followed(file_storage: Any, tmp_path: Path) -> None:
    arun(build_run(file_storage, "r1", 2))
    file_storage.close()
    path = journal_of(file_storage)
    elsewhere = tmp_path / "elsewhere.jsonl"
    path.rename(elsewhere)
    path.symlink_to(elsewhere)
    with pytest.raises(CheckpointCorruptError, match="symbolic link"):
        arun(file_storage.load_chain("r1"))
    with pytest.raises(CheckpointCorruptError, match="symbolic link"):
        arun(file_storage.get_latest(run_id="r1"))
    with pytest.raises(CheckpointCorruptError, match="symbolic link"):
        arun(file_storage.save(ckpt("r1", 2)))
    journal = arun(file_storage.read_run("r1"))
    assert journal.checkpoints == ()
    assert "symbolic link" in journal.problems[0].reason
    assert journal.problems[0].line is None  # the journal, not one of its records
    [summary] = arun(file_storage.list_runs())
    assert summary.status == "corrupt"
    assert elsewhere.read_bytes().count(b"\n") == 2  # untouched


def test_a_symlinked_run_directory_is_not_followed(file_storage: Any, tmp_path: Path) -> None:
    arun(build_run(file_storage, "r1", 2))
    file_storage.close()
    run_dir = file_storage.root / "runs" / "r1"
    run_dir.rename(tmp_path / "moved")
    run_dir.symlink_to(tmp_path / "moved", target_is_directory=True)
    with pytest.raises(CheckpointCorruptError, match="symbolic link"):
        arun(file_storage.load_chain("r1"))
    with pytest.raises(CheckpointCorruptError, match="symbolic link"):
        arun(file_storage.save(ckpt("r1", 2)))
    assert arun(file_storage.delete_run("r1")) is True  # removes the link, not its target
    assert (tmp_path / "moved" / "journal.jsonl").exists()


def test_a_file_in_a_run_directory_s_place_is_corrupt_and_removable(file_storage: Any) -> None:
    arun(build_run(file_storage, "r1", 2))
    stray = file_storage.root / "runs" / "r2"
    stray.write_bytes(b"not a run\n")
    with pytest.raises(CheckpointCorruptError, match="file, not a directory"):
        arun(file_storage.load_chain("r2"))
    with pytest.raises(CheckpointCorruptError, match="file, not a directory"):
        arun(file_storage.save(ckpt("r2", 1)))
    journal = arun(file_storage.read_run("r2"))
    assert journal.checkpoints == ()
    assert "file, not a directory" in journal.problems[0].reason
    listed = {summary.run_id: summary.status for summary in arun(file_storage.list_runs())}
    assert listed == {"r1": "interrupted", "r2": "corrupt"}
    assert arun(file_storage.delete_run("r2")) is True
    assert not stray.exists()
    assert [summary.run_id for summary in arun(file_storage.list_runs())] == ["r1"]


def test_records_and_torn_tails_longer_than_the_tail_window(file_storage: Any) -> None:
    big = "é" * 100_000  # 200 KB of UTF-8 per record, beyond the 64 KiB first read
    arun(file_storage.save(ckpt("r1", 0, data={"big": big})))
    arun(file_storage.save(ckpt("r1", 1, data={"big": big + "!"})))
    head = arun(file_storage.get_latest(run_id="r1"))
    assert head is not None
    assert head.data == {"big": big + "!"}
    [summary] = arun(file_storage.list_runs())
    assert (summary.created, summary.head_seq) == (ckpt("r1", 0).timestamp, 1)
    file_storage.close()
    with journal_of(file_storage).open("ab") as f:
        f.write(b"z" * 300_000)
    head = arun(file_storage.get_latest(run_id="r1"))
    assert head is not None
    assert head.seq == 1
    arun(file_storage.save(ckpt("r1", 2)))
    journal = arun(file_storage.read_run("r1"))
    assert (journal.torn_tail, journal.problems, len(journal.checkpoints)) == (0, (), 3)


def test_stray_directories_are_ignored_and_a_stray_file_is_not(file_storage: Any) -> None:
    arun(build_run(file_storage, "r1", 2))
    runs = file_storage.root / "runs"
    (runs / "not a run id").mkdir()
    (runs / "empty").mkdir()
    (runs / "blank").mkdir()
    (runs / "blank" / "journal.jsonl").write_bytes(b"")
    (runs / ".file").write_text("x")  # not a run id
    (runs / "file").write_text("x")  # a run id: listed corrupt, not hidden (see below)
    listed = {r.run_id: r.status for r in arun(file_storage.list_runs())}
    assert listed == {"r1": "interrupted", "file": "corrupt"}
    with pytest.raises(CheckpointCorruptError, match="file, not a directory"):
        arun(file_storage.list_checkpoint_ids())  # as for any corrupt run: never skipped
    (runs / "file").unlink()
    assert arun(file_storage.list_checkpoint_ids()) == ["r1.0", "r1.1"]


def test_files_are_private_to_the_owner(tmp_path: Path) -> None:
    old = os.umask(0o022)
    try:
        storage = FileCheckpointStorage(tmp_path / "store")
        arun(build_run(storage, "r1", 2))
        lock = storage.lock_run("r1")
        storage.request_pause_now("r1")
        run_dir = storage.root / "runs" / "r1"
        for directory in (storage.root, storage.root / "runs", run_dir):
            assert stat.S_IMODE(directory.stat().st_mode) == 0o700, directory
        for name in ("journal.jsonl", "owner.json", "pause"):
            assert stat.S_IMODE((run_dir / name).stat().st_mode) == 0o600, name
        lock.release()
        storage.close()
    finally:
        os.umask(old)


def test_non_durable_mode_writes_the_same_bytes(tmp_path: Path) -> None:
    durable = FileCheckpointStorage(tmp_path / "a")
    fast = FileCheckpointStorage(tmp_path / "b", durable=False)
    assert fast.durable is False
    for storage in (durable, fast):
        arun(build_run(storage, "r1", 5))
        storage.close()
    assert journal_of(durable).read_bytes() == journal_of(fast).read_bytes()
    assert [c.seq for c in arun(fast.load_chain("r1"))] == list(range(5))


def test_journal_bytes_grow_linearly_with_steps(file_storage: Any) -> None:
    result = "x" * 100

    def step(seq: int) -> Checkpoint:
        record = {"key": f"/work#{seq}", "digest": "d" * 16, "result": result}
        return ckpt("r1", seq, data={"steps": [record], "served": []})

    async def scenario() -> None:
        await file_storage.save(ckpt("r1", 0))
        for seq in range(1, 1001):
            await file_storage.save(step(seq))

    arun(scenario())
    per_record = len(encode_record(step(1000)))  # the widest seq numbers of the run
    size = journal_of(file_storage).stat().st_size
    assert 1000 * 100 < size <= len(encode_record(ckpt("r1", 0))) + 1000 * per_record
    assert per_record < 400  # one result, one envelope: no copy of earlier results


def test_the_hot_path_is_one_lstat_one_writev_and_one_fdatasync(
    file_storage: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Counts system calls: the storage's default seam looks each ``os`` function up per call.

    The ``lstat`` checks that the journal still ends where this process last wrote it.
    """
    arun(build_run(file_storage, "r1", 2))  # the first append scans the journal once
    calls: dict[str, int] = {}

    def counting(name: str, real: Any) -> Any:
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            calls[name] = calls.get(name, 0) + 1
            return real(*args, **kwargs)

        return wrapper

    for name in ("write", "writev", "read", "pread", "open", "fstat", "stat", "lstat", "scandir"):
        monkeypatch.setattr(os, name, counting(name, getattr(os, name)))
    monkeypatch.setattr(os, "fdatasync", counting("fdatasync", os.fdatasync))

    async def scenario() -> None:
        for seq in range(2, 102):
            await file_storage.save(ckpt("r1", seq))

    arun(scenario())
    assert calls == {"lstat": 100, "writev": 100, "fdatasync": 100}


@pytest.mark.parametrize("failure", [OSError(errno.ENOSPC, "disk full"), KeyboardInterrupt()])
def test_a_failed_write_is_recovered_by_the_next_save(
    file_storage: Any, monkeypatch: pytest.MonkeyPatch, failure: BaseException
) -> None:
    arun(build_run(file_storage, "r1", 2))
    real_writev = os.writev

    def half_then_fail(fd: int, buffers: list[bytes]) -> int:
        data = b"".join(buffers)
        os.write(fd, data[: len(data) // 2])
        raise failure

    monkeypatch.setattr(os, "writev", half_then_fail)
    with pytest.raises(type(failure)):
        arun(file_storage.save(ckpt("r1", 2)))
    monkeypatch.setattr(os, "writev", real_writev)
    journal = arun(file_storage.read_run("r1"))
    assert journal.torn_tail == 0  # the failed append cut its half record off at once
    assert len(journal.checkpoints) == 2
    arun(file_storage.save(ckpt("r1", 2)))  # reopens, rereads the head, appends
    journal = arun(file_storage.read_run("r1"))
    assert (journal.torn_tail, journal.problems) == (0, ())
    assert [c.seq for c in journal.checkpoints] == [0, 1, 2]


def test_a_second_storage_object_rereads_the_head_after_taking_the_lock(tmp_path: Path) -> None:
    first = FileCheckpointStorage(tmp_path / "store")
    second = FileCheckpointStorage(tmp_path / "store")
    arun(build_run(first, "r1", 2))
    arun(second.save(ckpt("r1", 2)))  # second now remembers head 2
    with first.lock_run("r1"):
        arun(first.save(ckpt("r1", 3)))
    with second.lock_run("r1"):
        with pytest.raises(CheckpointCorruptError):
            arun(second.save(ckpt("r1", 3, data={"stale": True})))
        arun(second.save(ckpt("r1", 4)))
    assert [c.seq for c in arun(first.load_chain("r1"))] == [0, 1, 2, 3, 4]
    first.close()
    second.close()


def test_delete_truncates_at_a_line_boundary(file_storage: Any) -> None:
    arun(build_run(file_storage, "r1", 5))
    path = journal_of(file_storage)
    lines = path.read_bytes().split(b"\n")
    assert arun(file_storage.delete("r1.3")) is True
    assert path.read_bytes() == b"\n".join(lines[:3]) + b"\n"
    assert arun(file_storage.delete("r1.0")) is True
    assert not path.parent.exists()


@given(
    data=st.dictionaries(
        st.text(max_size=8),
        st.recursive(
            st.none() | st.booleans() | st.integers() | st.text(),
            lambda inner: (
                st.lists(inner, max_size=3)
                | st.dictionaries(st.text(max_size=5), inner, max_size=3)
            ),
            max_leaves=8,
        ),
        max_size=4,
    )
)
@settings(max_examples=150, deadline=None)
def test_records_round_trip_any_json_data(data: dict[str, Any]) -> None:
    checkpoint = ckpt("r1", 1, data=data)
    line = encode_record(checkpoint)
    assert line.endswith(b"\n")
    assert line.count(b"\n") == 1
    assert decode_record(line[:-1], "t") == checkpoint


@pytest.mark.parametrize(
    "data",
    [
        {"text": "lone \ud800 surrogate"},  # not UTF-8: written with \u escapes
        {"big": 2**70, "negative": -(2**65)},  # beyond 64 bits
        {"text": "x" * 1_000_000, "n": [1, 2.5, None, True]},  # a big value
    ],
)
def test_records_the_fast_encoder_refuses_are_written_all_the_same(data: dict[str, Any]) -> None:
    checkpoint = ckpt("r1", 1, data=data)
    line = encode_record(checkpoint)
    assert decode_record(line[:-1], "t") == checkpoint
    stored = json.loads(line)  # one valid JSON line
    if "z" in stored:  # a big value, compressed: what it unpacks to is the data
        stored["data"] = json.loads(unpack(stored.pop("z"), "t"))
    assert stored == {**stored, "data": data}


def test_record_data_that_is_not_plain_json_is_refused() -> None:
    @dataclasses.dataclass
    class Point:
        x: int

    for value in (Point(1), datetime.date(2020, 1, 2), object()):
        with pytest.raises(TypeError):
            encode_record(ckpt("r1", 1, data={"value": value}))


@given(position=st.integers(min_value=0), value=st.integers(min_value=0, max_value=255))
@settings(max_examples=300, deadline=None)
def test_any_changed_byte_is_detected(position: int, value: int) -> None:
    line = bytearray(encode_record(ckpt("r1", 1, data={"text": "héllo", "n": [1, 2]}))[:-1])
    position %= len(line)
    if line[position] == value or value == ord("\n"):
        return
    line[position] = value
    with pytest.raises(CheckpointCorruptError):
        decode_record(bytes(line), "t")


def _fields(checkpoint: Checkpoint) -> dict[str, Any]:
    return {name: getattr(checkpoint, name) for name in Checkpoint.__slots__}


def _resign(line: bytes, change: Any) -> bytes:
    """Return ``line`` decoded, changed by ``change(raw) -> raw`` and signed again."""
    raw = json.loads(line)
    raw.pop("crc")
    body = json.dumps(change(raw), separators=(",", ":"), ensure_ascii=False).encode()
    return b'%s,"crc":"%08x"}' % (body[:-1], zlib.crc32(body))


def _rewrite_line(path: Path, lineno: int, change: Any) -> None:
    lines = path.read_bytes().split(b"\n")
    lines[lineno - 1] = _resign(lines[lineno - 1], change)
    path.write_bytes(b"\n".join(lines))


def test_list_runs_checks_the_links_of_records_signed_again(tmp_path: Path) -> None:
    # A record with a valid checksum still has to be the next link of its run's chain.
    storage = FileCheckpointStorage(tmp_path / "store")
    for run_id in ("order", "root", "parent"):
        arun(build_run(storage, run_id, 4))
    storage.close()
    # Another field order (written by hand): checked the slow way, and accepted.
    _rewrite_line(journal_of(storage, "order"), 2, lambda raw: dict(reversed(raw.items())))
    _rewrite_line(journal_of(storage, "root"), 3, lambda raw: raw | {"kind": "root"})
    _rewrite_line(journal_of(storage, "parent"), 3, lambda raw: raw | {"id": "parent.1"})
    by_id = {s.run_id: s for s in arun(FileCheckpointStorage(tmp_path / "store").list_runs())}
    assert by_id["order"].status == "interrupted" and by_id["order"].head_seq == 3
    assert by_id["root"].status == "corrupt"
    assert by_id["root"].problem == f"{journal_of(storage, 'root')}:3: seq 2 is a 'root' record"
    assert by_id["parent"].status == "corrupt"
    assert by_id["parent"].problem is not None
    assert by_id["parent"].problem.startswith(
        f'{journal_of(storage, "parent")}:3: record is seq 1 with parent "parent.0", '
        'expected seq 2 with parent "parent.1"'
    )


def test_a_run_that_fails_to_read_is_unreadable_and_the_others_are_listed(tmp_path: Path) -> None:
    from tests.harness.faulty_fs import Fault, FaultyFS  # the storage's I/O seam, faulted

    storage = FileCheckpointStorage(tmp_path / "store")
    for run_id in ("r1", "r2", "r3"):
        arun(build_run(storage, run_id, 3))
    storage.close()
    order = [entry.name for entry in os.scandir(tmp_path / "store" / "runs")]
    faulty = FileCheckpointStorage(
        tmp_path / "store", fs=FaultyFS(0, [Fault("open", "eio", 2, "once")])
    )  # opening the second journal fails with EIO (each run: its journal, then its end marker)
    by_id = {s.run_id: s for s in arun(faulty.list_runs())}
    broken = order[1]
    assert by_id[broken].status == "unreadable"
    assert by_id[broken].problem is not None and "cannot read: " in by_id[broken].problem
    assert "injected" in by_id[broken].problem
    assert {rid: s.status for rid, s in by_id.items() if rid != broken} == {
        rid: "interrupted" for rid in order if rid != broken
    }


@given(
    data=st.binary(max_size=200).map(lambda b: b.replace(b"\x00", b"\n")),
    chunk=st.integers(min_value=1, max_value=40),
)
@settings(max_examples=300, deadline=None)
def test_read_lines_yields_the_committed_lines_whatever_the_chunk(data: bytes, chunk: int) -> None:
    import tempfile

    from wfctl._storage._fs import OS_FS
    from wfctl._storage._journal import read_lines

    with tempfile.TemporaryFile() as handle:
        handle.write(data)
        handle.flush()
        committed = data[: data.rfind(b"\n") + 1]
        expected = committed.split(b"\n")[:-1]  # no torn tail, no piece after the last newline
        assert list(read_lines(OS_FS, handle.fileno(), chunk)) == expected
