"""``du``'s report over a source whose sizes name channels (as LangGraph's reader's do), and
what people see of it: a small :class:`Source` of the tests' own, a peer of the real readers."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from wfctl._errors import RunNotFoundError
from wfctl._inspect._lineage import LineageReport
from wfctl._render._usage import TOP_CHANNELS, print_usage
from wfctl._sources._protocol import (
    ClosingSource,
    Entry,
    KindSize,
    RunInfo,
    RunState,
    SizeInfo,
    Source,
)
from wfctl._sources._usage import UsageSort, disk_usage, local_bytes


def _info(run_id: str, workflow: str, status: RunState) -> RunInfo:
    return RunInfo(run_id, workflow, status, None, "", "", 0)


class ChannelSource(ClosingSource):
    """Three threads of a store with channels: sizes given, nothing else to read."""

    kind = "channels"
    location = "nowhere://"

    def __init__(self) -> None:
        self.sizes_asked: list[str | None] = []
        self._sizes = {
            "t-small": SizeInfo(
                "t-small", 300, 3, (KindSize("checkpoints", 3, 300),), None,
                (KindSize("messages", 2, 200), KindSize("__start__", 1, 100)),
            ),
            "t-big": SizeInfo(
                "t-big", 9000, 4,
                (KindSize("checkpoints", 2, 1000), KindSize("blobs", 2, 8000)), None,
                (KindSize("messages", 2, 8500), KindSize("draft", 1, 500)),
            ),
            "t-cut": SizeInfo(
                "t-cut", 500, 1, (KindSize("writes", 1, 500),), "blob v3 is cut short",
                tuple(KindSize(f"channel-{i:02}", 1, 10 + i) for i in range(TOP_CHANNELS)),
            ),
        }  # fmt: skip

    def runs(self, *, workflow: str | None = None) -> Iterator[RunInfo]:
        yield _info("t-small", "chat", "completed")
        yield _info("t-big", "chat", "paused")
        yield _info("t-cut", "draft", "failed")

    def records(self, run_id: str) -> Iterator[Entry]:
        raise AssertionError("du reads sizes, not records")

    def record(self, entry_id: str) -> Entry:
        raise AssertionError("du reads sizes, not records")

    def sizes(self, run_id: str | None = None) -> Iterator[SizeInfo]:
        self.sizes_asked.append(run_id)
        if run_id is None:
            yield from self._sizes.values()
        elif run_id in self._sizes:
            yield self._sizes[run_id]
        else:
            raise RunNotFoundError(run_id)

    def verify(self, run_id: str | None = None) -> LineageReport:
        return LineageReport(())


def test_the_fake_is_a_source() -> None:
    assert isinstance(ChannelSource(), Source)


def test_channels_are_totalled_largest_first() -> None:
    report = disk_usage(ChannelSource())
    assert [run.run_id for run in report.runs] == ["t-big", "t-cut", "t-small"]
    assert report.by_channel[:2] == (
        KindSize("messages", 4, 8700),
        KindSize("draft", 1, 500),
    )
    assert len(report.by_channel) == 3 + TOP_CHANNELS
    assert report.by_kind == (
        KindSize("blobs", 2, 8000),
        KindSize("checkpoints", 5, 1300),
        KindSize("writes", 1, 500),
    )
    assert (report.size_bytes, report.record_count, report.problem_count) == (9800, 8, 1)
    assert not report.ok
    assert report.store_size_bytes is None  # no local path: the source cannot say
    big = report.runs[0].to_json()
    assert big["channels"][0] == {"channel": "messages", "record_count": 2, "size_bytes": 8500}
    assert (big["workflow"], big["status"]) == ("chat", "paused")


def test_sort_limit_and_filters() -> None:
    source = ChannelSource()
    by_records = disk_usage(source, sort=UsageSort.RECORDS, limit=2)
    assert [run.run_id for run in by_records.runs] == ["t-big", "t-small"]
    assert by_records.matching_run_count == 3 and by_records.size_bytes == 9800
    smallest = disk_usage(source, reverse=True, limit=1)
    assert [run.run_id for run in smallest.runs] == ["t-small"]
    chat = disk_usage(source, workflow="ch*", statuses=["completed"])
    assert [run.run_id for run in chat.runs] == ["t-small"]
    assert chat.by_channel == (KindSize("messages", 2, 200), KindSize("__start__", 1, 100))
    named = disk_usage(source, ["t-cut", "t-small", "t-cut"], sort=UsageSort.NAME)
    assert [run.run_id for run in named.runs] == ["t-cut", "t-small"]
    assert source.sizes_asked[-2:] == ["t-cut", "t-small"]  # each asked once
    asked = len(source.sizes_asked)
    with pytest.raises(RunNotFoundError):
        disk_usage(source, ["t-big", "t-none"])
    assert source.sizes_asked[asked:] == ["t-none"]  # refused before anything is counted


def test_people_see_the_largest_channels(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("COLUMNS", "120")
    monkeypatch.setenv("NO_COLOR", "1")
    report = disk_usage(ChannelSource())
    print_usage(report, by_channel=True)
    text = capsys.readouterr().out
    assert text.index("t-big") < text.index("t-cut") < text.index("t-small")
    assert "9.0 kB" in text and "blob v3 is cut short" in text
    channels = text[text.index("by channel") :]
    assert channels.index("messages") < channels.index("draft") < channels.index("channel-19")
    assert "channel-00" not in text  # past the largest TOP_CHANNELS
    assert "3 more channel(s) (--json lists every one)" in text
    assert "1 run(s) could not be counted whole" in text
    print_usage(report)
    by_kind = capsys.readouterr().out
    by_kind = by_kind[by_kind.index("by kind") :]
    assert by_kind.index("blobs") < by_kind.index("checkpoints") < by_kind.index("writes")
    assert "messages" not in by_kind


def test_a_store_s_own_bytes_on_disk(tmp_path: Path) -> None:
    database = tmp_path / "checkpoints.sqlite"
    database.write_bytes(b"d" * 100)
    Path(f"{database}-wal").write_bytes(b"w" * 50)  # WAL mode: the newest pages are here
    Path(f"{database}-shm").write_bytes(b"s" * 7)
    assert local_bytes(str(database)) == 157
    assert local_bytes(f"langgraph+sqlite://{database}") == 157
    outside = tmp_path / "outside"
    outside.write_bytes(b"o" * 1000)
    store = tmp_path / "store"
    (store / "runs" / "r1").mkdir(parents=True)
    (store / "runs" / "r1" / "journal.jsonl").write_bytes(b"j" * 30)
    (store / "top.json").write_bytes(b"t" * 3)
    (store / "runs" / "link").symlink_to(outside)  # not followed out of the store
    assert local_bytes(str(store)) == 33
    assert local_bytes("postgresql://user:***@db.internal/wfctl") is None
    assert local_bytes(str(tmp_path / "missing")) is None
    assert local_bytes("agent-framework://") is None
