"""Listing filters: ``wfctl runs --status/--workflow/--since/--until/--sort/--reverse/--limit``,
the count line, and the same filters on ``gc``.

The stores are written through ``FileCheckpointStorage.save`` with chosen timestamps (the
internal record classes build the payloads), so creation times are fixed and no test waits.
"""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from tests.cli.conftest import wfctl
from wfctl._records._checkpoint import Checkpoint, Kind
from wfctl._records._payloads import (
    CompletedPayload,
    FailedPayload,
    PausePayload,
    RecordedRequest,
    RootPayload,
)
from wfctl._storage import FileCheckpointStorage

RECENT = datetime.now(UTC) - timedelta(hours=1)
JANUARY = datetime(2026, 1, 1, 10, 0, tzinfo=UTC)
JUNE = datetime(2026, 6, 1, 10, 0, tzinfo=UTC)

_ENDS = {
    "completed": CompletedPayload("ok", []),
    "failed": FailedPayload("ValueError", "no"),
    "paused": PausePayload((RecordedRequest("approve", None, None),), "request"),
}


def make_run(
    store: Path,
    run_id: str,
    workflow: str,
    created: datetime,
    status: str = "completed",
    origin: str | None = None,
) -> None:
    """Write a two-record run (root, then its ending record) created at ``created``."""
    end = _ENDS[status]
    stamp = created.isoformat(timespec="microseconds")
    later = (created + timedelta(seconds=1)).isoformat(timespec="microseconds")
    origin_run = origin.rpartition(".")[0] if origin else None
    root = Checkpoint(
        run_id,
        0,
        Kind.ROOT,
        workflow,
        stamp,
        origin_run_id=origin_run,
        origin_checkpoint_id=origin,
        data=RootPayload(None, f"m:{workflow}", "sig", restored_from=origin).to_json(),
    )
    head = Checkpoint(
        run_id,
        1,
        end.KIND,
        workflow,
        later,
        f"{run_id}.0",
        origin_run_id=origin_run,
        origin_checkpoint_id=origin,
        data=end.to_json(),
    )
    storage = FileCheckpointStorage(store)
    for checkpoint in (root, head):
        asyncio.run(storage.save(checkpoint))


def listed(*args: str, env: dict[str, str] | None = None) -> list[str]:
    outcome = wfctl("runs", *args, "--json", env=env)
    assert outcome.code == 0, outcome.stderr
    return [r["run_id"] for r in outcome.json()["runs"]]


def test_since_and_until_take_ages_and_local_dates(store: Path) -> None:
    make_run(store, "jan", "report", JANUARY)
    make_run(store, "jun", "report", JUNE)
    make_run(store, "now", "report", RECENT)
    s = str(store)
    assert listed("--store", s, "--since", "2h") == ["now"]
    assert listed("--store", s, "--until", "2h") == ["jun", "jan"]  # newest first
    assert listed("--store", s, "--since", "2026-05-01", "--until", "2026-07-01") == ["jun"]
    assert listed("--store", s, "--since", "2026-06-01T10:00:00Z") == ["now", "jun"]
    # A time without an offset is local: 11:00 in Tokyo is 02:00 UTC, before the June run.
    assert listed("--store", s, "--until", "2026-06-01T11:00", env={"TZ": "UTC"}) == [
        "jun",
        "jan",
    ]
    assert listed("--store", s, "--until", "2026-06-01T11:00", env={"TZ": "Asia/Tokyo"}) == ["jan"]
    # A bare date is local midnight: in Tokyo, 2026-06-01 starts at 15:00 UTC the day before.
    assert listed("--store", s, "--since", "2026-06-01", env={"TZ": "Asia/Tokyo"}) == [
        "now",
        "jun",
    ]


def test_several_statuses_a_glob_sort_reverse_limit_and_the_counts(store: Path) -> None:
    make_run(store, "a1", "review-eu", JANUARY, "paused")
    make_run(store, "a2", "review-us", JANUARY + timedelta(minutes=1), "failed")
    make_run(store, "a3", "billing", JANUARY + timedelta(minutes=2), "failed")
    make_run(store, "a4", "review-us", JANUARY + timedelta(minutes=3), "completed")
    s = str(store)
    # Newest first by default; --limit 1 is the newest run, --reverse the oldest.
    assert listed("--store", s, "-s", "paused", "--status", "failed") == ["a3", "a2", "a1"]
    assert listed("--store", s, "--workflow", "review-*") == ["a4", "a2", "a1"]
    assert listed("--store", s, "--limit", "1") == ["a4"]
    assert listed("--store", s, "--reverse", "--limit", "1") == ["a1"]
    assert listed("--store", s, "--sort", "updated", "--limit", "1") == ["a4"]
    assert listed("--store", s, "--workflow", "review") == []  # a plain name is exact
    assert listed("--store", s, "-w", "review-*", "-s", "failed") == ["a2"]
    assert listed("--store", s, "--sort", "workflow") == ["a3", "a1", "a2", "a4"]  # A to Z
    assert listed("--store", s, "--sort", "workflow", "--reverse") == ["a4", "a2", "a1", "a3"]
    assert listed("--store", s, "--reverse", "--limit", "2") == ["a1", "a2"]

    doc = wfctl("runs", "--store", s, "-w", "review-*", "--limit", "1", "--json").json()
    assert doc["schema"] == "wfctl/runs@1"
    assert (doc["run_count"], doc["matching_run_count"], doc["total_run_count"]) == (1, 3, 4)

    people = wfctl("runs", "--store", s, "-w", "review-*", "--limit", "1")
    assert people.code == 0
    assert "1 of 3 matching runs (4 in the store; --limit 1)" in people.stdout
    assert "2 of 4 runs match" in wfctl("runs", "--store", s, "-s", "failed").stdout
    assert "4 runs" in wfctl("runs", "--store", s).stdout
    nothing = wfctl("runs", "--store", s, "--since", "1h")
    assert nothing.code == 0 and "0 of 4 runs match" in nothing.stdout


def test_bad_filter_arguments_are_one_line_and_exit_2(store: Path) -> None:
    make_run(store, "a1", "wf", JANUARY)
    s = str(store)
    bad_time = wfctl("runs", "--store", s, "--since", "yesterday")
    assert bad_time.code == 2 and bad_time.stdout == ""
    assert "--since: invalid time 'yesterday'" in bad_time.error_line()
    backwards = wfctl("runs", "--store", s, "--since", "2026-02-01", "--until", "2026-01-01")
    assert backwards.code == 2
    assert "--since must be earlier than --until" in backwards.error_line()
    assert wfctl("runs", "--store", s, "--status", "sleepy").code == 2
    assert wfctl("runs", "--store", s, "--sort", "size").code == 2
    assert wfctl("runs", "--store", s, "--limit", "-1").code == 2
    assert wfctl("gc", "--store", s, "--until", "soon").code == 2


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("runs", "--since", "0001-01-01"), "--since: invalid time '0001-01-01': out of range"),
        (("runs", "--until", "0001-01-01T00:00"), "--until: invalid time '0001-01-01T00:00': out"),
        (("runs", "--since", "3000000d"), "--since: invalid time '3000000d': out of range"),
        (("runs", "--since", "99999999999d"), "--since: invalid age '99999999999d': out of range"),
        (("gc", "--dry-run", "--since", "0001-01-01"), "--since: invalid time '0001-01-01': out"),
        (("gc", "--dry-run", "--older-than", "99999999999d"), "--older-than: invalid age"),
        (("gc", "--dry-run", "--older-than", "soon"), "--older-than: invalid age 'soon'"),
    ],
)
def test_times_out_of_range_are_one_line_and_exit_2(
    store: Path, args: tuple[str, ...], message: str
) -> None:
    # Past the calendar's ends these were an internal error (ValueError, OverflowError), exit 1.
    make_run(store, "a1", "wf", JANUARY)
    done = wfctl(*args, "--store", store, "--json", env={"TZ": "UTC"})
    assert done.code == 2 and done.stdout == ""
    assert message in done.error_line()


def test_local_times_at_the_calendars_ends_need_an_offset(store: Path) -> None:
    make_run(store, "a1", "wf", JANUARY)
    s = str(store)
    # 23:59 on the last day in Tokyo is 14:59 UTC, a real moment, but converting it overflows.
    late = wfctl("runs", "--store", s, "--until", "9999-12-31T23:59", env={"TZ": "Asia/Tokyo"})
    assert late.code == 2
    assert "--until: invalid time '9999-12-31T23:59': out of range" in late.error_line()
    ends = ("--since", "0001-01-01T00:00Z", "--until", "9999-12-31T23:59-05:00")
    assert listed("--store", s, *ends, env={"TZ": "Asia/Tokyo"}) == ["a1"]


def test_gc_filters_narrow_what_it_considers(store: Path) -> None:
    make_run(store, "old-a", "nightly-a", JANUARY)
    make_run(store, "old-b", "nightly-b", JANUARY)
    make_run(store, "old-c", "adhoc", JANUARY)
    make_run(store, "mid-a", "nightly-a", JUNE, "failed")
    # A run outside the filters still protects its origin.
    make_run(store, "branch", "nightly-b", JUNE, origin="old-b.1")
    s = str(store)
    dry = wfctl("gc", "--store", s, "--workflow", "nightly-*", "--until", "2026-03-01", "--dry-run")
    assert dry.code == 0
    doc = wfctl(
        "gc", "--store", s, "-w", "nightly-*", "--until", "2026-03-01", "--dry-run", "--json"
    ).json()
    assert [i["run_id"] for i in doc["removed"]] == ["old-a"]
    assert {i["run_id"]: i["reason"] for i in doc["kept"]} == {"old-b": "origin of run branch"}
    assert (doc["matching_run_count"], doc["total_run_count"]) == (2, 5)
    assert "would remove 1 run(s)" in dry.stdout and "considered 2 of 5 runs" in dry.stdout

    done = wfctl("gc", "--store", s, "-w", "nightly-*", "--until", "2026-03-01", "--json")
    assert [i["run_id"] for i in done.json()["removed"]] == ["old-a"]
    left = listed("--store", s)
    assert sorted(left) == ["branch", "mid-a", "old-b", "old-c"]
    failed = wfctl("gc", "--store", s, "--status", "failed", "--include-failed", "--json")
    assert [i["run_id"] for i in failed.json()["removed"]] == ["mid-a"]
    assert sorted(listed("--store", s)) == ["branch", "old-b", "old-c"]


@pytest.mark.parametrize("width", ["100", "60"])
def test_an_empty_column_goes_before_a_name_wraps_or_a_column_is_dropped(
    store: Path, width: str
) -> None:
    make_run(store, "20261206-013320-0a1b2c3d", "approve_order", JANUARY)
    make_run(store, "20261206-013321-4e5f6a7b", "approve_order", JANUARY + timedelta(minutes=1))
    shown = wfctl("runs", "--store", store, env={"COLUMNS": width})
    assert shown.code == 0, shown.stderr
    header = next(line for line in shown.stdout.splitlines() if "status" in line)
    assert "notes" not in header, shown.stdout  # no run has a note: its column goes first
    if width == "100":  # at 100 columns everything else fits, the name unwrapped
        assert "approve_order" in shown.stdout, shown.stdout
        for column in ("workflow", "seq", "updated", "age"):
            assert column in header, shown.stdout
    else:  # at 60 the columns of lowest rank go, but the empty one before them
        assert "updated" in header, shown.stdout
