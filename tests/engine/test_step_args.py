"""Step records store the arguments each call received (SPEC §3 "Arguments"; issue: step inputs).

The digest still decides matching; the stored arguments are for people: ``show``, ``log -v`` and
the divergence error. Internals are imported (``StepRecord``) to read records as stored.
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.conftest import arun, failure_of
from wfctl import InMemoryCheckpointStorage, ReplayDivergenceError, RunContext, step, workflow
from wfctl._records._codec import register_type
from wfctl._records._recorded import StepRecord


def _step_records(storage: InMemoryCheckpointStorage, run_id: str) -> list[dict[str, Any]]:
    checkpoints = arun(storage.list_checkpoints(run_id=run_id))
    return [s for c in checkpoints if c.kind == "step" for s in c.data["steps"]]


def test_arguments_are_stored_encoded_beside_the_digest() -> None:
    @step
    async def combine(a: str, pair: tuple[int, int], *, scale: float = 1.0) -> str:
        return f"{a}{pair}{scale}"

    @step
    async def nothing() -> int:
        return 0

    @step
    async def grow(items: list[int]) -> int:
        items.append(99)  # the record must say what the step received, not what it left
        return len(items)

    @workflow(name="args")
    async def wf(message: str) -> None:
        await combine(message, (1, 2), scale=2.5)
        await nothing()
        await grow([1])

    storage = InMemoryCheckpointStorage()
    result = arun(wf.build(checkpoint_storage=storage).run("hi"))
    combine_rec, nothing_rec, grow_rec = _step_records(storage, result.run_id)
    assert combine_rec["args"] == ["hi", {"$t": "tuple", "v": [1, 2]}]
    assert combine_rec["kwargs"] == {"scale": 2.5}
    assert isinstance(combine_rec["digest"], str) and len(combine_rec["digest"]) == 16
    assert nothing_rec["args"] == [] and "kwargs" not in nothing_rec
    assert grow_rec["args"] == [[1]]


def test_record_args_false_stores_only_the_digest_and_says_so() -> None:
    @step(record_args=False)
    async def login(password: str) -> str:
        return "token"

    @workflow(name="secret")
    async def wf(password: str) -> str:
        return await login(password)

    storage = InMemoryCheckpointStorage()
    result = arun(wf.build(checkpoint_storage=storage).run("hunter2"))
    (record,) = _step_records(storage, result.run_id)
    assert record["args_omitted"] == "opt_out" and "args" not in record
    assert record["digest"] is not None
    parsed = StepRecord.from_json(record, "test")
    assert parsed.describe_args() == "not recorded (record_args=False)"


def test_unencodable_arguments_are_marked_and_the_call_still_runs() -> None:
    class Opaque:
        pass

    @step
    async def take(thing: Any) -> str:
        return "ok"

    @workflow(name="opaque")
    async def wf(_: None) -> str:
        return await take(Opaque())

    storage = InMemoryCheckpointStorage()
    result = arun(wf.build(checkpoint_storage=storage).run(None))
    assert result.status == "completed"
    (record,) = _step_records(storage, result.run_id)
    assert record["args_omitted"] == "unencodable" and record["digest"] is None


def test_a_record_written_before_arguments_were_stored_reads_and_says_so() -> None:
    old = {"key": "fetch#0", "digest": "c9b221bf1e91333a", "result": 10, "dt": 0.0}
    record = StepRecord.from_json(old, "test")
    assert record.args is None and record.args_omitted is None
    assert record.describe_args() == "not recorded (written before arguments were stored)"
    assert record.to_json() == {**old, "dt": 0.0}  # written back unchanged


def _divergence(*, record_args: bool, then: str, now: str) -> ReplayDivergenceError:
    """Run ``fetch(then, limit=3)``, then replay the run serving its history to ``fetch(now)``.

    Returns the divergence the replay failed with.
    """
    seen = {"value": then}

    @step(record_args=record_args)
    async def fetch(value: str, *, limit: int) -> str:
        return value.upper()

    @workflow(name="diverge")
    async def wf(_: None) -> str:
        return await fetch(seen["value"], limit=3)

    built = wf.build(checkpoint_storage=InMemoryCheckpointStorage())
    first = arun(built.run(None))
    seen["value"] = now
    with pytest.raises(ReplayDivergenceError) as caught:
        arun(built.run(checkpoint_id=first.checkpoint_id, execute=False))
    failure_of(caught)
    return caught.value


def test_a_divergence_says_what_the_call_received_then_and_now() -> None:
    error = _divergence(record_args=True, then="then", now="now")
    assert error.call_args == '("now", limit=3)'
    assert error.recorded_args == ['("then", limit=3)']
    assert 'the call received ("now", limit=3)' in str(error)
    assert 'recorded call(s) received ("then", limit=3)' in str(error)


def test_a_divergence_never_shows_the_arguments_of_a_step_that_opted_out() -> None:
    text = str(_divergence(record_args=False, then="s3cret-then", now="s3cret-now"))
    assert "s3cret" not in text
    assert "not recorded (record_args=False)" in text


def test_a_call_recorded_without_an_encoding_is_served_once_its_arguments_have_one() -> None:
    class Note:
        """Stores itself, but is registered only after the call was recorded."""

        def __init__(self, text: str) -> None:
            self.text = text

        def to_dict(self) -> dict[str, Any]:
            return {"text": self.text}

        @classmethod
        def from_dict(cls, data: dict[str, Any]) -> Note:
            return cls(data["text"])

    ran: list[str] = []

    @step
    async def read(note: Any) -> str:
        ran.append(note.text)
        return note.text.upper()

    @workflow(name="noted")
    async def wf(text: str, ctx: RunContext) -> str:
        said = await read(Note(text))
        ok = await ctx.request_info("go?", response_type=str, request_id="go")
        return f"{said} {ok}"

    storage = InMemoryCheckpointStorage()
    built = wf.build(checkpoint_storage=storage)
    paused = arun(built.run("hi"))
    (record,) = _step_records(storage, paused.run_id)
    assert record["digest"] is None  # no encoding when it was recorded
    register_type(Note, "tests.engine.Note")
    done = arun(built.run(responses={"go": "yes"}))
    assert done.get_outputs() == ["HI yes"]
    assert ran == ["hi"]  # served from its record, by position, not run again
