"""Answers are typed: converted to the request's ``response_type`` or refused, unrecorded."""

from __future__ import annotations

import dataclasses
from typing import Any

import pydantic
import pytest

from tests.conftest import arun, failure_of
from wfctl import (
    AnswerTypeError,
    RunContext,
    WfctlError,
    Workflow,
    WorkflowDefinitionError,
    register_type,
    workflow,
)


@register_type
@dataclasses.dataclass
class Approval:
    approved: bool
    amount: int
    note: str = ""


@register_type
class Rating(pydantic.BaseModel):
    stars: int
    comment: str | None = None


@dataclasses.dataclass
class Unregistered:
    x: int


def asking(response_type: Any) -> Workflow:
    """A workflow that asks one question of ``response_type`` and returns the answer as is."""

    @workflow(name="asking")
    async def ask(ctx: RunContext) -> Any:
        answer = await ctx.request_info("question", response_type)
        return {"answer": answer, "type": type(answer).__name__}

    return ask


async def answer(storage: Any, response_type: Any, value: Any) -> tuple[Any, str]:
    """Pause a fresh run on one request, answer it with ``value``; return (answer, type)."""
    wf = asking(response_type).build(checkpoint_storage=storage)
    paused = await wf.run()
    assert paused.status == "paused"
    done = await wf.run(responses={"request#0": value})
    assert done.status == "completed", done.error
    result = done.get_outputs()[-1]
    return result["answer"], result["type"]


@pytest.mark.parametrize(
    ("response_type", "given", "expected"),
    [
        (bool, True, True),
        (bool, "false", False),
        (bool, " TRUE ", True),
        (int, 3, 3),
        (int, 4.0, 4),
        (int, "42", 42),
        (float, 2, 2.0),
        (float, "2.5", 2.5),
        (str, "no", "no"),
        (list, (1, "a"), [1, "a"]),
        (list[int], ["1", 2.0], [1, 2]),
        (dict, {"a": 1}, {"a": 1}),
        (dict[str, float], {"a": 1}, {"a": 1.0}),
        (dict[int, str], {"1": "x"}, {1: "x"}),
        (int | None, None, None),
        (int | None, "7", 7),
        (None, "anything", "anything"),
        (None, {"x": [1]}, {"x": [1]}),
        (Any, 5, 5),
    ],
)
def test_answers_are_converted_where_unambiguous(
    storage: Any, response_type: Any, given: Any, expected: Any
) -> None:
    value, _ = arun(answer(storage, response_type, given))
    assert value == expected and type(value) is type(expected)


@pytest.mark.parametrize(
    ("response_type", "given", "shown"),
    [
        (bool, "no", "bool"),
        (bool, "yes", "bool"),
        (bool, 1, "bool"),
        (int, "three", "int"),
        (int, True, "int"),
        (int, 2.5, "int"),
        (float, "NaN", "float"),
        (float, False, "float"),
        (str, 5, "str"),
        (str, None, "str"),
        (list, {"a": 1}, "list"),
        (list[int], [1, "x"], "list[int]"),
        (dict, [1], "dict"),
        (dict[str, int], {"a": "b"}, "dict[str, int]"),
        (int | None, "none", "int | None"),
    ],
)
def test_answers_that_do_not_fit_are_refused_and_not_recorded(
    storage: Any, response_type: Any, given: Any, shown: str
) -> None:
    async def main() -> None:
        wf = asking(response_type).build(checkpoint_storage=storage)
        paused = await wf.run()
        with pytest.raises(AnswerTypeError) as caught:
            await wf.run(responses={"request#0": given})
        error = caught.value
        assert isinstance(error, WfctlError) and isinstance(error, ValueError)
        assert (error.key, error.expected, error.value) == ("request#0", shown, given)
        assert f"answer to 'request#0' must be {shown}, got {given!r}" in str(error)
        # Nothing recorded: the run is still paused on the same request, and answerable.
        chain = await storage.list_checkpoints(run_id=paused.run_id)
        assert chain[-1].checkpoint_id == paused.checkpoint_id and chain[-1].kind == "pause"

    arun(main())


def test_a_refused_answer_leaves_the_run_answerable(storage: Any) -> None:
    async def main() -> None:
        wf = asking(bool).build(checkpoint_storage=storage)
        paused = await wf.run()
        with pytest.raises(AnswerTypeError, match="must be bool, got 'no'"):
            await wf.resume(paused.run_id, responses={"request#0": "no"})
        done = await wf.resume(paused.run_id, responses={"request#0": False})
        assert done.get_outputs() == [{"answer": False, "type": "bool"}]
        kinds = [c.kind for c in await storage.list_checkpoints(run_id=paused.run_id)]
        assert kinds == ["root", "pause", "resume", "completed"]

    arun(main())


def test_a_registered_dataclass_is_built_from_a_table(storage: Any) -> None:
    value, kind = arun(answer(storage, Approval, {"approved": "true", "amount": "12"}))
    assert value == Approval(approved=True, amount=12) and kind == "Approval"
    value, _ = arun(answer(storage, Approval | None, Approval(False, 1, "n")))
    assert value == Approval(False, 1, "n")


@pytest.mark.parametrize(
    ("given", "why"),
    [
        ({"approved": "no", "amount": 1}, ".approved is 'no': expected true or false"),
        ({"approved": True}, "Approval needs field(s) amount"),
        ({"approved": True, "amount": 1, "extra": 0}, "Approval has no field(s) extra"),
        ("yes", "expected a Approval or a table of its fields"),
    ],
)
def test_a_registered_dataclass_refuses_what_does_not_fit(
    storage: Any, given: Any, why: str
) -> None:
    async def main() -> None:
        wf = asking(Approval).build(checkpoint_storage=storage)
        await wf.run()
        with pytest.raises(
            AnswerTypeError, match=r"must be tests\.engine\.test_typed_answers\."
        ) as e:
            await wf.run(responses={"request#0": given})
        assert why in str(e.value)

    arun(main())


def test_a_registered_pydantic_model_validates_its_answer(storage: Any) -> None:
    value, kind = arun(answer(storage, Rating, {"stars": "4"}))
    assert value == Rating(stars=4) and kind == "Rating"

    async def main() -> None:
        wf = asking(Rating).build(checkpoint_storage=storage)
        await wf.run()
        with pytest.raises(AnswerTypeError, match="ValidationError"):
            await wf.run(responses={"request#0": {"stars": "many"}})

    arun(main())


@pytest.mark.parametrize("response_type", [Unregistered, int | str, set, dict[float, int]])
def test_a_response_type_no_answer_could_be_checked_fails_at_the_request(
    response_type: Any,
) -> None:
    async def main() -> None:
        from wfctl import InMemoryCheckpointStorage

        with pytest.raises(
            WorkflowDefinitionError, match=r"response_type .* not supported"
        ) as caught:
            await asking(response_type).build(InMemoryCheckpointStorage()).run()
        assert failure_of(caught).requests == ()

    arun(main())


def test_the_type_the_running_code_declares_is_checked_again() -> None:
    """An answer recorded for one type is checked against the type changed code declares."""

    async def main() -> None:
        from wfctl import InMemoryCheckpointStorage

        storage = InMemoryCheckpointStorage()
        first = asking(str).build(checkpoint_storage=storage)
        paused = await first.run()
        await first.resume(paused.run_id, responses={"request#0": "ten"})  # completes
        changed = asking(int).build(checkpoint_storage=storage)
        with pytest.raises(AnswerTypeError, match="must be int, got 'ten'") as caught:
            await changed.run(checkpoint_id=f"{paused.run_id}.2", allow_changed=True, new_run=True)
        assert failure_of(caught).run_id != paused.run_id  # a new run, failed at the request

    arun(main())
