"""The read port on directories written by the real agent-framework (its functional workflows
with its own ``FileCheckpointStorage``): the conformance suite, pickled values never
unpickled, and how ``open_source`` tells the kinds of store apart."""

from __future__ import annotations

import asyncio
import base64
import contextlib
import json
import os
import pickle
import threading
import warnings
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import agent_framework as af  # the test extra installs it: missing, the tests fail
import pytest

from tests.sources.stores import fill
from wfctl import CheckpointNotFoundError, RunNotFoundError
from wfctl._errors import StoreLocationError
from wfctl._inspect._lineage import LineageReport
from wfctl.sources import RunInfo, Source, open_source
from wfctl.sources.testing import SourceConformance, directory_digest

#: The name agent-framework records for :class:`Thing` (allowed to be pickled on save).
THING = f"{__name__}:Thing"

#: How a pickle names the builtin ``open`` (``io.open``, ``_io.open`` from Python 3.12).
OPEN = f"{open.__module__}.open"


class Thing:
    """A step result JSON cannot hold: agent-framework pickles it."""

    def __init__(self, value: int) -> None:
        self.value = value


def workflows() -> dict[str, Any]:
    """The workflows, made with agent-framework's decorators (which warn that they are
    experimental: the warning is silenced here, not made an error)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")

        @af.step
        async def double(x: int) -> int:
            return x * 2

        @af.step
        async def make(x: int) -> Thing:
            return Thing(x)

        @af.step
        async def blob(i: int) -> str:
            return f"{i}:" + "y" * 100_000

        @af.workflow(name="fan")
        async def fan(n: int) -> list[int]:  # parallel steps: the known fork
            return list(await asyncio.gather(*(double(i) for i in range(n))))

        @af.workflow(name="review")
        async def review(n: int, ctx: Any) -> str:  # pauses for a person's answer
            await make(n)
            answer: str = await ctx.request_info("approve?", str)
            return answer

        @af.workflow(name="big")
        async def big(n: int) -> int:
            for i in range(n):
                await blob(i)
            return n

    return {"fan": fan, "review": review, "big": big}


def run_af(directory: Path, *calls: tuple[str, Any]) -> None:
    """Run each ``(workflow name, message)`` with agent-framework's own file storage."""
    made = workflows()

    async def main() -> None:
        storage = af.FileCheckpointStorage(directory, allowed_checkpoint_types=[THING])
        for name, message in calls:
            await made[name].build(checkpoint_storage=storage).run(message)

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the functional API says it is experimental
        asyncio.run(main())


@pytest.fixture(scope="module")
def af_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    directory = tmp_path_factory.mktemp("af")
    run_af(directory, ("fan", 3), ("review", 2))
    return directory


@pytest.fixture(scope="module")
def big_af_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    directory = tmp_path_factory.mktemp("af-big")
    run_af(directory, ("big", 20))
    return directory


class TestAgentFrameworkDirectory(SourceConformance):
    statuses = frozenset({"paused", "completed"})
    forks = True  # concurrent steps' saves fork the history (several roots)
    unknown_run_id = "no-such-workflow"
    unknown_record_id = "no-such-checkpoint"

    @pytest.fixture
    def source_under_test(self, af_dir: Path) -> Iterator[Source]:
        with open_source(af_dir) as source:
            assert source.kind == "agent-framework"
            yield source

    @pytest.fixture
    def store_digest(self, af_dir: Path, big_af_dir: Path) -> Callable[[], str]:
        return lambda: directory_digest(af_dir) + directory_digest(big_af_dir)

    @pytest.fixture
    def big_run(self, big_af_dir: Path) -> Iterator[tuple[Source, str, int]]:
        with open_source(f"agent-framework://{big_af_dir}") as source:
            (size,) = source.sizes("big")  # the workflow's one run, by its name
            yield source, size.run_id, size.size_bytes


def test_the_fork_is_a_verdict_problem_and_the_pause_is_seen(af_dir: Path) -> None:
    with open_source(af_dir) as source:
        runs = {r.workflow: r for r in source.runs()}
        assert runs["review"].status == "paused"
        assert runs["fan"].problem is not None and "roots" in runs["fan"].problem
        report = {v.workflow_name: v for v in source.verify().runs}
        assert not report["fan"].ok and report["review"].ok
        review = runs["review"].run_id
        (head,) = [e for e in source.records(review) if e.entry_id == runs["review"].head_id]
        assert head.kind == "request" and head.summary["pending_request_ids"]


def test_a_pickled_value_is_shown_as_an_opaque_marker(af_dir: Path) -> None:
    with open_source(af_dir) as source:
        text = json.dumps([e.data for e in source.records("review")])
    assert '"__pickled__"' not in text
    assert f'{{"$opaque": "pickle", "type": "{THING}", "bytes": ' in text


class _Plant:
    """Unpickled, creates the file it names."""

    def __init__(self, target: Path) -> None:
        self.target = target

    def __reduce__(self) -> tuple[Any, ...]:
        return (open, (str(self.target), "w"))


def hostile_copy(af_dir: Path, hostile: Path, target: Path) -> bytes:
    """Copy ``af_dir`` to ``hostile`` with a pickle in every checkpoint whose unpickling
    creates ``target`` (checked here, then removed); return the pickle."""
    hostile.mkdir()
    for file in af_dir.glob("*.json"):
        (hostile / file.name).write_bytes(file.read_bytes())
    payload = pickle.dumps(_Plant(target))
    pickle.loads(payload).close()  # the payload is hostile: unpickling it plants the file
    assert target.exists()
    target.unlink()
    marker = {"__pickled__": base64.b64encode(payload).decode(), "__type__": "builtins:open"}
    for file in hostile.glob("*.json"):  # every checkpoint carries it, as a step result would
        raw = json.loads(file.read_text())
        raw["state"]["_step_cache"]["planted"] = marker
        raw["pending_request_info_events"] = {"planted": marker}
        file.write_text(json.dumps(raw))
    return payload


def test_a_hostile_pickle_is_never_unpickled(af_dir: Path, tmp_path: Path) -> None:
    hostile = tmp_path / "af"
    target = tmp_path / "planted"
    payload = hostile_copy(af_dir, hostile, target)
    with open_source(hostile) as source:
        infos = list(source.runs())
        for info in infos:
            entries = list(source.records(info.run_id))
            for entry in entries:
                source.record(entry.entry_id)
                marker = entry.data["pending_request_info_events"]["planted"]
                assert marker["$opaque"] == "pickle" and marker["type"] == "builtins:open"
                assert marker["bytes"] == len(payload)
                assert marker["scan"]["globals"] == [OPEN]
                assert str(target) in marker["scan"]["strings"]
            list(source.sizes(info.run_id))
            source.verify(info.run_id)
        source.verify()
    assert not target.exists()


def test_records_are_not_read_through_a_link_out_of_the_directory(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    run_af(outside, ("fan", 2))
    inside = tmp_path / "inside"
    run_af(inside, ("review", 1))
    for file in outside.glob("*.json"):
        (inside / file.name).symlink_to(file)
    for i, file in enumerate(sorted(outside.glob("*.json"))[:3]):
        # Links that sort before every checkpoint: the directory is still detected by its own.
        (inside / f"!{i}.json").symlink_to(file)
    with open_source(inside) as source:
        with pytest.raises(RunNotFoundError):
            source.records("fan")
        for file in outside.glob("*.json"):
            with pytest.raises(CheckpointNotFoundError):
                source.record(file.stem)
        assert [r.workflow for r in source.runs()] == ["review"]


def test_a_record_stored_with_an_earlier_time_than_its_parent_still_follows_it(
    af_dir: Path, tmp_path: Path
) -> None:
    for file in af_dir.glob("*.json"):
        raw = json.loads(file.read_text())
        if raw["workflow_name"] == "review" and raw["previous_checkpoint_id"] is not None:
            raw["timestamp"] = "2000-01-01T00:00:00+00:00"  # a clock that went back
        (tmp_path / file.name).write_text(json.dumps(raw))
    with open_source(tmp_path) as source:
        entries = list(source.records("review"))
    assert [bool(e.parent_ids) for e in entries] == [False, True]
    assert entries[1].parent_ids == (entries[0].entry_id,)


def test_a_fifo_among_the_checkpoints_is_named_not_waited_on(af_dir: Path, tmp_path: Path) -> None:
    for file in af_dir.glob("*.json"):
        (tmp_path / file.name).write_bytes(file.read_bytes())
    fifo = tmp_path / "zz.json"
    os.mkfifo(fifo)
    listed: list[RunInfo] = []
    reports: list[LineageReport] = []

    def read() -> None:
        with open_source(tmp_path) as source:
            listed.extend(source.runs())
            reports.append(source.verify())

    reader = threading.Thread(target=read)
    reader.start()
    reader.join(timeout=60)
    if reader.is_alive():  # blocked opening the FIFO: let it go (each time) before failing
        while reader.is_alive():
            with contextlib.suppress(OSError):  # no reader waiting at this instant
                os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))
            reader.join(timeout=0.1)
        pytest.fail("reading the directory waited on a FIFO")
    (report,) = reports
    assert not report.ok
    assert report.runs[-1].run_id == "(unreadable files)"  # fan's forks are problems too
    assert report.runs[-1].problems == (
        "zz.json: not read: not a regular file (a FIFO, a device, ...)",
    )
    assert {r.workflow for r in listed} == {"fan", "review"}


def test_unknown_workflow_and_checkpoint(af_dir: Path) -> None:
    with open_source(af_dir) as source:
        with pytest.raises(RunNotFoundError):
            source.records("nope")
        with pytest.raises(CheckpointNotFoundError):
            source.record("nope")


# --- detection ----------------------------------------------------------------------------


def test_each_kind_is_detected_from_its_path(af_dir: Path, tmp_path: Path) -> None:
    store = tmp_path / "store"
    asyncio.run(fill(str(store)))
    with open_source(store) as wfctl_source, open_source(af_dir) as af_source:
        assert (wfctl_source.kind, af_source.kind) == ("wfctl-file", "agent-framework")
    with open_source(f"agent-framework://{af_dir}") as named:
        assert named.kind == "agent-framework" and named.location == str(af_dir)


def test_a_server_url_is_opened_without_connecting_and_its_password_is_hidden() -> None:
    with open_source("postgresql://ann:s3cret@127.0.0.1:1/db") as source:
        assert source.kind == "wfctl-postgresql"
        assert "s3cret" not in source.location and "***" in source.location


@pytest.mark.parametrize(
    ("make", "reason"),
    [
        (lambda d: d / "missing", "does not exist"),
        (lambda d: d, "is not a store of a kind wfctl reads"),
        (lambda d: d / "other.json", "is not a store of a kind wfctl reads"),
    ],
)
def test_what_is_no_store_is_refused_in_one_line(
    tmp_path: Path, make: Callable[[Path], Path], reason: str
) -> None:
    (tmp_path / "other.json").write_text('{"name": "not a checkpoint"}')
    location = make(tmp_path)
    before = sorted(p.name for p in tmp_path.iterdir())
    with pytest.raises(StoreLocationError, match=reason) as caught:
        open_source(location)
    assert "\n" not in str(caught.value)
    assert sorted(p.name for p in tmp_path.iterdir()) == before  # nothing created


def test_an_unknown_scheme_is_refused() -> None:
    with pytest.raises(StoreLocationError, match="is not a source wfctl reads"):
        open_source("sqlite:///tmp/x.db")


def test_detection_reads_at_most_a_few_files(tmp_path: Path) -> None:
    for i in range(5):
        (tmp_path / f"{i}.json").write_text("{}")
    body = {"workflow_name": "w", "checkpoint_id": "z", "previous_checkpoint_id": None}
    (tmp_path / "z.json").write_text(json.dumps(body | {"timestamp": "t", "state": {}}))
    with pytest.raises(StoreLocationError):  # the checkpoint is past the files read
        open_source(tmp_path)


def test_sizes_and_runs_read_each_checkpoint_file_once(
    af_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A checkpoint's bytes by part are measured in the one read that indexes it, not found
    by reading the file again."""
    from wfctl._inspect import _af_lineage  # the directory's one reader, counted
    from wfctl._sources import _agent_framework

    read: list[Path] = []
    real = _af_lineage.read_regular_file

    def counted(path: Path) -> bytes:
        read.append(path)
        return real(path)

    with open_source(af_dir) as source:  # detection's own reads are not the count
        monkeypatch.setattr(_af_lineage, "read_regular_file", counted)
        monkeypatch.setattr(_agent_framework, "read_regular_file", counted)
        sizes = list(source.sizes())
    files = sorted(af_dir.glob("*.json"))
    assert sorted(read) == files
    review = next(size for size in sizes if size.run_id.startswith(_first_id(af_dir, "review")))
    kinds = {kind.kind: kind for kind in review.by_kind}
    assert set(kinds) == {"checkpoint", "state", "requests", "step_cache"}  # it paused
    assert kinds["checkpoint"].record_count == review.record_count == 2
    assert sum(kind.size_bytes for kind in review.by_kind) <= review.size_bytes
    assert [c.kind for c in review.by_channel] == ["step make"]
    assert sum(size.size_bytes for size in sizes) == sum(file.stat().st_size for file in files)
    with open_source(af_dir) as source:
        read.clear()  # detection's own reads are not the count
        listed = list(source.runs())  # judged by verify's rules from the same read
    assert sorted(read) == files and all(info.problem or info.workflow != "fan" for info in listed)


def _first_id(directory: Path, workflow: str) -> str:
    """The id of ``workflow``'s root checkpoint in ``directory`` (its one run's id)."""
    for file in directory.glob("*.json"):
        raw = json.loads(file.read_text())
        if raw["workflow_name"] == workflow and raw["previous_checkpoint_id"] is None:
            return str(raw["checkpoint_id"])
    raise AssertionError(workflow)
