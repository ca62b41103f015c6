"""Hostile and broken input: every read path names what it cannot trust, and trusts nothing blindly.

A healthy store holds two runs of the harness pipeline: ``other`` (completed) and, newer,
``target`` (paused at its request, 10 records). Each case copies it and breaks ``target`` one
of 31 ways (``hostile_cases.KINDS``: a line truncated, bit-flipped or zeroed mid-file; a record
deleted, duplicated, swapped, borrowed from another run, from a future format version or from an
older one than its run's, nested 10^5 deep, naming a traversal id; a broken or stale last record; a broken or missing root; the
last whole records cut off (a journal that ends before its end marker); the journal replaced by
a symbolic link, a FIFO or a directory; unknown type tags and unregistered class names inside
``data``), then
runs one read path on it: ``load`` (a middle and the head checkpoint), ``load_chain``,
``list_checkpoints``, ``read_run``, ``get_latest`` (for the run, and for the whole store),
``list_runs``, ``Workflow.run(checkpoint_id=...)`` to resume the head and to restore a middle
checkpoint, ``wfctl._inspect._replay.replay`` and ``verify_lineage``.

Each path either gives the right answer (it does not read the broken part: the same answer as
on the healthy store, never older data) or reports the problem by name: a
``CheckpointCorruptError`` naming the journal (``journal.jsonl:<line>`` when it read the whole
file), a ``problems`` entry, a ``corrupt`` run in ``list_runs``, a failed lineage verdict, or a
run that fails with ``CheckpointCorruptError`` when a value inside a record cannot be decoded.
A path that refuses executes no step and writes nothing. Separate tests cover malformed ids,
a 50 MB result and payloads that name modules (nothing is ever imported or executed); the same
cases through the ``wfctl`` command are in ``test_hostile_cli``.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from tests.harness import harness_workload as W
from tests.harness.hostile_cases import (
    KINDS,
    MID_ID,
    MID_LINE,
    OTHER,
    RUN,
    Baseline,
    Kind,
    break_store,
    edit_record,
    line_edit,
    set_result,
)
from wfctl import CheckpointCorruptError, FileCheckpointStorage, InvalidIdError, WfctlError
from wfctl._inspect._lineage import verify_lineage
from wfctl._inspect._replay import replay

REPO = Path(__file__).resolve().parents[2]


# --- the read paths ---------------------------------------------------------------------------


@dataclass
class Context:
    """What a read path gets: the broken store, and what it must not do to it."""

    base: Baseline
    store: Path
    executed: list[str] = field(default_factory=list)

    def storage(self) -> FileCheckpointStorage:
        return FileCheckpointStorage(self.store)

    def workflow(self) -> Any:
        W.HOOKS.ledger = self.executed.append
        return W.pipeline.build(checkpoint_storage=self.storage())


def _load_mid(ctx: Context) -> Any:
    return asyncio.run(ctx.storage().load(f"{RUN}.3")).checkpoint_id


def _load_head(ctx: Context) -> Any:
    return asyncio.run(ctx.storage().load(ctx.base.head_id)).checkpoint_id


def _load_chain(ctx: Context) -> Any:
    return [c.checkpoint_id for c in asyncio.run(ctx.storage().load_chain(RUN))]


def _list_checkpoints(ctx: Context) -> Any:
    return [c.checkpoint_id for c in asyncio.run(ctx.storage().list_checkpoints(run_id=RUN))]


def _read_run(ctx: Context) -> Any:
    return asyncio.run(ctx.storage().read_run(RUN))


def _get_latest_run(ctx: Context) -> Any:
    head = asyncio.run(ctx.storage().get_latest(run_id=RUN))
    return head.checkpoint_id if head else None


def _get_latest_all(ctx: Context) -> Any:
    head = asyncio.run(ctx.storage().get_latest())
    return head.checkpoint_id if head else None


def _list_runs(ctx: Context) -> Any:
    return asyncio.run(ctx.storage().list_runs())


def _resume(ctx: Context) -> Any:
    wf = ctx.workflow()
    return asyncio.run(wf.run(checkpoint_id=ctx.base.head_id, responses={"approve": "yes"}))


def _restore(ctx: Context) -> Any:
    return asyncio.run(ctx.workflow().run(checkpoint_id=MID_ID))


def _replay(ctx: Context) -> Any:
    return asyncio.run(replay(ctx.workflow(), MID_ID))


def _verify(ctx: Context) -> Any:
    return asyncio.run(verify_lineage(ctx.storage(), [RUN]))


PATHS: dict[str, Callable[[Context], Any]] = {
    "load-mid": _load_mid,
    "load-head": _load_head,
    "load_chain": _load_chain,
    "list_checkpoints": _list_checkpoints,
    "read_run": _read_run,
    "get_latest-run": _get_latest_run,
    "get_latest-all": _get_latest_all,
    "list_runs": _list_runs,
    "resume": _resume,
    "restore": _restore,
    "replay": _replay,
    "verify_lineage": _verify,
}
#: Paths that read (and verify) the whole journal; the others read only its root and head.
#: ``list_runs`` reads the whole journal too, but checks only each record's checksum and chain
#: link, not its data (see ``LINKS_ONLY``).
WHOLE = {
    "load-mid",
    "load-head",
    "load_chain",
    "list_checkpoints",
    "read_run",
    "resume",
    "restore",
    "replay",
    "verify_lineage",
}
#: Paths that decode the values inside records (the engine's); storages hand data on as is.
DECODING = {"resume", "restore", "replay"}
#: Breaks that leave a middle record's checksum and chain link intact (only its JSON cannot
#: be decoded): ``list_runs``, which checks every checksum and link without parsing the data
#: of records in the middle, does not read them.
LINKS_ONLY = {"deep-nesting-mid", "nan-mid"}


def _reads_broken_part(kind: Kind, path: str) -> bool:
    if kind.region in ("value", "input"):
        return path in DECODING
    if kind.region == "payload":  # the verifier reads every record's data as its kind's
        return path in DECODING or path == "verify_lineage"
    if path == "list_runs":
        return kind.name not in LINKS_ONLY
    if kind.region in ("mid", "chain"):
        return path in WHOLE
    if kind.region in ("root", "root-chain"):
        return path in WHOLE
    return True  # head, file


def _assert_correct(ctx: Context, path: str, kind: Kind, answer: Any) -> None:
    """The path did not read the broken part: it must answer as on the healthy store."""
    base = ctx.base
    expected: dict[str, Any] = {
        "load-mid": f"{RUN}.3",
        "load-head": base.head_id,
        "load_chain": base.ids,
        "list_checkpoints": base.ids,
        "get_latest-run": base.head_id,
        "get_latest-all": base.latest_all,
    }
    if path in expected:
        assert answer == expected[path]
    elif path == "read_run":
        assert answer.problems == () and [c.checkpoint_id for c in answer.checkpoints] == base.ids
    elif path == "list_runs":
        assert [(s.run_id, s.status, s.head_checkpoint_id) for s in answer] == base.runs
    elif path == "verify_lineage":
        assert answer.ok, answer.runs
    else:  # pragma: no cover - every decoding path reads the broken part of a value kind
        raise AssertionError(f"{path} has no healthy answer to compare with")


def _assert_named(
    ctx: Context, path: str, kind: Kind, answer: Any, error: Exception | None
) -> None:
    """The path read the broken part: it must name the problem, and trust nothing."""
    journal = str(ctx.store / "runs" / RUN / "journal.jsonl")
    run_dir = str(ctx.store / "runs" / RUN)
    line = f"{journal}:{kind.line}" if kind.line and path in WHOLE else None
    if kind.region in ("value", "input") or (kind.region == "payload" and path in DECODING):
        _assert_value_refused(ctx, path, kind, answer, error)
        return
    if path == "read_run" and kind.region in ("chain", "tail-chain", "root-chain"):
        # read_run reports records, not their order: every record verifies, and it shows the
        # duplicate or the gap as it is for the strict readers and the verifier to judge.
        assert error is None and answer.problems == ()
        assert [c.checkpoint_id for c in answer.checkpoints] != ctx.base.ids
        return
    if path == "read_run":
        assert error is None, error
        text = "\n".join(map(str, answer.problems))
        assert answer.problems and (line or run_dir) in text, answer.problems
        return
    if path == "list_runs":
        assert error is None, error
        target = [s for s in answer if s.run_id == RUN]
        assert len(target) == 1 and target[0].status == "corrupt", answer
        assert target[0].problem and run_dir in target[0].problem
        assert [(s.run_id, s.status) for s in answer if s.run_id != RUN] == [(OTHER, "completed")]
        return
    if path == "verify_lineage":
        assert error is None, error
        (verdict,) = answer.runs
        assert not verdict.ok and verdict.problems
        if line:
            assert any(line in p for p in verdict.problems), verdict.problems
        return
    assert isinstance(error, CheckpointCorruptError), (answer, error)
    message = str(error)
    assert (line or run_dir) in message, message
    assert ctx.executed == [], "a refused path executed steps"


def _assert_value_refused(
    ctx: Context, path: str, kind: Kind, answer: Any, error: Exception | None
) -> None:
    """A value inside a valid record cannot be decoded: the run must fail naming it."""
    if path == "replay" and error is None:
        assert answer.replay_status == "failed", answer
        # an unregistered class is named by its own subclass of CheckpointCorruptError
        expected = "UnregisteredTypeError" if kind.name == "unregistered-class" else None
        assert answer.error_type == (expected or "CheckpointCorruptError"), answer.error
        message = answer.error or ""
    elif error is None:
        assert answer.status == "failed", answer
        assert isinstance(answer.error, CheckpointCorruptError), answer.error
        message = str(answer.error)
    else:
        assert isinstance(error, CheckpointCorruptError), error
        message = str(error)
    where = f"{RUN}.0" if kind.region == "input" else "s3"
    assert where in message or f"{RUN}.4" in message or "stage#3" in message, message
    # The step whose record is broken is never silently executed again in its place.
    assert "s3" not in ctx.executed, ctx.executed


@pytest.mark.parametrize("path", list(PATHS))
@pytest.mark.parametrize("kind", KINDS, ids=[k.name for k in KINDS])
def test_broken_input_is_named_by_every_read_path(
    baseline: Baseline, kind: Kind, path: str, tmp_path: Path
) -> None:
    store = break_store(baseline, kind, tmp_path)
    ctx = Context(baseline, store)
    journal = store / "runs" / RUN / "journal.jsonl"
    before = journal.read_bytes() if journal.is_file() and not journal.is_symlink() else None
    runs_before = sorted(os.listdir(store / "runs"))
    answer: Any = None
    error: Exception | None = None
    try:
        answer = PATHS[path](ctx)
    except WfctlError as exc:
        error = exc
        if failure := getattr(exc, "wfctl_result", None):  # the run began, then failed
            answer, error = failure, None
    finally:
        W.HOOKS.reset()
    if _reads_broken_part(kind, path):
        _assert_named(ctx, path, kind, answer, error)
    else:
        assert error is None, error
        _assert_correct(ctx, path, kind, answer)
    if error is not None:  # refused: nothing written, no run created
        if before is not None:
            assert journal.read_bytes() == before
        assert sorted(os.listdir(store / "runs")) == runs_before


# --- ids -------------------------------------------------------------------------------------

BAD_IDS = [
    "../target",
    "..",
    "a/b",
    "a\\b",
    "x\0y",
    "/etc/passwd",
    "target/../other",
    "",
    " ",
    "t.1",
]
BAD_CHECKPOINT_IDS = [
    *("../target.1", "target/../other.1", "x\0y.1", "target", "target.-1", ".1"),
    *("target.01", "target.00"),  # target's checkpoint 1 and root, under an id no record has
]


def _id_paths(ctx: Context) -> dict[str, Callable[[str], Any]]:
    storage = ctx.storage()
    return {
        "get_latest": lambda rid: asyncio.run(storage.get_latest(run_id=rid)),
        "read_run": lambda rid: asyncio.run(storage.read_run(rid)),
        "load_chain": lambda rid: asyncio.run(storage.load_chain(rid)),
        "list_checkpoints": lambda rid: asyncio.run(storage.list_checkpoints(run_id=rid)),
        "delete_run": lambda rid: asyncio.run(storage.delete_run(rid)),
        "lock_run": storage.lock_run,
        "request_pause": lambda rid: asyncio.run(storage.request_pause(rid)),
        "lease_run": lambda rid: asyncio.run(storage.lease_run(rid)),
        "pause_requested": storage.pause_requested,
        "new run": lambda rid: asyncio.run(ctx.workflow().run(W.spec_for(1), run_id=rid)),
        "verify_lineage": lambda rid: asyncio.run(verify_lineage(storage, [rid])),
    }


def _checkpoint_paths(ctx: Context) -> dict[str, Callable[[str], Any]]:
    storage = ctx.storage()
    paths: dict[str, Callable[[str], Any]] = {
        "load": lambda cid: asyncio.run(storage.load(cid)),
        "delete": lambda cid: asyncio.run(storage.delete(cid)),
        "run(checkpoint_id)": lambda cid: asyncio.run(ctx.workflow().run(checkpoint_id=cid)),
    }
    if replay is not None:
        paths["replay"] = lambda cid: asyncio.run(replay(ctx.workflow(), cid))
    return paths


@pytest.mark.parametrize("bad", BAD_IDS, ids=repr)
def test_malformed_run_ids_are_refused_by_name(
    baseline: Baseline, bad: str, tmp_path: Path
) -> None:
    store = break_store(baseline, Kind("none", "none", lambda *a: None), tmp_path)
    ctx = Context(baseline, store)
    before = sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*"))
    for name, call in _id_paths(ctx).items():
        with pytest.raises(InvalidIdError) as info:
            call(bad)
        assert repr(bad)[1:-1] in str(info.value) or bad == "", (name, str(info.value))
    assert sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*")) == before
    assert ctx.executed == []


@pytest.mark.parametrize("bad", BAD_CHECKPOINT_IDS, ids=repr)
def test_malformed_checkpoint_ids_are_refused_by_name(
    baseline: Baseline, bad: str, tmp_path: Path
) -> None:
    store = break_store(baseline, Kind("none", "none", lambda *a: None), tmp_path)
    ctx = Context(baseline, store)
    before = sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*"))
    for name, call in _checkpoint_paths(ctx).items():
        with pytest.raises(InvalidIdError) as info:
            call(bad)
        assert repr(bad)[1:-1] in str(info.value), (name, str(info.value))
    assert sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*")) == before
    assert ctx.executed == []


def test_directories_with_unsafe_names_are_ignored_by_listings(
    baseline: Baseline, tmp_path: Path
) -> None:
    store = break_store(baseline, Kind("none", "none", lambda *a: None), tmp_path)
    for name in ("..hidden", "a.b", "with space", "-dash", "x" * 101):
        shutil.copytree(store / "runs" / RUN, store / "runs" / name)
    storage = FileCheckpointStorage(store)
    runs = asyncio.run(storage.list_runs())
    assert [(s.run_id, s.status, s.head_checkpoint_id) for s in runs] == baseline.runs
    latest = asyncio.run(storage.get_latest())
    assert latest is not None and latest.checkpoint_id == baseline.latest_all


# --- no code runs on load --------------------------------------------------------------------

EVIL_MODULE = "wfctl_harness_evil_payload"


@pytest.mark.parametrize(
    "payload",
    [
        {"$t": "dataclass", "n": f"{EVIL_MODULE}.Evil", "v": {}},
        {"$t": "model", "n": f"{EVIL_MODULE}.Evil", "v": {}},
        {"$t": EVIL_MODULE, "v": "Evil"},
        {"$t": "dataclass", "n": "os.system", "v": {"command": "touch pwned"}},
        {"$t": "model", "n": "subprocess.Popen", "v": {"args": ["touch", "pwned"]}},
        {"py/object": f"{EVIL_MODULE}.Evil", "__reduce__": ["os.system", ["touch pwned"]]},
    ],
    ids=["dataclass-module", "model-module", "tag-module", "os.system", "Popen", "pickle-like"],
)
def test_loading_never_imports_or_runs_what_the_data_names(
    baseline: Baseline, payload: dict[str, Any], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A module that, if ever imported, leaves a file behind.
    plant = tmp_path / "plant"
    plant.mkdir()
    side_effect = tmp_path / "imported"
    (plant / f"{EVIL_MODULE}.py").write_text(
        f"open({str(side_effect)!r}, 'w').close()\nclass Evil:\n    pass\n"
    )
    monkeypatch.syspath_prepend(str(plant))
    monkeypatch.chdir(tmp_path)
    kind = Kind(
        "evil", "value", line_edit(MID_LINE - 1, lambda b: edit_record(b, set_result(payload)))
    )
    store = break_store(baseline, kind, tmp_path)
    for path in PATHS.values():  # warm up: the engine's own lazy imports happen here
        ctx = Context(
            baseline,
            break_store(
                baseline, Kind("x", "x", lambda *a: None), tmp_path / f"warm-{path.__name__}"
            ),
        )
        try:
            path(ctx)
        except WfctlError:
            pass
        finally:
            W.HOOKS.reset()
    modules = set(sys.modules)
    for path in PATHS.values():
        ctx = Context(baseline, store)
        try:
            path(ctx)
        except Exception as exc:  # a refusal, or a run that failed on the value it was served
            if not isinstance(exc, WfctlError) and not hasattr(exc, "wfctl_result"):
                raise
        finally:
            W.HOOKS.reset()
    assert set(sys.modules) - modules == set()
    assert EVIL_MODULE not in sys.modules
    assert not side_effect.exists()
    assert not (tmp_path / "pwned").exists()


# --- a 50 MB result --------------------------------------------------------------------------

HUGE = """
import asyncio, json, resource, sys
from tests.harness import harness_workload as W
from wfctl import FileCheckpointStorage, step, workflow

store = sys.argv[1]
size = 50 * 1024 * 1024

@step
async def big() -> str:
    return "x" * size

@workflow(name="huge")
async def huge() -> int:
    return len(await big())

def rss():
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024

async def main():
    storage = FileCheckpointStorage(store)
    wf = huge.build(checkpoint_storage=storage)
    first = await wf.run(run_id="huge")
    peaks = {"run": rss()}
    head = await storage.get_latest(run_id="huge"); peaks["get_latest"] = rss()
    runs = await storage.list_runs(); peaks["list_runs"] = rss()
    chain = await storage.load_chain("huge"); peaks["load_chain"] = rss()
    del chain
    again = await wf.run(checkpoint_id="huge.1", new_run=True); peaks["restore"] = rss()
    print(json.dumps({"first": first.get_outputs(), "again": again.get_outputs(),
                      "cached": list(again.cached), "status": [s.status for s in runs],
                      "head": head.kind, "peaks": peaks}))

asyncio.run(main())
"""


def test_a_50_mb_result_round_trips_with_bounded_memory(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-c", HUGE, str(tmp_path / "store")],
        capture_output=True,
        text=True,
        cwd=REPO,
        env={**os.environ, "PYTHONPATH": str(REPO)},
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout)
    size = 50 * 1024 * 1024
    assert out["first"] == out["again"] == [size]
    assert out["cached"] == ["big#0"]  # served from the record, not recomputed
    assert out["status"] == ["completed"] and out["head"] == "completed"
    # The value, its JSON line and a decoded copy may be alive at once; a read that held many
    # copies (or read the journal over and over) would show up here.
    assert max(out["peaks"].values()) < 8 * size, out["peaks"]
