"""``wfctl log --last N``, ``--from SEQ`` and ``--limit N``: a long run's timeline a page at a time.

The records before a page are verified (checksum, link) without being decoded, and none after it
is read; a record that fails anywhere up to the page's end is still named (exit 2). The JSON
document says which part of the chain it lists (``first_listed_seq``,
``listed_checkpoint_count``); a person is told what was left out and how to see the next page.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.cli.conftest import (
    count_reads,
    journal_of,
    spoil_step_record,
    wfctl,
)
from wfctl._errors import CheckpointCorruptError
from wfctl._inspect import _follow
from wfctl._inspect._entries import LogPage, log_entry
from wfctl._inspect._follow import FollowEnd
from wfctl._inspect._log import run_log
from wfctl._records._checkpoint import Checkpoint
from wfctl._storage import _file

STEPS = 40  # records: the root, STEPS steps, the completed record
HEAD = STEPS + 1


@pytest.mark.parametrize(
    ("page", "head", "seqs"),
    [
        (LogPage(), 5, range(6)),
        (LogPage(from_seq=3), 5, range(3, 6)),
        (LogPage(from_seq=6), 5, range(6, 6)),  # past the head: empty
        (LogPage(from_seq=9), 5, range(9, 9)),
        (LogPage(last=2), 5, range(4, 6)),
        (LogPage(last=0), 5, range(6, 6)),
        (LogPage(last=50), 5, range(6)),
        (LogPage(limit=2), 5, range(2)),
        (LogPage(limit=0), 5, range(0, 0)),
        (LogPage(from_seq=2, limit=2), 5, range(2, 4)),
        (LogPage(from_seq=4, limit=9), 5, range(4, 6)),
        (LogPage(last=4, limit=1), 5, range(2, 3)),
        (LogPage(last=1), 0, range(1)),
    ],
)
def test_a_page_names_the_seqs_it_lists(page: LogPage, head: int, seqs: range) -> None:
    assert page.seqs(head) == seqs


@pytest.mark.parametrize(
    "fields",
    [{"from_seq": -1}, {"last": -2}, {"limit": -1}, {"limit": 1.5}, {"from_seq": 1, "last": 1}],
)
def test_a_page_refuses_what_names_no_seqs(fields: dict[str, object]) -> None:
    with pytest.raises(ValueError, match=r"from_seq|last|limit"):
        LogPage(**fields)  # type: ignore[arg-type]


def test_records_before_a_page_are_checked_not_decoded_and_none_after_it_is_read(
    store: Path, long_run: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    reads = count_reads(monkeypatch)
    log = run_log(store, long_run, page=LogPage(from_seq=10, limit=5))
    assert sorted(reads.decoded) == [0, HEAD]  # the summary's root and head, nothing else yet
    assert [entry.seq for entry in log.entries] == [10, 11, 12, 13, 14]
    assert sorted(reads.decoded) == [0, 10, 11, 12, 13, 14, HEAD]
    assert reads.lines == 15  # up to the page's last record: the rest is not read


def test_a_broken_record_before_the_page_is_named(store: Path, long_run: str) -> None:
    spoil_step_record(store, long_run, 7)
    log = run_log(store, long_run, page=LogPage(last=3))
    with pytest.raises(CheckpointCorruptError) as raised:
        list(log.entries)
    assert raised.value.where == f"{journal_of(store, long_run)}:8"
    done = wfctl("log", long_run, "--last", "3", "--store", store)
    assert done.code == 2 and "journal.jsonl:8: checksum mismatch" in done.error_line()
    assert f"{long_run}." not in done.stdout  # nothing of the page was shown before it


def test_a_record_after_the_page_is_not_read(store: Path, long_run: str) -> None:
    spoil_step_record(
        store, long_run, 30
    )  # neither the root nor the head: not read for the summary
    done = wfctl("log", long_run, "--limit", "5", "--store", store, "--json")
    assert done.code == 0, done.stderr
    assert [c["seq"] for c in done.json()["checkpoints"]] == [0, 1, 2, 3, 4]
    assert wfctl("log", long_run, "--store", store).code == 2  # the whole chain: named


def test_the_document_says_which_part_of_the_chain_it_lists(store: Path, long_run: str) -> None:
    whole = wfctl("log", long_run, "--store", store, "--json").json()
    assert (whole["checkpoint_count"], whole["first_listed_seq"]) == (HEAD + 1, 0)
    assert whole["listed_checkpoint_count"] == len(whole["checkpoints"]) == HEAD + 1
    for args, seqs in [
        (("--last", "3"), [HEAD - 2, HEAD - 1, HEAD]),
        (("--from", "20", "-n", "2"), [20, 21]),
        (("--from", str(HEAD + 5)), []),
        (("--limit", "0"), []),
    ]:
        done = wfctl("log", long_run, "--store", store, "--json", *args)
        assert done.code == 0, done.stderr
        document = done.json()
        # the text json.dumps writes for it (an empty page included: ``[]``)
        assert done.stdout == json.dumps(document, indent=2, ensure_ascii=False) + "\n"
        assert document["checkpoint_count"] == HEAD + 1
        assert [c["seq"] for c in document["checkpoints"]] == seqs
        assert document["listed_checkpoint_count"] == len(seqs)
        if seqs:
            assert document["first_listed_seq"] == seqs[0]
            # each entry exactly as the whole log lists it
            assert document["checkpoints"] == whole["checkpoints"][seqs[0] : seqs[-1] + 1]


def test_people_are_told_what_the_page_leaves_out(store: Path, long_run: str) -> None:
    done = wfctl("log", long_run, "--from", "10", "--limit", "3", "--store", store)
    assert done.code == 0, done.stderr
    lines = done.stdout.splitlines()
    shown = [line for line in lines if f"  {long_run}." in line]
    assert [line.rsplit(".", 1)[1] for line in shown] == ["10", "11", "12"]
    assert "… 10 checkpoints (seq 0 to 9) before, verified, not shown" in lines
    assert lines[-1] == (
        f"… {HEAD - 12} checkpoints (seq 13 to {HEAD}) after, not shown (next page: --from 13)"
    )
    assert shown[-1].startswith("└──")  # the page's last entry closes the tree
    last = wfctl("log", long_run, "--last", "1", "--store", store).stdout
    assert f"… {HEAD} checkpoints (seq 0 to {HEAD - 1}) before" in last
    assert "after, not shown" not in last
    past = wfctl("log", long_run, "--from", "99", "--store", store)
    assert past.code == 0
    assert f"no checkpoint from seq 99 on: the head is seq {HEAD}" in past.stdout


@pytest.mark.parametrize(
    ("args", "option"),
    [
        (("--from", "1", "--last", "2"), "'--last': give --from or --last, not both"),
        (("--follow", "--limit", "2"), "'--limit': --follow goes on until the run ends"),
        (("--last", "-1"), "--last must be 0 or more, not -1"),
        (("--from", "x"), "--from must be a whole number, not 'x'"),
    ],
)
def test_options_that_name_no_page_are_usage_errors(
    store: Path, long_run: str, args: tuple[str, ...], option: str
) -> None:
    done = wfctl("log", long_run, "--store", store, "--json", *args)
    assert done.code == 2 and done.stdout == ""
    assert option in done.error_line()


def test_follow_starts_at_the_page(store: Path, long_run: str) -> None:
    done = wfctl("log", long_run, "--follow", "--json", "--last", "2", "--store", store)
    assert done.code == 0, done.stderr
    lines = [line for line in done.stdout.splitlines() if line]
    documents = [json.loads(line) for line in lines]
    assert [d.get("seq") for d in documents] == [HEAD - 1, HEAD, None]
    assert documents[-1]["schema"] == "wfctl/log-end@1"


@dataclass
class _Follower:
    """Records committed in batches, as a followed run commits them."""

    batches: list[list[Checkpoint]]
    head: Checkpoint | None = None
    more: bool = False

    def changed(self) -> bool:
        return bool(self.batches)

    def running(self) -> bool:
        return True

    def read_new(self) -> list[Checkpoint]:
        batch = self.batches.pop(0) if self.batches else []
        if batch:
            self.head = batch[-1]
        return batch


def test_a_followed_page_skips_what_was_committed_before_it(store: Path, long_run: str) -> None:
    chain = _file.FileCheckpointStorage(store)._chain(long_run)
    follower = _Follower([chain[:1], chain[1:4], chain[4:7], chain[7:]])
    items = list(_follow._follow(follower, lambda _: None, 5))
    assert [item.seq for item in items if not isinstance(item, FollowEnd)] == list(
        range(5, HEAD + 1)
    )
    assert items[0] == log_entry(chain[5])
    assert isinstance(items[-1], FollowEnd) and items[-1].status == "completed"
