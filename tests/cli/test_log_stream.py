"""``wfctl log`` reads a run's journal once, verifying each record before its entry is shown.

The summary (the first line) comes from the run's root and head, both verified; then every
record is checked (checksum, link to its parent) and decoded as it is read, once, and its entry
is shown only after it and every record before it held. A record that fails stops the command
(exit 2, one stderr line naming it, as before) after the entries before it; a broken root or
head is found before anything is shown, and named as the whole journal's check names it.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable
from pathlib import Path

import pytest

from tests.cli.conftest import (
    WORKFLOWS,
    count_reads,
    invoke,
    journal_of,
    run_id_of,
    spoil_step_record,
)
from wfctl._errors import CheckpointCorruptError
from wfctl._inspect import _entries, _json_pages
from wfctl._inspect._documents import utc_time
from wfctl._inspect._log import run_log

MANY = WORKFLOWS / "many.py"
STEPS = 250  # more than one page of the timeline (200 entries)
_ARGS: Iterable[tuple[str, ...]] = ((), ("--json",))


def test_each_record_is_read_once_and_decoded_once(
    store: Path, long_run: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    reads = count_reads(monkeypatch)
    entries = list(run_log(store, long_run).entries)
    assert [e.seq for e in entries] == list(range(STEPS + 2))
    assert reads.lines == STEPS + 2  # one read of the journal (two before: verify, then decode)
    assert len(reads.decoded) == STEPS + 2  # the root and head once each (twice before)


def test_a_broken_record_is_named_after_the_entries_before_it(store: Path, long_run: str) -> None:
    spoil_step_record(store, long_run, 230)
    log = run_log(store, long_run)  # the root and the head hold: nothing raised yet
    assert log.summary.status == "completed"
    shown: list[int] = []
    with pytest.raises(CheckpointCorruptError) as raised:
        shown.extend(entry.seq for entry in log.entries)
    assert shown == list(range(230))
    assert raised.value.where == f"{journal_of(store, long_run)}:231"
    assert raised.value.reason.startswith("checksum mismatch (record says ")


def test_the_command_shows_what_held_then_names_the_broken_record(
    store: Path, long_run: str
) -> None:
    spoil_step_record(store, long_run, 230)
    text = invoke("log", long_run, "--store", store)
    assert text.code == 2
    assert text.error_line().startswith(
        f"wfctl: error: corrupt checkpoint data in {journal_of(store, long_run)}:231: checksum "
    )
    shown = [line for line in text.stdout.splitlines() if f"  {long_run}." in line]
    assert [line.rsplit(".", 1)[1] for line in shown] == [str(seq) for seq in range(230)]
    document = invoke("log", long_run, "--store", store, "--json")
    assert document.code == 2 and document.error_line() == text.error_line()
    assert f'"{long_run}.229"' in document.stdout and f'"{long_run}.230"' not in document.stdout
    with pytest.raises(json.JSONDecodeError):
        json.loads(document.stdout)  # cut short: never mistaken for the whole document


@pytest.mark.parametrize("index", [0, STEPS + 1], ids=["root", "head"])
def test_a_broken_end_is_refused_before_anything_is_shown(
    store: Path, long_run: str, index: int
) -> None:
    journal = journal_of(store, long_run)
    lines = journal.read_bytes().split(b"\n")
    lines[index] = lines[index].replace(b'"ts":"2', b'"ts":"3')
    journal.write_bytes(b"\n".join(lines))
    for args in _ARGS:
        done = invoke("log", long_run, "--store", store, *args)
        assert done.code == 2 and done.stdout == ""
        assert f"journal.jsonl:{index + 1}: checksum mismatch" in done.error_line()


@pytest.mark.parametrize(
    "text",
    [
        "2026-12-01T07:33:18.374520+00:00",
        "2026-12-01T07:33:18.000000+00:00",  # utc_time leaves a zero fraction out
        "2026-12-01T07:33:18.000001+00:00",
        "2026-12-01T07:33:19.374520+00:00",
        "2026-12-01T07:33:18.374520+02:00",
        "2026-12-01T07:33:18+00:00",
        "2026-12-01T07:33:18.374+00:00",
        "2026-02-30T07:33:18.374520+00:00",  # not a date
        "2026-12-01T07:33:18.3745a0+00:00",
        "2026-12-01T07:33:18.37452\u0660+00:00",  # a digit, not ASCII
        "2026-12-01 07:33:18.374520+00:00",
        "2026-12-01T07:33:18.374520",
        "",
    ],
)
def test_log_json_times_are_utc_times(text: str) -> None:
    convert = _json_pages._UtcTimes()
    for before in ("", "2026-12-01T07:33:18.100000+00:00", "2026-02-30T07:33:18.100000+00:00"):
        if before:
            convert(before)  # the second just converted: remembered or not, the same text
        assert convert(text) == utc_time(text)


def test_log_json_durations_are_written_as_the_standard_library_writes_them() -> None:
    durations = (1e-05, 0.1, 2.5e-07, 1e20, 123456.789, 0.0, -0.0, math.nan, math.inf, -math.inf)
    entry = _entries.LogEntry(
        "r.1", 1, "step", "2026-12-01T07:33:18.374520+00:00",
        tuple(_entries.StepEntry(f"work#{i}", d) for i, d in enumerate(durations)),
    )  # fmt: skip
    expected = json.dumps(entry.to_json(), indent=2, ensure_ascii=False)
    assert _json_pages._indented_json(entry, _json_pages._UtcTimes()) == expected


@pytest.mark.parametrize("steps", [198, 199, STEPS])  # pages: one full; one and one entry; two
def test_log_json_pages_make_the_document_json_writes(store: Path, steps: int) -> None:
    outcome = invoke("run", MANY, "--input", str(steps), "--store", store, "--json")
    run_id = run_id_of(outcome)
    streamed = "".join(run_log(store, run_id).json_text())
    whole = run_log(store, run_id).to_json()
    assert streamed == json.dumps(whole, indent=2, ensure_ascii=False) + "\n"
    assert len(whole["checkpoints"]) == steps + 2


def test_log_json_pages_hold_no_step_s_values(
    store: Path, long_run: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Entries hold their steps' records (arguments and results). A page of 200 entries read
    # before it was written held every value of the page (20 MB a step: 543 MB for 24 steps):
    # each entry is now written as it is read, so a page holds text only. At PAGE_CHARS 1,
    # every entry is a page, given before the next record is read.
    monkeypatch.setattr(_json_pages, "PAGE_CHARS", 1)
    reads = count_reads(monkeypatch)
    chunks = iter(run_log(store, long_run).json_text())
    given = [next(chunks)]  # the document's start and the root
    assert reads.decoded == [0, STEPS + 1]  # the summary's root and head (the root kept)
    given.append(next(chunks))
    assert reads.decoded == [0, STEPS + 1, 1]
    given.extend(chunks)
    assert len(given) == STEPS + 3  # one an entry, then the document's end
    whole = run_log(store, long_run).to_json()
    assert "".join(given) == json.dumps(whole, indent=2, ensure_ascii=False) + "\n"
