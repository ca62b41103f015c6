"""What a worker does once per run it takes, counted (never timed).

A worker loads a run's code once per target and builds it per run: the code signature (the
source of the workflow and its steps, read and hashed) is computed once for all the builds. It
reads a claimed run once, under the lease, to find the run's code and to continue it.
"""

from __future__ import annotations

import inspect
import json
import typing
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import arun
from wfctl import FileCheckpointStorage, InMemoryCheckpointStorage, step, workflow
from wfctl._drive._submit import submit_workflow
from wfctl._drive._worker import run_worker

WORKFLOWS = Path(__file__).resolve().parents[1] / "cli" / "workflows"


@step
async def echo(text: str) -> str:
    return text


def test_the_builds_of_a_workflow_read_its_source_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """A worker builds the workflow it loaded once per run it takes: the code signature (the
    source of the workflow and its steps, read and hashed) is computed once for all of them."""
    import wfctl._engine._workflow

    computed: list[str] = []

    def counting(*args: Any) -> str:
        computed.append(signature := real(*args))
        return signature

    real = wfctl._engine._workflow.code_signature
    monkeypatch.setattr(wfctl._engine._workflow, "code_signature", counting)
    storage = InMemoryCheckpointStorage()

    @workflow
    async def loaded(n: int) -> str:  # new here: nothing computed its signature yet
        return await echo(str(n))

    async def main() -> None:
        for _ in range(3):  # as a worker does: a build per run, each run's root records it
            done = await loaded.build(checkpoint_storage=storage).run(2)
            assert done.status == "completed"
        resumed = await loaded.build(checkpoint_storage=storage).run(
            checkpoint_id=done.checkpoint_id
        )  # checks the recorded signature against the code's
        assert resumed.status == "completed"

    arun(main())
    assert len(computed) == 1, computed
    assert loaded.signature == computed[0]


def test_a_worker_reads_each_run_it_takes_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Before, a worker read a claimed run whole to find its code, then again to continue it."""
    store = tmp_path / "store"
    run_ids = [
        submit_workflow(
            str(WORKFLOWS / "greet.py"), store=store, input_json=json.dumps(name)
        ).run_id
        for name in ("ann", "bob", "cy")
    ]
    reads: Counter[str] = Counter()

    def counting(name: str) -> None:
        real = getattr(FileCheckpointStorage, name)

        def read(self: FileCheckpointStorage, run_id: str, *args: Any, **kwargs: Any) -> Any:
            reads[run_id] += 1
            return real(self, run_id, *args, **kwargs)

        monkeypatch.setattr(FileCheckpointStorage, name, read)

    for name in ("load_chain", "stream_chain", "read_run"):  # every whole-run read
        counting(name)
    report = run_worker(store, exit_when_idle=True, workflows=[WORKFLOWS], must_exist=True)

    assert report.ended == {"completed": 3}, report
    assert reads == dict.fromkeys(run_ids, 1), reads


def test_builds_share_what_was_read_from_the_function_but_not_a_caller_s_pause(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A build inspects the function no more (its parameters, the types its annotations name);
    what is a caller's (its storage, its last pause) stays its own."""

    @workflow
    async def asks(n: int) -> str:
        return await echo(str(n))

    inspected: list[str] = []

    def counting(module: Any, name: str) -> None:
        real = getattr(module, name)

        def wrapped(*args: Any, **kwargs: Any) -> Any:
            inspected.append(name)
            return real(*args, **kwargs)

        monkeypatch.setattr(module, name, wrapped)

    counting(typing, "get_type_hints")
    counting(inspect, "signature")
    asks._last_paused = "asks-run.3"  # as if a run of it had paused
    first, second = InMemoryCheckpointStorage(), InMemoryCheckpointStorage()
    builds = [asks.build(checkpoint_storage=first), asks.build(checkpoint_storage=second)]

    assert inspected == []
    assert [b.storage for b in builds] == [first, second]
    assert [b._last_paused for b in builds] == [None, None]
    assert asks._last_paused == "asks-run.3" and asks._storage is None

    async def main() -> None:
        done = await builds[0].run(1)
        assert done.status == "completed" and done.get_outputs() == ["1"]

    arun(main())
