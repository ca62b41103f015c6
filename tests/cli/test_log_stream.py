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
from wfctl._inspect import _entries, _json_pages, _log
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
    # A page of 200 entries is held until it is written: entries whose steps held their records
    # held every argument and result of the page (20 MB a step: 543 MB for 24 steps).
    held: list[_entries.StepEntry] = []
    page_json = _json_pages._page_json

    def watched(page: list[_entries.LogEntry], utc: _json_pages._UtcTimes) -> str:
        held.extend(step for entry in page for step in entry.steps)
        return page_json(page, utc)

    monkeypatch.setattr(_log, "_page_json", watched)
    log = run_log(store, long_run)  # as the library gives it: every step with its record
    text = "".join(log.json_text())
    assert len(held) == STEPS and all(step.record is None for step in held)
    assert (
        text == json.dumps(run_log(store, long_run).to_json(), indent=2, ensure_ascii=False) + "\n"
    )


def test_only_log_v_s_table_reads_the_steps_values(store: Path, long_run: str) -> None:
    with_values = list(run_log(store, long_run).entries)
    keys_only = list(run_log(store, long_run, values=False).entries)
    assert sum(1 for e in with_values for s in e.steps if s.record is not None) == STEPS
    assert not any(s.record for e in keys_only for s in e.steps)
    assert [e.to_json() for e in keys_only] == [e.to_json() for e in with_values]
    assert [_entries.keys_only(e) for e in with_values] == keys_only
