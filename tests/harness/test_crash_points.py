"""Crash harness: SIGKILL real processes at seeded points, resume in new ones, lose nothing.

Each scenario (one seed) runs the harness pipeline (8 sequential steps, a pause in half of
the scenarios, a gather of 4, a last step; every step appends to an fsynced ledger before it
returns; in every other scenario each step is handed the result before it, 1.5 KB of text, so
its argument is stored as a reference and its record compressed) as a sequence of attempts, each a new process forked by ``crash_child``'s server. Up to
three attempts are killed with SIGKILL at a seeded point: before a journal write, after a
partial write (a torn tail), after the write but before ``fdatasync``, after the sync but before
the engine hears of it, right after recovery truncated a torn tail, inside a step after its
ledger entry, or on a timer anywhere. Then attempts resume the run from its head (answering
the pause when it is the head) until it completes. After every attempt, and at the end:

- the journal reads back with no problem but a torn tail, as one linear chain (and, at the
  end, ``verify_lineage`` passes);
- nothing committed is lost, and no step is committed twice;
- no attempt executes a step that was committed before it started (committed means: in the
  journal when the previous process died);
- every record an attempt commits was executed by that attempt, with the value it must have;
- so each step ran exactly ``1 + (attempts killed while it ran uncommitted)`` times: exactly
  once if it was committed before a kill, at most twice if it was in flight at one;
- the run completes with the right output.

Every fourth scenario (``WFCTL_CRASH_CLI_EVERY``; 0 for none, 1 for all) resumes through the
installed CLI, ``wfctl resume RUN_ID --store DIR [--response approve=yes]``, instead of the
library call; killed attempts always run in the fork server (they need its dying I/O seam).

Default (CI): at least 100 kill points (``WFCTL_CRASH_POINTS``, default 100), in ~10 s on 2
cores. Longer modes::

    WFCTL_CRASH_POINTS=2000 python -m pytest tests/harness/test_crash_points.py
    python -m pytest -m slow tests/harness/test_crash_points.py   # 2000 points
    WFCTL_CRASH_SEED=1234 python -m pytest tests/harness/test_crash_points.py  # one scenario
"""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import threading
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import wfctl_executable
from tests.harness import harness_workload as W
from tests.harness.checks import StoreState, assert_lineage_ok, completed_output, read_state
from wfctl._records._refs import holds_refs
from wfctl._storage._journal import decode_record

REPO = Path(__file__).resolve().parents[2]
#: Every Nth scenario's unkilled resumes run ``wfctl resume RUN_ID --store DIR`` (0: none).
CLI_EVERY = int(os.environ.get("WFCTL_CRASH_CLI_EVERY", "4"))
WRITE_KINDS = ("before-write", "partial-write", "after-write", "after-sync")
KINDS = (*WRITE_KINDS, "truncate", "mid-step", "mid-step", "timer")
MAX_ATTEMPTS = 12

pytestmark = pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork and SIGKILL")


class Server:
    """One ``crash_child serve`` process: forks an attempt per request."""

    def __init__(self) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "tests.harness.crash_child", "serve"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            cwd=REPO,
            env={**os.environ, "PYTHONPATH": str(REPO)},
        )

    def attempt(self, cmd: dict[str, Any]) -> dict[str, Any]:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.write(json.dumps(cmd) + "\n")
        self.proc.stdin.flush()
        line = self.proc.stdout.readline()
        assert line, "the crash server died"
        reply: dict[str, Any] = json.loads(line)
        return reply

    def close(self) -> None:
        if self.proc.stdin is not None:
            self.proc.stdin.close()
        self.proc.wait(timeout=30)
        if self.proc.stdout is not None:
            self.proc.stdout.close()


def cli_resume(cmd: dict[str, Any]) -> dict[str, Any]:
    """Resume through the installed CLI, as a user would: ``wfctl resume RUN_ID --store DIR``.

    The workflow module reads its ledger from the environment (see ``harness_workload``).
    Exit 0 (completed) and 3 (paused again: a retry whose pause was never committed) are
    normal; anything else is reported like a crashed attempt would be.
    """
    store = Path(cmd["store"])
    args = [wfctl_executable(), "resume", cmd["run_id"], "--store", str(store), "--json"]
    if cmd["responses"]:
        args += [f"--response={key}={value}" for key, value in cmd["responses"].items()]
    done = subprocess.run(
        args,
        capture_output=True,
        text=True,
        cwd=REPO,  # the run's root names its workflow as tests.harness.harness_workload:pipeline
        env={
            **os.environ,
            "PYTHONPATH": str(REPO),
            W.LEDGER_ENV: str(store / "ledger.txt"),
            W.ATTEMPT_ENV: str(cmd["attempt"]),
        },
        timeout=120,
    )
    if done.returncode not in (0, 3):
        (store / f"attempt-{cmd['attempt']}.error").write_text(
            f"wfctl resume exited {done.returncode}\n{done.stdout}\n{done.stderr}"
        )
    return {"pid": None, "signal": None, "code": 0 if done.returncode in (0, 3) else 1}


def plan_kill(rng: random.Random) -> dict[str, Any]:
    """Choose where the next attempt dies."""
    kind = rng.choice(KINDS)
    if kind == "timer":
        return {"kind": kind, "delay": rng.uniform(0.0, 0.04)}
    if kind == "mid-step":
        return {"kind": kind, "at": rng.randrange(13)}
    return {"kind": kind, "at": rng.randrange(12), "frac": rng.random()}


@dataclass
class Scenario:
    """The record of one seed's attempts."""

    seed: int
    kills: int = 0
    attempts: list[str] = field(default_factory=list)
    #: kill kind -> how many attempts it killed; "torn" counts kills that left a torn tail.
    kinds: Counter[str] = field(default_factory=Counter)

    def fail(self, message: str) -> None:
        raise AssertionError(
            f"crash scenario seed {self.seed} ({'; '.join(self.attempts)}): {message}\n"
            f"reproduce: WFCTL_CRASH_SEED={self.seed} python -m pytest {__file__}"
        )


def ledger_of(store: Path) -> dict[str, list[str]]:
    """Attempt -> the labels it executed, in order, from the fsynced ledger."""
    runs: dict[str, list[str]] = {}
    path = store / "ledger.txt"
    if path.exists():
        for line in path.read_text().splitlines():
            attempt, label = line.split()
            runs.setdefault(attempt, []).append(label)
    return runs


def run_scenario(server: Server, base: Path, seed: int) -> Counter[str]:
    """Run one seeded scenario to completion; return the kill kinds that struck."""
    rng = random.Random(seed)
    # Every other scenario hands each stage the result before it, 1.5 KB of text: arguments
    # stored as references, records stored compressed, and a text retold after each stage
    # stored as its change.
    carry = 1500 if seed % 2 else 0
    spec = W.spec_for(seed, pause=rng.random() < 0.5, carry=carry)
    values, output = W.reference(spec)
    store, run_id = base / f"s{seed}", f"crash-{seed}"
    store.mkdir(mode=0o700)
    max_kills = rng.choice((1, 2, 3, 3))
    if CLI_EVERY and seed % CLI_EVERY == 0:
        max_kills = 1  # then every later attempt is a `wfctl resume`
    scenario = Scenario(seed)
    state = StoreState(None, Counter(), {})
    uncommitted_runs: Counter[str] = Counter()  # label -> attempts it ran in but died uncommitted
    for attempt in range(MAX_ATTEMPTS):
        head = state.head
        if head is not None and head.kind == "completed":
            break
        kill = plan_kill(rng) if scenario.kills < max_kills else None
        if state.journal is not None and state.journal.torn_tail and not scenario.kinds["truncate"]:
            # A torn tail is what recovery cuts: aim one kill at that cut in every scenario that
            # has one, so the "truncate" point is struck whatever the timing left torn.
            kill = {"kind": "truncate", "at": 0, "frac": 0.5}
        cmd = {
            "store": str(store),
            "run_id": run_id,
            "attempt": attempt,
            "spec": spec,
            "fresh": head is None,
            "responses": {"approve": "yes"} if head is not None and head.kind == "pause" else None,
            "kill": kill,
        }
        by_cli = CLI_EVERY and seed % CLI_EVERY == 0 and kill is None and head
        reply = cli_resume(cmd) if by_cli else server.attempt(cmd)
        if by_cli:
            scenario.kinds["wfctl resume"] += 1
        killed = reply["signal"] == signal.SIGKILL
        scenario.attempts.append(
            f"#{attempt} {'fresh' if cmd['fresh'] else 'wfctl resume' if by_cli else 'resume'} "
            f"{kill} -> " + ("killed" if killed else f"exit {reply['code']}")
        )
        error = store / f"attempt-{attempt}.error"
        if error.exists():
            scenario.fail(f"attempt {attempt} raised:\n{error.read_text()}")
        if not killed and reply["code"] != 0:
            scenario.fail(f"attempt {attempt} ended with {reply}")
        before = state
        try:
            state = read_state(store, run_id)
        except AssertionError as exc:
            scenario.fail(f"store unsound after attempt {attempt}: {exc}")
        executed = ledger_of(store).get(str(attempt), [])
        new = state.committed - before.committed
        if dups := [label for label, n in state.committed.items() if n > 1]:
            scenario.fail(f"steps committed twice: {dups}")
        if lost := set(before.committed) - set(state.committed):
            scenario.fail(f"committed steps lost: {lost}")
        if rerun := set(executed) & set(before.committed):
            scenario.fail(f"attempt {attempt} re-executed committed steps {rerun}")
        if len(executed) != len(set(executed)):
            scenario.fail(f"attempt {attempt} executed a step twice: {executed}")
        if phantom := set(new) - set(executed):
            scenario.fail(f"attempt {attempt} committed steps it did not execute: {phantom}")
        if wrong := {k: v for k, v in state.values.items() if values[k] != v}:
            scenario.fail(f"wrong committed values {wrong}")
        not_committed = set(executed) - set(state.committed)
        if not_committed and not killed:
            scenario.fail(f"attempt {attempt} lived but left {not_committed} uncommitted")
        uncommitted_runs.update(not_committed)
        if killed:
            scenario.kills += 1
            scenario.kinds[kill["kind"] if kill else "?"] += 1
            if state.journal is not None and state.journal.torn_tail:
                scenario.kinds["torn"] += 1
        elif state.head is None or state.head.kind not in ("completed", "pause"):
            scenario.fail(f"attempt {attempt} lived but the head is {state.head}")
    else:
        scenario.fail("the run never completed")
    if completed_output(state) != output:
        scenario.fail(f"wrong output {completed_output(state)} != {output}")
    if set(state.committed) != set(values):
        scenario.fail(f"committed {sorted(state.committed)} != {sorted(values)}")
    totals = Counter(label for labels in ledger_of(store).values() for label in labels)
    for label in values:
        if totals[label] != 1 + uncommitted_runs[label]:
            scenario.fail(
                f"{label} ran {totals[label]} times; expected once plus "
                f"{uncommitted_runs[label]} killed uncommitted run(s)"
            )
    assert_lineage_ok(store, [run_id])
    if carry:
        journal = store / "runs" / run_id / "journal.jsonl"
        stored = [decode_record(line, str(journal)) for line in journal.read_bytes().splitlines()]
        raw = journal.read_bytes()
        if not any(holds_refs(c) for c in stored) or b',"z":"' not in raw:
            scenario.fail("a carrying run stored no reference or no compressed record")
        if b'"result":{"$t":"zd"' not in raw:
            scenario.fail("a carrying run stored no result as its change")
        scenario.kinds["referred"] += 1
    return scenario.kinds


def drive(base: Path, target: int, seeds: list[int] | None = None) -> Counter[str]:
    """Run scenarios on two servers until ``target`` kill points; return what struck.

    The counter holds each kill kind, ``torn`` (kills that left a torn tail), ``kills`` and
    ``scenarios``.
    """
    lock = threading.Lock()
    totals: Counter[str] = Counter()
    errors: list[BaseException] = []
    workers = max(1, min(2, os.cpu_count() or 1))

    def work(index: int) -> None:
        server = Server()
        try:
            seed = index
            while not errors:
                with lock:
                    if seeds is None and totals["kills"] >= target:
                        return
                if seeds is not None:
                    if seed >= len(seeds):
                        return
                    kinds = run_scenario(server, base, seeds[seed])
                else:
                    kinds = run_scenario(server, base, seed)
                with lock:
                    totals.update(kinds)
                    totals["kills"] += sum(
                        n for k, n in kinds.items() if k not in ("torn", "wfctl resume")
                    )
                    totals["scenarios"] += 1
                seed += workers
        except BaseException as exc:
            errors.append(exc)
        finally:
            server.close()

    threads = [threading.Thread(target=work, args=(i,)) for i in range(workers)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    if errors:
        raise errors[0]
    return totals


def _points() -> int:
    return int(os.environ.get("WFCTL_CRASH_POINTS", "100"))


def test_sigkill_at_seeded_points_loses_nothing(tmp_path: Path) -> None:
    only = os.environ.get("WFCTL_CRASH_SEED")
    seeds = [int(only)] if only else None
    totals = drive(tmp_path, _points(), seeds)
    print(f"crash harness: {dict(totals)}")
    if seeds is None:
        assert totals["kills"] >= _points()
        # Every kind of point struck at least once, and some kills left a torn tail.
        assert set(KINDS) | {"torn"} <= set(totals), totals
        assert totals["referred"] > 0, totals  # runs of references and compressed records
        if CLI_EVERY:
            assert totals["wfctl resume"] > 0, totals


@pytest.mark.slow
def test_sigkill_at_2000_seeded_points(tmp_path: Path) -> None:
    totals = drive(tmp_path, max(2000, _points()))
    print(f"crash harness (slow): {dict(totals)}")
    assert totals["kills"] >= 2000
