"""Run semantics a ported agent-framework program relies on, through the public API.

Run arguments (a per-run storage), failures that raise, context injection, answers sent again,
typed values and ``ValueError`` compatibility of the argument errors.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel

from tests.cli.conftest import wfctl
from tests.conftest import arun, failure_of
from wfctl import (
    DuplicateStepKeyError,
    FileCheckpointStorage,
    InMemoryCheckpointStorage,
    ReplayDivergenceError,
    RunContext,
    RunStateError,
    WorkflowChangedError,
    WorkflowDefinitionError,
    step,
    workflow,
)

# --- errors: ``except ValueError`` keeps working ------------------------------------------


def test_a_workflow_with_two_messages_is_refused_as_a_value_error() -> None:
    async def two(a: str, b: str) -> str:
        return a + b

    with pytest.raises(ValueError, match="at most one parameter") as caught:
        workflow(two)
    assert isinstance(caught.value, WorkflowDefinitionError)


def test_a_sync_step_is_still_refused_as_a_type_error() -> None:
    def plain(x: int) -> int:
        return x

    with pytest.raises(TypeError, match="async"):
        step(plain)  # type: ignore[arg-type]  # the mistake under test


def test_answers_to_no_pending_request_are_a_value_error() -> None:
    @workflow(name="done_at_once")
    async def done_at_once() -> str:
        return "ok"

    async def main() -> None:
        wf = done_at_once.build(InMemoryCheckpointStorage())
        with pytest.raises(ValueError, match="no paused run to answer") as caught:
            await wf.run(responses={"r": 1})
        assert isinstance(caught.value, RunStateError)

    arun(main())


def test_a_repeated_explicit_key_and_changed_code_are_value_errors() -> None:
    assert issubclass(DuplicateStepKeyError, ValueError)
    assert issubclass(WorkflowChangedError, ValueError)
    assert issubclass(RunStateError, ValueError)


# --- context injection ---------------------------------------------------------------------


@step
async def context_first(ctx: RunContext, data: str) -> str:
    ctx.set_state("seen", data)
    return f"{data}:{ctx.get_state('seen')}:{ctx.run_id}"


@step
async def context_last(data: str, ctx: RunContext) -> str:
    return f"{data}@{ctx.run_id if ctx is not None else 'none'}"


@step
async def context_by_keyword(data: str, *, ctx: RunContext | None = None) -> str:
    return f"{data}@{ctx.run_id if ctx is not None else 'none'}"


def test_a_step_whose_context_comes_first_gets_it_and_its_data() -> None:
    @workflow(name="ctx_first")
    async def ctx_first(data: str) -> list[str]:
        return [
            await context_first(data),
            await context_last(data),
            await context_by_keyword(data),
        ]

    async def main() -> None:
        result = await ctx_first.build(InMemoryCheckpointStorage()).run("d", run_id="r")
        assert result.get_outputs() == [["d:d:r", "d@r", "d@r"]]

    arun(main())


def test_outside_a_run_an_explicit_context_is_kept_and_a_missing_one_is_none() -> None:
    async def main() -> None:
        ctx = RunContext("tests")
        ctx.set_state("seen", "before")
        assert await context_first(ctx, "x") == "x:x:"  # passed by position
        assert await context_first("y", ctx=ctx) == "y:y:"  # by keyword
        assert ctx.get_state("seen") == "y"  # the step wrote to the context it was given
        assert await context_last("z") == "z@none"
        assert await context_by_keyword("z") == "z@none"

    arun(main())


def test_a_stand_alone_context_keeps_state_events_outputs_and_given_answers() -> None:
    async def main() -> None:
        ctx = RunContext("tests", responses={"request#0": "7", "named": "yes"})
        ctx.set_state("k", [1])
        await ctx.add_event({"progress": 1})
        await ctx.yield_output("partial")
        assert await ctx.request_info("how many?", int) == 7  # converted to its type
        assert await ctx.request_info("ok?", str, request_id="named") == "yes"
        assert (ctx.get_state("k"), ctx.events, ctx.outputs) == (
            [1],
            ({"progress": 1},),
            ("partial",),
        )
        with pytest.raises(RunStateError, match="no run to pause for request 'request#1'"):
            await ctx.request_info("again?", str)

    arun(main())


# --- failures raise --------------------------------------------------------------------------


class FlakyError(RuntimeError):
    """The workflow's own exception."""


FLAKY: dict[str, int] = {"left": 0}


@step
async def fetch(n: int) -> int:
    return n + 1


@step
async def flaky(n: int) -> int:
    if FLAKY["left"] > 0:
        FLAKY["left"] -= 1
        raise FlakyError(f"flaky failed on {n}")
    return n * 10


@workflow(name="failing")
async def failing(n: int, ctx: RunContext) -> int:
    await ctx.yield_output("started")
    return await flaky(await fetch(n))


def test_a_failing_run_raises_its_own_exception_once_the_failed_checkpoint_is_stored(
    storage: Any,
) -> None:
    async def main() -> None:
        FLAKY["left"] = 1
        wf = failing.build(storage)
        with pytest.raises(FlakyError, match="flaky failed on 2") as caught:
            await wf.run(1, run_id="f1")
        error = caught.value
        assert (error.wfctl_run_id, error.wfctl_checkpoint_id) == ("f1", "f1.2")  # type: ignore[attr-defined]
        head = await storage.get_latest(run_id="f1")
        assert (head.checkpoint_id, head.kind) == ("f1.2", "failed")  # durable before the raise
        assert "wfctl resume f1" in error.__notes__[-1]  # PEP 678: how to go on
        failed = error.wfctl_result  # type: ignore[attr-defined]
        assert (failed.status, failed.error, failed.outputs) == ("failed", error, ("started",))
        assert failed.executed == ("fetch#0",)
        # The same chain goes on: fetch is served, flaky runs again and succeeds.
        retried = await wf.resume("f1")
        assert (retried.status, retried.get_outputs()) == ("completed", ["started", 20])
        assert retried.cached == ("fetch#0",) and retried.executed == ("flaky#0",)

    arun(main())


def test_a_retry_that_fails_again_raises_again_with_the_new_head() -> None:
    async def main() -> None:
        FLAKY["left"] = 2
        wf = failing.build(InMemoryCheckpointStorage())
        with pytest.raises(FlakyError):
            await wf.run(1, run_id="f2")
        with pytest.raises(FlakyError) as again:
            await wf.run(checkpoint_id="f2.2")  # the head: the same chain
        assert again.value.wfctl_checkpoint_id == "f2.4"  # type: ignore[attr-defined]
        assert (await wf.resume("f2")).get_outputs() == ["started", 20]

    arun(main())


def test_a_divergence_still_raises_replay_divergence_error() -> None:
    drift = {"by": 0}

    @workflow(name="drifting")
    async def drifting(n: int) -> int:
        return await fetch(n + drift["by"])

    async def main() -> None:
        wf = drifting.build(InMemoryCheckpointStorage())
        done = await wf.run(1, run_id="d1")
        drift["by"] = 1  # the same code now makes another call: the record must not serve it
        with pytest.raises(ReplayDivergenceError, match="fetch#0") as caught:
            await wf.run(checkpoint_id=done.checkpoint_id)
        failed = failure_of(caught)
        assert failed.run_id != "d1" and failed.cached == () and failed.executed == ()

    arun(main())


FAILING_FILE = """
from wfctl import step, workflow


@step
async def charge(amount: int) -> int:
    raise RuntimeError(f"payment service: bad amount {amount}")


@workflow
async def checkout(amount: int) -> int:
    return await charge(amount)
"""


def test_the_cli_reports_a_failed_run_as_before(tmp_path: Path) -> None:
    code = tmp_path / "checkout.py"
    code.write_text(FAILING_FILE)
    store = tmp_path / "store"
    done = wfctl("run", code, "--input", "3", "--run-id", "c1", "--store", store, "--json")
    assert done.code == 1, done.stderr  # a negative finding, as before
    doc = done.json()
    assert (doc["status"], doc["failed_step_key"]) == ("failed", "charge#0")
    assert doc["error"] == "RuntimeError: payment service: bad amount 3"  # no library note
    assert "Traceback" not in done.stderr
    head = arun(FileCheckpointStorage(store).get_latest(run_id="c1"))
    assert head is not None and head.kind == "failed"


# --- run arguments: a storage per call ----------------------------------------------------


@workflow(name="asking_twice")
async def asking_twice(topic: str, ctx: RunContext) -> str:
    first = await ctx.request_info({"about": topic}, str, request_id="r1")
    await fetch(len(first))
    second = await ctx.request_info({"about": first}, str, request_id="r2")
    return f"{topic}: {first} then {second}"


def test_a_storage_given_to_one_call_holds_that_run_and_its_answers() -> None:
    async def main() -> None:
        bound, other = InMemoryCheckpointStorage(), InMemoryCheckpointStorage()
        wf = asking_twice.build(bound)
        paused = await wf.run("t", run_id="s1", checkpoint_storage=other)
        assert paused.status == "paused"
        assert await bound.list_checkpoints(run_id="s1") == []  # nothing in the bound one
        # Answering the last pause goes to the storage that pause was written to.
        again = await wf.run(responses={"r1": "a"})
        assert [r.request_id for r in again.get_request_info_events()] == ["r2"]
        done = await wf.resume("s1", responses={"r2": "b"}, checkpoint_storage=other)
        assert done.get_outputs() == ["t: a then b"]
        kinds = [c.kind for c in await other.list_checkpoints(run_id="s1")]
        assert kinds == ["root", "pause", "resume", "step", "pause", "resume", "completed"]
        restored = await wf.run(checkpoint_id="s1.2", checkpoint_storage=other)
        assert restored.status == "paused" and restored.origin_checkpoint_id == "s1.2"
        assert await bound.list_checkpoints() == []
        with pytest.raises(RunStateError, match="no paused run"):
            await wf.build(other).run(responses={"r2": "b"})  # a built copy is a new caller

    arun(main())


# --- answers sent again ------------------------------------------------------------------


def test_a_loop_that_resends_every_answer_so_far_is_accepted(storage: Any) -> None:
    async def main() -> None:
        wf = asking_twice.build(storage)
        result = await wf.run("t", run_id="h1")
        answers: dict[str, Any] = {}
        while pending := result.get_request_info_events():  # agent-framework's HITL loop
            for request in pending:
                answers[request.request_id] = f"answer-{request.request_id}"
            result = await wf.run(responses=answers)
        assert result.get_outputs() == ["t: answer-r1 then answer-r2"]
        resumes = [c for c in await storage.list_checkpoints(run_id="h1") if c.kind == "resume"]
        assert [sorted(c.data["responses"]) for c in resumes] == [["r1"], ["r2"]]  # once each

    arun(main())


def test_a_resent_answer_is_compared_after_conversion_and_a_contradiction_is_refused() -> None:
    @workflow(name="counting_twice")
    async def counting_twice(ctx: RunContext) -> int:
        first = await ctx.request_info("how many?", int, request_id="n1")
        return first + await ctx.request_info("and now?", int, request_id="n2")

    async def main() -> None:
        storage = InMemoryCheckpointStorage()
        wf = counting_twice.build(storage)
        await wf.run(run_id="c1")
        await wf.run(responses={"n1": "4"})  # converted to 4
        before = await storage.list_checkpoints(run_id="c1")
        with pytest.raises(RunStateError, match=r"'n1' was answered already with 4; .*\(5\)"):
            await wf.run(responses={"n1": 5, "n2": 1})
        assert await storage.list_checkpoints(run_id="c1") == before  # nothing written
        done = await wf.run(responses={"n1": 4.0, "n2": "1"})  # equal once converted
        assert done.get_outputs() == [5]

    arun(main())


ASKING_FILE = """
from wfctl import RunContext, workflow


@workflow
async def asking(ctx: RunContext) -> str:
    first = await ctx.request_info("first?", str, request_id="r1")
    second = await ctx.request_info("second?", str, request_id="r2")
    return first + "+" + second
"""


def test_the_cli_accepts_a_resent_answer_and_refuses_a_contradicting_one(tmp_path: Path) -> None:
    code = tmp_path / "asking.py"
    code.write_text(ASKING_FILE)
    store = tmp_path / "store"
    assert wfctl("run", code, "--run-id", "a1", "--store", store).code == 3
    assert wfctl("resume", "a1", "--store", store, "--response", "r1=42").code == 3
    journal = store / "runs" / "a1" / "journal.jsonl"
    before = journal.read_bytes()
    refused = wfctl("resume", "a1", "--store", store, "--response", "r1=7", "--response", "r2=x")
    assert refused.code == 2
    assert """request 'r1' was answered already with "42";""" in refused.error_line()
    assert journal.read_bytes() == before  # nothing recorded
    # "42" again is the same answer: r1 takes str, so the CLI keeps it as text, as before.
    done = wfctl("resume", "a1", "--store", store, "--response", "r1=42", "--response", "r2=x")
    assert done.code == 0, done.stderr
    assert done.stdout.strip() == "42+x"


# --- values: the request's type, and the classes annotations name --------------------------


def test_a_request_event_carries_its_declared_type_and_the_cli_shows_its_name(
    tmp_path: Path,
) -> None:
    async def main() -> None:
        paused = await counting_again.build(InMemoryCheckpointStorage()).run()
        [request] = paused.get_request_info_events()
        assert request.response_type == list[int]  # the type object, not the text "list[int]"

    arun(main())
    code = tmp_path / "asking.py"
    code.write_text(ASKING_FILE)
    shown = wfctl("run", code, "--store", tmp_path / "store", "--json")
    assert shown.code == 3
    assert [r["response_type"] for r in shown.json()["requests"]] == ["str"]


@workflow(name="counting_again")
async def counting_again(ctx: RunContext) -> list[int]:
    answer: list[int] = await ctx.request_info("which?", list[int])
    return answer


@step
async def make_invoice(order: Order) -> Invoice | None:  # both are defined further down
    total = sum(line.qty for line in order.lines)
    return Invoice(total=total, note=f"{len(order.lines)} lines") if total else None


@workflow(name="invoicing")
async def invoicing(order: Order) -> list[Invoice | None]:
    return [await make_invoice(order)]


@dataclass
class Line:
    sku: str
    qty: int


@dataclass
class Order:
    lines: list[Line]  # registered through Order's fields


class Invoice(BaseModel):
    total: int
    note: str


def test_values_of_annotated_dataclasses_and_models_round_trip_without_register_type(
    tmp_path: Path,
) -> None:
    async def main() -> None:
        storage = FileCheckpointStorage(tmp_path / "store")
        wf = invoicing.build(storage)
        order = Order([Line("pen", 2), Line("ink", 1)])
        first = await wf.run(order, run_id="i1")
        expected = [Invoice(total=3, note="2 lines")]
        assert first.get_outputs() == [expected]
        # A restore decodes the recorded message and the served step result as their classes.
        again = await wf.run(checkpoint_id="i1.1", run_id="i2")
        assert again.cached == ("make_invoice#0",) and again.get_outputs() == [expected]
        root = await storage.load("i2.0")
        assert root.data["input"]["$t"] == "dataclass"

    arun(main())


def test_an_annotation_that_never_resolves_does_not_break_decoration_or_the_run() -> None:
    namespace: dict[str, Any] = {"step": step}
    exec(  # a module of its own, whose annotation names a class nobody defines
        "from __future__ import annotations\n"
        "@step\n"
        "async def vague(x: Missing) -> Missing:\n"
        "    return x + 1\n",
        namespace,
    )
    vague = namespace["vague"]

    @workflow(name="vague_run")
    async def vague_run(n: int) -> int:
        return await vague(n)  # type: ignore[no-any-return]

    async def main() -> None:
        done = await vague_run.build(InMemoryCheckpointStorage()).run(1)
        assert done.get_outputs() == [2]

    arun(main())
