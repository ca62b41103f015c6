"""``wfctl copy`` through the installed executable, and the library's read-back check.

The source store is built once per module with every kind of record the engine writes: a
completed run, a paused one, one paused then answered, a failed one, one failed then cancelled,
one failed then retried, one retried by its policy, one interrupted (killed) and one restored by replay. Each test copies
it (or a copy of it) elsewhere.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import signal
import zlib
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from tests.cli.conftest import SAMPLES, WORKFLOWS, invoke, many_steps, run_id_of, wfctl
from tests.cli.test_cancel_rm import start_gated
from tests.conftest import traced_peak
from tests.inspect.helpers import rec
from wfctl._errors import CheckpointCorruptError
from wfctl._inspect._copy import CopyOutcome, _copy, copy_runs
from wfctl._records._checkpoint import KINDS, Checkpoint
from wfctl._storage import FileCheckpointStorage, InMemoryCheckpointStorage
from wfctl._storage._journal import encode_record
from wfctl._storage._protocol import RunJournal

REVIEW = WORKFLOWS / "review.py"


def _run(*args: str | Path, code: int) -> str:
    done = invoke(*args, "--json")
    assert done.code == code, done.stderr
    return run_id_of(done)


@pytest.fixture(scope="module")
def source(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A store holding a run of every kind of record (see the module's docstring)."""
    base = tmp_path_factory.mktemp("copy")
    store = base / "source"
    greet = _run("run", WORKFLOWS / "greet.py", "--store", store, code=0)
    _run("run", REVIEW, "--store", store, code=3)
    answered = _run("run", REVIEW, "--store", store, code=3)
    answers = ("-r", "0/request#0=yes", "-r", "1/request#0=3")
    _run("resume", answered, *answers, "--store", store, code=0)
    broken = base / "broken"
    broken.mkdir()
    _run("run", WORKFLOWS / "flaky.py", "--input", json.dumps(str(broken)), "--store", store,
         code=1)  # fmt: skip
    cancelled = _run("run", WORKFLOWS / "flaky.py", "--input", json.dumps(str(broken)),
                     "--store", store, code=1)  # fmt: skip
    assert invoke("cancel", cancelled, "--store", store).code == 0
    fixed = base / "fixed"
    fixed.mkdir()
    retried = _run("run", WORKFLOWS / "flaky.py", "--input", json.dumps(str(fixed)),
                   "--store", store, code=1)  # fmt: skip
    (fixed / "fixed").write_text("in")
    _run("resume", retried, "--store", store, code=0)
    _run("run", SAMPLES / "flaky_service.py", "--store", store, code=0)
    assert invoke("replay", "--checkpoint", f"{greet}.1", "--store", store).code == 0
    process, _ = start_gated(store, base, "killed")
    process.send_signal(signal.SIGKILL)
    process.communicate(timeout=60)
    return store


def _runs(store: Path | str) -> dict[str, Any]:
    done = wfctl("runs", "--store", store, "--json")
    assert done.code == 0, done.stderr
    return {r["run_id"]: r for r in done.json()["runs"]}


def _files(store: Path) -> dict[str, bytes]:
    """Every journal and end marker of a store, by its path under ``runs``."""
    return {
        str(path.relative_to(store)): path.read_bytes()
        for path in sorted((store / "runs").glob("*/*"))
        if path.name in ("journal.jsonl", "end.json")
    }


def _copy_json(*args: str | Path, code: int) -> Any:
    done = wfctl("copy", *args, "--json")
    assert done.code == code, done.stderr
    return done.json()


def test_every_record_copies_to_the_same_bytes(source: Path, tmp_path: Path) -> None:
    target = tmp_path / "target"  # does not exist yet: created
    report = _copy_json("--from", source, "--to", target, code=0)
    runs = _runs(source)
    kinds = {r["status"] for r in runs.values()}
    assert kinds == {"completed", "paused", "failed", "cancelled", "interrupted"}
    assert any(r["origin_run_id"] for r in runs.values())  # the restored run
    records = [json.loads(line) for data in _files(source).values() for line in data.splitlines()]
    assert {r["kind"] for r in records if "kind" in r} == set(KINDS)  # every kind of record
    assert any(r.get("data", {}).get("attempts") for r in records)  # a policy's retries
    assert report["copied_count"] == report["run_count"] == len(runs)
    assert {r["run_id"] for r in report["runs"]} == set(runs)
    assert all(r["written_count"] == r["checkpoint_count"] > 0 for r in report["runs"])
    assert _files(target) == _files(source)  # ids, chains, times, checksums, end markers
    assert _runs(target) == runs
    assert wfctl("verify-lineage", "--store", target).code == 0

    again = _copy_json("--from", source, "--to", target, code=0)
    assert again["already_copied_count"] == len(runs)
    assert {r["outcome"] for r in again["runs"]} == {"already_copied"}
    assert _files(target) == _files(source)


def test_copy_to_memory_reads_every_record_back(source: Path) -> None:
    report = _copy_json("--from", source, "--to", "memory:", code=0)
    assert report["destination"] == "memory:"
    assert report["copied_count"] == len(_runs(source))


def test_a_run_that_went_on_is_completed_in_the_destination(tmp_path: Path) -> None:
    store, target = tmp_path / "source", tmp_path / "target"
    run_id = _run("run", REVIEW, "--store", store, code=3)
    assert _copy_json("--from", store, "--to", target, code=0)["copied_count"] == 1
    before = _runs(target)[run_id]["head_seq"]
    _run("resume", run_id, "-r", "0/request#0=yes", "-r", "1/request#0=3", "--store", store,
         code=0)  # fmt: skip
    report = _copy_json("--from", store, "--to", target, run_id, code=0)
    [run] = report["runs"]
    assert run["outcome"] == "copied"
    assert run["written_count"] == run["checkpoint_count"] - before - 1 > 0
    assert _files(target) == _files(store)
    assert _runs(target)[run_id]["status"] == "completed"


def test_runs_that_cannot_be_copied_are_reported_and_the_others_copied(
    source: Path, tmp_path: Path
) -> None:
    store, target = tmp_path / "source", tmp_path / "target"
    shutil.copytree(source, store)
    ids = sorted(_runs(store))
    corrupt, conflict, leased, *fine = ids
    journal = store / "runs" / corrupt / "journal.jsonl"
    damaged = journal.read_bytes().replace(b'"kind":', b'"kind" :', 1)
    assert damaged != journal.read_bytes()
    journal.write_bytes(damaged)
    # Another run under the same id in the destination, and one run held there.
    assert invoke("run", WORKFLOWS / "greet.py", "--run-id", conflict, "--store", target).code == 0
    conflicting = _files(target)
    held = FileCheckpointStorage(target).lock_run(leased)
    try:
        done = wfctl("copy", "--from", store, "--to", target)
    finally:
        held.release()
    assert done.code == 1, done.stderr
    refused = {line.split()[2]: line for line in done.stderr.splitlines()}
    assert set(refused) == {corrupt, conflict, leased}
    assert "corrupt in the source" in refused[corrupt]
    assert "checksum mismatch" in refused[corrupt]
    assert "another run with this id is in the destination" in refused[conflict]
    assert "is locked by" in refused[leased]
    assert f"{len(fine)} run(s) copied, 0 there already, 3 not copied" in done.stdout
    copied = _files(target)
    assert {path: copied[path] for path in conflicting} == conflicting  # left as it was
    assert set(_runs(target)) == {conflict, *fine}
    # no copy's directory left behind (the leased run's is the lock's)
    assert sorted(p.name for p in (target / "runs").iterdir()) == sorted([conflict, leased, *fine])
    assert all(copied[p] == data for p, data in _files(store).items() if p.split("/")[1] in fine)


def test_a_file_in_a_run_s_place_in_the_destination_refuses_that_run_only(
    source: Path, tmp_path: Path
) -> None:
    target = tmp_path / "target"
    first, blocked, *rest = sorted(_runs(source))
    (target / "runs").mkdir(parents=True)
    (target / "runs" / blocked).write_text("not a run\n")
    # Was exit 2 with no document: the copy stopped at that run, the ones after it untried.
    document = _copy_json("--from", source, "--to", target, code=1)
    outcomes = {run["run_id"]: run["outcome"] for run in document["runs"]}
    assert outcomes == {first: "copied", blocked: "refused", **dict.fromkeys(rest, "copied")}
    [refusal] = [run["problem"] for run in document["runs"] if run["run_id"] == blocked]
    assert "exists in the destination, corrupt there" in refusal
    assert "run entry is a file, not a directory" in refusal
    assert (target / "runs" / blocked).read_text() == "not a run\n"  # left as it was


def test_a_run_running_in_the_source_is_not_copied(tmp_path: Path) -> None:
    store, target = tmp_path / "source", tmp_path / "target"
    done_id = _run("run", WORKFLOWS / "greet.py", "--store", store, code=0)
    process, gate = start_gated(store, tmp_path, "moving")
    try:
        report = _copy_json("--from", store, "--to", target, code=1)
    finally:
        (gate / "gate").write_text("go")
        process.communicate(timeout=60)
    outcomes = {r["run_id"]: r for r in report["runs"]}
    assert outcomes[done_id]["outcome"] == "copied"
    assert outcomes["moving"]["outcome"] == "refused"
    assert "running in the source" in outcomes["moving"]["problem"]
    assert set(_runs(target)) == {done_id}


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--from", "{source}", "--to", "{source}"], "is the source store itself"),
        (["--from", "{source}", "--to", "{source}/runs"], "is inside the source store"),
        (["--from", "{source}", "--to", "{source}/elsewhere"], "is inside the source store"),
        (["--from", "{missing}", "--to", "{target}"], "does not exist"),
        (["--from", "{source}", "--to", "{target}", "nope"], "run 'nope' not found"),
        (["--from", "{source}", "--to", "{target}", "../x"], "invalid run id"),
        (["--from", "{source}", "--to", "ftp://host/x"], "is not a store"),
        (["--to", "{target}"], "'wfctl copy' needs the option --from"),
    ],
)
def test_bad_stores_and_ids_copy_nothing(
    source: Path, tmp_path: Path, args: Sequence[str], message: str
) -> None:
    target = tmp_path / "target"
    names = {"source": source, "missing": tmp_path / "missing", "target": target}
    before = sorted(str(path.relative_to(source)) for path in source.rglob("*"))
    done = wfctl("copy", *(a.format(**names) for a in args), "--json")
    assert done.code == 2
    assert message in done.error_line()
    assert done.stdout == ""
    assert not target.exists()
    # A destination inside the source made directories among its runs (a 'runs' run that no
    # command could remove): the source is only read.
    assert sorted(str(path.relative_to(source)) for path in source.rglob("*")) == before


class _Misreading(InMemoryCheckpointStorage):
    """A destination that reads back another time than it was given (a lossy encoding)."""

    async def read_run(self, run_id: str) -> RunJournal:
        journal = await super().read_run(run_id)
        bent = [
            Checkpoint.from_dict({**c.to_dict(), "ts": c.timestamp.replace("+00:00", "Z")}, "x")
            for c in journal.checkpoints
        ]
        return RunJournal(run_id, tuple(bent), source=journal.source)


def test_a_copy_that_does_not_read_back_identical_is_refused(source: Path) -> None:
    [first, *_] = sorted(_runs(source))
    copied = asyncio.run(_copy(FileCheckpointStorage(source), _Misreading(), [first]))
    [run] = copied
    assert run.outcome == CopyOutcome.REFUSED
    assert run.problem is not None
    assert "does not verify" in run.problem
    assert f"{first}.0 does not read back" in run.problem


class _Refusing(InMemoryCheckpointStorage):
    """A destination that cannot hold the second record of a run (as a database might not)."""

    async def save(self, checkpoint: Checkpoint) -> None:
        if checkpoint.seq == 1:
            raise ValueError("unsupported Unicode escape sequence")
        await super().save(checkpoint)


def test_a_record_the_destination_refuses_is_reported_with_what_is_there(source: Path) -> None:
    [first, second, *_] = sorted(_runs(source))
    destination = _Refusing()
    copied = asyncio.run(_copy(FileCheckpointStorage(source), destination, [first, second]))
    assert [run.outcome for run in copied] == [CopyOutcome.REFUSED] * 2
    assert [run.written_count for run in copied] == [1, 1]
    assert copied[0].problem is not None
    assert f"the destination refused {first}.1: unsupported Unicode" in copied[0].problem
    assert "the 1 record(s) before it are there" in copied[0].problem


def test_a_file_destination_is_synced_per_run_not_per_record(
    source: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = tmp_path / "source"
    shutil.copytree(source, store)
    long_run = many_steps(store, 40)  # 42 records
    synced: dict[str, list[int]] = {}  # journal -> its size at each sync
    real = os.fdatasync

    def recorded(fd: int) -> None:
        real(fd)
        path = os.readlink(f"/proc/self/fd/{fd}")
        synced.setdefault(path, []).append(os.fstat(fd).st_size)

    monkeypatch.setattr(os, "fdatasync", recorded)
    target = tmp_path / "target"
    report = copy_runs(store, target)
    assert report.ok and report.count(CopyOutcome.COPIED) == len(_runs(store))
    journals = sorted((target / "runs").glob("*/journal.jsonl"))
    assert len(journals) == len(report.runs)

    def staged(journal: Path) -> str:  # where the copy wrote it, before renaming it into place
        run_id = journal.parent.name
        return str(target / "runs" / f".copying-{run_id}" / "runs" / run_id / "journal.jsonl")

    for journal in journals:  # every byte synced before the copy returned
        assert synced[staged(journal)][-1] == journal.stat().st_size, journal
    # the long run's steps were not synced one by one: once, whole
    assert len(synced[staged(target / "runs" / long_run / "journal.jsonl")]) == 1


def _long_store(
    root: Path, records: int, run_id: str = "long", data: dict[str, Any] | None = None
) -> Path:
    """A store holding one run, ``long``, of ``records`` records, written directly (each step
    record's data is ``data``)."""
    run_dir = root / "runs" / run_id
    run_dir.mkdir(parents=True)
    kinds = ["root"] + ["step"] * (records - 2) + ["completed"]
    data = {"result": "x" * 100} if data is None else data
    lines = (encode_record(rec(run_id, i, k, data=data if k == "step" else None))
             for i, k in enumerate(kinds))  # fmt: skip
    (run_dir / "journal.jsonl").write_bytes(b"".join(lines))
    return root


def verified_store(root: Path, records: int, run_id: str = "long") -> Path:
    """A store holding one completed run of ``records`` records that verifies."""
    return _long_store(root, records, run_id, {"steps": [], "note": "x" * 100})


def other_json(store: Path, run_id: str, seq: int) -> bytes:
    """Rewrite record ``seq`` as other JSON for the same record (a space, a ``\\u`` escape),
    its checksum recomputed: it verifies, and it is not what wfctl writes. Return the line."""
    journal = store / "runs" / run_id / "journal.jsonl"
    lines = journal.read_bytes().split(b"\n")
    body = lines[seq][: lines[seq].rindex(b',"crc":"')] + b"}"
    edited = body.replace(b'"note":"x', b'"note": "\\u0078', 1)
    assert edited != body
    lines[seq] = b'%s,"crc":"%08x"}' % (edited[:-1], zlib.crc32(edited))
    journal.write_bytes(b"\n".join(lines))
    return lines[seq]


def test_a_record_in_other_json_is_copied_as_its_bytes_or_refused(tmp_path: Path) -> None:
    source = verified_store(tmp_path / "source", 6)
    edited = other_json(source, "long", 3)
    assert wfctl("verify-lineage", "--store", source).code == 0  # a record as valid as any
    target = tmp_path / "target"
    # Was copied as wfctl would have written it: other bytes, another checksum, "copied".
    assert _copy_json("--from", source, "--to", target, code=0)["copied_count"] == 1
    journal = Path("runs", "long", "journal.jsonl")
    assert (target / journal).read_bytes() == (source / journal).read_bytes()
    assert edited in (target / journal).read_bytes().split(b"\n")
    # A store that keeps records, not bytes, cannot hold it as it is: refused, not "copied".
    done = wfctl("copy", "--from", source, "--to", "memory:")
    assert done.code == 1
    assert "long.3 does not read back as the source's record (other bytes" in done.stderr


def test_a_long_run_is_copied_in_memory_that_does_not_grow_with_it(tmp_path: Path) -> None:
    # Measured: 1.27 KB per record when the source's chain was read whole (and the copy read
    # back whole); none now (a peak of 4.6 MB from about 10,000 records on: a read chunk of
    # each journal). Bound: 100 B per record.
    peaks = []
    for records in (12_000, 24_000):
        source = _long_store(tmp_path / f"source-{records}", records)
        target = tmp_path / f"target-{records}"
        reports: list[Any] = []

        def copy(source: Path = source, target: Path = target, into: list[Any] = reports) -> None:
            into.append(copy_runs(source, target))

        peaks.append(traced_peak(copy))
        [run] = reports[0].runs
        assert (run.outcome, run.written_count) == (CopyOutcome.COPIED, records)
    assert (peaks[1] - peaks[0]) / 12_000 < 100, peaks


class ChangedWhileRead(FileCheckpointStorage):
    """A source whose run fails at seq ``failing`` as it is read (changed since verified)."""

    failing = 3

    def stored_chain(self, run_id: str) -> Any:
        records = super().stored_chain(run_id)
        for line, checkpoint in records:
            if checkpoint.seq == self.failing:
                raise CheckpointCorruptError("journal:4", "checksum mismatch")
            yield line, checkpoint


def test_a_source_that_fails_part_way_is_reported_with_what_was_written(tmp_path: Path) -> None:
    source = _long_store(tmp_path / "source", 10)
    copied = asyncio.run(_copy(ChangedWhileRead(source), InMemoryCheckpointStorage(), ["long"]))
    [run] = copied
    assert (run.outcome, run.checkpoint_count, run.written_count) == (CopyOutcome.REFUSED, 10, 3)
    assert run.problem == (
        "corrupt in the source: corrupt checkpoint data in journal:4: checksum mismatch; the 3 "
        "record(s) before it were written to the destination"
    )


def test_a_source_that_fails_part_way_leaves_nothing_in_a_file_store(tmp_path: Path) -> None:
    source = _long_store(tmp_path / "source", 10)
    target = FileCheckpointStorage(tmp_path / "target")
    [run] = asyncio.run(_copy(ChangedWhileRead(source), target, ["long"]))
    assert (run.outcome, run.checkpoint_count, run.written_count) == (CopyOutcome.REFUSED, 10, 0)
    assert run.problem == (
        "corrupt in the source: corrupt checkpoint data in journal:4: checksum mismatch; nothing "
        "of it was made visible in the destination"
    )
    assert os.listdir(tmp_path / "target" / "runs") == []  # its copy's directory too
