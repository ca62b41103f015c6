"""``wfctl log --follow`` of a long run: its backlog read a chunk at a time, in flat memory.

Following starts by verifying the whole journal (every checksum and link, nothing decoded but
its ends), then the follower reads the records a chunk at a time, each decoded and checked as
its link, with no wait between chunks; ``--last``/``--from`` start it past the records before
the page, checked without being decoded. The chunk is made small here so that a short run has
a backlog of many chunks.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.cli.conftest import (
    WORKFLOWS,
    invoke,
    journal_of,
    run_id_of,
    spoil_step_record,
    wfctl,
)
from wfctl._errors import CheckpointCorruptError
from wfctl._inspect import _follow as follow_module
from wfctl._inspect._entries import LogEntry, LogPage
from wfctl._inspect._follow import FollowEnd, follow_run
from wfctl._records._checkpoint import Checkpoint
from wfctl._storage import FileCheckpointStorage, _follow

STEPS = 60
HEAD = STEPS + 1


@pytest.fixture
def small_chunks(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_follow, "_CHUNK", 1024)  # a step record is about 450 bytes


def _seqs(items: list[LogEntry | FollowEnd]) -> list[int]:
    return [item.seq for item in items if isinstance(item, LogEntry)]


def test_a_backlog_is_read_a_chunk_at_a_time_without_waiting(
    store: Path, long_run: str, small_chunks: None
) -> None:
    follower = FileCheckpointStorage(store).follow(long_run)
    batches: list[list[Checkpoint]] = []
    while follower.changed():
        batches.append(follower.read_new())
    assert len(batches) > 10 and all(batches)  # many chunks, each with whole records
    assert [c.seq for batch in batches for c in batch] == list(range(HEAD + 1))
    assert not follower.more and not follower.changed()
    waits: list[float] = []
    items = list(follow_run(store, long_run, sleep=waits.append))
    assert _seqs(items) == list(range(HEAD + 1)) and waits == []  # ended: no wait at all
    assert items[-1] == FollowEnd(long_run, "completed", f"{long_run}.{HEAD}")


def test_a_record_longer_than_a_chunk_is_read_whole(
    store: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(_follow, "_CHUNK", 64)  # shorter than any record
    run_id = run_id_of(invoke("run", WORKFLOWS / "many.py", "--input", "3", "--store", store,
                              "--json"))  # fmt: skip
    assert _seqs(list(follow_run(store, run_id, sleep=lambda _: None))) == [0, 1, 2, 3, 4]


def test_skipping_checks_the_records_before_the_page_and_starts_after_them(
    store: Path, long_run: str
) -> None:
    follower = FileCheckpointStorage(store).follow(long_run)
    follower.skip_to(40)
    assert follower.head is not None and follower.head.seq == 39  # the parent of the next
    assert [c.seq for c in follower.read_new()] == list(range(40, HEAD + 1))
    past = FileCheckpointStorage(store).follow(long_run)
    past.skip_to(HEAD + 10)  # more than the journal holds: all of it
    assert past.head is not None and past.head.seq == HEAD and past.read_new() == []


def test_a_broken_record_before_the_page_is_named(store: Path, long_run: str) -> None:
    spoil_step_record(store, long_run, 20)
    follower = FileCheckpointStorage(store).follow(long_run)
    with pytest.raises(CheckpointCorruptError) as raised:
        follower.skip_to(40)
    assert raised.value.where == f"{journal_of(store, long_run)}:21"
    done = wfctl("log", long_run, "--follow", "--last", "5", "--store", store)
    assert done.code == 2 and done.stdout == ""  # refused before anything is shown
    assert "journal.jsonl:21: checksum mismatch" in done.error_line()


def test_a_broken_record_after_the_page_is_named_after_the_entries_before_it(
    store: Path, long_run: str, small_chunks: None
) -> None:
    spoil_step_record(store, long_run, 50)
    with pytest.raises(CheckpointCorruptError) as raised:
        list(follow_run(store, long_run, sleep=lambda _: None, page=LogPage(from_seq=45)))
    assert raised.value.where.endswith("journal.jsonl:51")  # the first look refused it


def test_following_a_long_run_reads_no_whole_chain(
    store: Path, long_run: str, small_chunks: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    def whole_chain(*_: object) -> None:
        raise AssertionError("the whole chain was loaded")

    monkeypatch.setattr(follow_module, "load_chain", whole_chain)
    items = list(follow_run(store, long_run, sleep=lambda _: None, page=LogPage(last=3)))
    assert _seqs(items) == [HEAD - 2, HEAD - 1, HEAD]
    lines = wfctl("log", long_run, "--follow", "--json", "--from", "58", "--store", store)
    assert lines.code == 0, lines.stderr
    assert [json.loads(line).get("seq") for line in lines.stdout.splitlines()] == [
        58, 59, 60, 61, None
    ]  # fmt: skip
