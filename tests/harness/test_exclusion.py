"""One run, one writer, even when the files beside the journal are deleted or the journal moved.

A run's lock is a ``flock`` on its journal's own open file description, so no side file can
release it, and every append first checks that the journal at its path is still the file (and
the length) this process left. Each attack below runs against a real ``wfctl`` process holding
a run at a chosen step (``WFCTL_HARNESS_HOLD``), from another process or by hand:

- the lock file (and ``owner.json``) deleted, then ``wfctl resume RUN`` from a second shell, at
  several moments (right after the root, mid-way through the first run, in the gather after an
  answer, at the last step): the second process is refused with ``RunLockedError`` and the run
  completes once, every step executed once, one chain;
- the journal replaced by a copy of itself, or its run directory moved away: the holder's next
  append is refused (``JournalChangedError``, exit 2, one line naming the journal), it executes
  no further step and writes nothing, and the run can then be resumed to completion;
- a body that swallows the refusal (``except Exception``) still executes no further step, and
  the run ends with the refusal;
- two storages appending to one journal without a lock (a library user's mistake): the second
  writer's stale cached head is refused instead of forking the chain.

Cross-process synchronisation is by marker files (``holding-<pid>``, ``release``), never by
sleeping for a guessed time.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.conftest import wfctl_executable
from tests.harness import harness_workload as W
from tests.harness.checks import assert_lineage_ok, completed_output, read_state
from tests.harness.test_contention import holders, paused_run, spawn, wait_until
from tests.storage.helpers import ckpt
from wfctl import FileCheckpointStorage, JournalChangedError, step, workflow

RUN = "stolen"
SPEC = W.spec_for(11, pause=False)
PAUSED_SPEC = W.spec_for(5)

pytestmark = pytest.mark.skipif(os.name != "posix", reason="uses flock and real processes")


def _ledger(signals: Path) -> list[tuple[str, str]]:
    path = signals / "ledger.txt"
    if not path.exists():
        return []
    return [tuple(line.split()) for line in path.read_text().splitlines()]  # type: ignore[misc]


def _start_holder(
    procs: list[subprocess.Popen[str]], store: Path, signals: Path, phase: str, label: str
) -> tuple[subprocess.Popen[str], dict[str, object]]:
    """Start a ``wfctl`` process that drives RUN and holds inside step ``label``.

    ``phase`` ``run``: a fresh run (no pause); ``resume``: the answer to a paused run.
    Returns the process and the spec whose output the run must end with.
    """
    env = {W.HOLD_ENV: f"{label}={signals}", W.LEDGER_ENV: str(signals / "ledger.txt")}
    if phase == "run":
        args = ["run", "tests.harness.harness_workload:pipeline", "--input", json.dumps(SPEC)]
        args += ["--run-id", RUN]
        spec = SPEC
    else:
        paused_run(store, RUN)
        args = ["resume", RUN, "--response", "approve=yes"]
        spec = PAUSED_SPEC
    proc = spawn(
        procs, wfctl_executable(), *args, "--store", str(store), **env, WFCTL_HARNESS_ATTEMPT="A"
    )
    wait_until(lambda: holders(signals), f"the holder to reach {label}", procs)
    return proc, spec


def _resume_from_another_shell(
    procs: list[subprocess.Popen[str]], store: Path, signals: Path
) -> subprocess.Popen[str]:
    """``wfctl resume RUN`` with no answer: a retry of what looks like an interrupted run."""
    env = {W.LEDGER_ENV: str(signals / "ledger.txt"), "WFCTL_HARNESS_ATTEMPT": "B"}
    return spawn(procs, wfctl_executable(), "resume", RUN, "--store", str(store), **env)


@pytest.mark.parametrize(
    ("phase", "label", "remove"),
    [
        ("run", "s0", ("lock",)),
        ("run", "s5", ("lock", "owner.json")),
        ("resume", "g1", ("lock",)),
        ("resume", "final", ("lock", "owner.json")),
    ],
    ids=["run-first-step", "run-mid-way-no-owner", "resume-gather", "resume-last-step-no-owner"],
)
def test_a_deleted_lock_file_lets_no_second_process_drive_the_run(
    tmp_path: Path,
    children: list[subprocess.Popen[str]],
    phase: str,
    label: str,
    remove: tuple[str, ...],
) -> None:
    store, signals = tmp_path / "store", tmp_path / "signals"
    signals.mkdir()
    holder, spec = _start_holder(children, store, signals, phase, label)
    for name in remove:
        (store / "runs" / RUN / name).unlink(missing_ok=True)
    second = _resume_from_another_shell(children, store, signals)
    out, err = second.communicate(timeout=60)
    assert second.returncode == 2, (out, err)
    lines = err.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in err, err
    assert "locked by" in lines[0], err
    if "owner.json" not in remove:
        assert f"pid {holder.pid}" in lines[0], err
    (signals / "release").write_text("go")
    out, err = holder.communicate(timeout=60)
    assert holder.returncode == 0, (out, err)
    state = read_state(store, RUN)  # one linear chain, no problem
    kinds = [c.kind for c in state.journal.checkpoints]  # type: ignore[union-attr]
    assert kinds.count("completed") == 1 and kinds[-1] == "completed"
    assert set(state.committed.values()) == {1}
    assert completed_output(state) == W.reference(spec)[1]
    executed = [step for who, step in _ledger(signals)]
    after = W.labels(spec) if phase == "run" else ["g0", "g1", "g2", "g3", "final"]
    assert sorted(executed) == sorted(after), executed  # every step once, none by B
    assert_lineage_ok(store, [RUN])


def _replace_journal(store: Path) -> None:
    journal = store / "runs" / RUN / "journal.jsonl"
    copy = journal.with_name("journal.copy")
    shutil.copyfile(journal, copy)
    os.replace(copy, journal)


def _move_run_dir(store: Path) -> None:
    os.rename(store / "runs" / RUN, store / "runs" / f"{RUN}-moved")


@pytest.mark.parametrize("attack", [_replace_journal, _move_run_dir], ids=["replaced", "moved"])
def test_a_holder_whose_journal_was_swapped_stops_before_writing(
    tmp_path: Path, children: list[subprocess.Popen[str]], attack: object
) -> None:
    store, signals = tmp_path / "store", tmp_path / "signals"
    signals.mkdir()
    holder, _ = _start_holder(children, store, signals, "run", "s3")
    attack(store)  # type: ignore[operator]
    run_dir = store / "runs" / RUN
    if not run_dir.exists():  # moved: put the moved run back as a copy, for readers to find
        shutil.copytree(store / "runs" / f"{RUN}-moved", run_dir)
    before = (run_dir / "journal.jsonl").read_bytes()
    (signals / "release").write_text("go")
    out, err = holder.communicate(timeout=60)
    assert holder.returncode == 2, (out, err)
    lines = err.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in err, err
    assert "journal" in lines[0] and "refusing to append" in lines[0], err
    # Nothing reached the journal readers see, and no step ran after the refused commit.
    assert (run_dir / "journal.jsonl").read_bytes() == before
    executed = [step for who, step in _ledger(signals)]
    assert executed == ["s0", "s1", "s2", "s3"], executed
    # The run is intact where readers look, and a new process finishes it.
    resumed = _resume_from_another_shell(children, store, signals)
    out, err = resumed.communicate(timeout=60)
    assert resumed.returncode == 0, (out, err)
    state = read_state(store, RUN)
    assert completed_output(state) == W.reference(SPEC)[1]
    assert set(state.committed.values()) == {1}
    assert_lineage_ok(store, [RUN])


def test_a_writer_with_a_stale_cached_head_is_refused_not_forked(tmp_path: Path) -> None:
    """Two storages, no lock: each caches the head it last wrote; the second must notice."""
    first, second = FileCheckpointStorage(tmp_path), FileCheckpointStorage(tmp_path)
    asyncio.run(first.save(ckpt("r1", 0)))
    asyncio.run(first.save(ckpt("r1", 1)))
    asyncio.run(second.save(ckpt("r1", 2)))  # reads the head from the file: seq 1
    with pytest.raises(JournalChangedError, match=r"grew by .* bytes that another writer"):
        asyncio.run(first.save(ckpt("r1", 2)))  # its cached head is seq 1 too
    with pytest.raises(JournalChangedError):  # and it stays refused
        asyncio.run(first.save(ckpt("r1", 3)))
    journal = asyncio.run(FileCheckpointStorage(tmp_path).read_run("r1"))
    assert [c.seq for c in journal.checkpoints] == [0, 1, 2] and journal.problems == ()
    first.close()
    second.close()


def test_a_body_that_swallows_the_refusal_executes_no_further_step(tmp_path: Path) -> None:
    store = tmp_path / "store"
    ran: list[str] = []

    @step
    async def work(label: str) -> str:
        ran.append(label)
        if label == "a":  # the journal is replaced while this step runs
            journal = store / "runs" / "swallow" / "journal.jsonl"
            shutil.copyfile(journal, journal.with_name("copy"))
            os.replace(journal.with_name("copy"), journal)
        return label

    @workflow(name="swallow", checkpoint_storage=FileCheckpointStorage(store))
    async def swallow() -> list[str]:
        done = []
        for label in ("a", "b", "c"):
            try:
                done.append(await work(label))
            except Exception:  # user code that hides every error
                done.append("?")
        return done

    with pytest.raises(JournalChangedError, match="replaced by another file"):
        asyncio.run(swallow.run(run_id="swallow"))
    assert ran == ["a"]
    journal = asyncio.run(FileCheckpointStorage(store).read_run("swallow"))
    assert [c.kind for c in journal.checkpoints] == ["root"] and journal.problems == ()
