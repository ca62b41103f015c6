"""A class defined inside a function, named by a step's annotation (a string under ``from
__future__ import annotations``), as agent-framework's own tests write them.

Written for agent-framework's functional API with only the import line changed; the same file
with ``from wfctl import`` switched to ``from agent_framework import`` passes under
agent-framework (1.26). wfctl resolves such an annotation in the function's closure, or, when
the class is out of reach there, registers the class of the value the step returns when its
name is the one the annotation spells and it is a dataclass or pydantic model. The workflows
that pause are bound to an explicit ``InMemoryCheckpointStorage``.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pytest
from pydantic import BaseModel

from tests.conftest import arun
from wfctl import InMemoryCheckpointStorage, RunContext, step, workflow


def test_a_class_of_the_enclosing_function_routes_an_if_else(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """As upstream's own test, without a storage: agent-framework (1.26) refuses to checkpoint
    a step that captures state; wfctl writes its default store, here in ``tmp_path``."""
    monkeypatch.chdir(tmp_path)

    @dataclass
    class Classification:
        is_spam: bool

    @step
    async def classify(text: str) -> Classification:
        return Classification(is_spam="spam" in text.lower())

    @step
    async def quarantine(text: str) -> str:
        return f"quarantined: {text}"

    @step
    async def deliver(text: str) -> str:
        return f"delivered: {text}"

    @workflow
    async def mail(text: str) -> str:
        verdict = await classify(text)
        return await (quarantine(text) if verdict.is_spam else deliver(text))

    async def main() -> None:
        wf = mail.build()
        assert (await wf.run("Buy spam now")).get_outputs() == ["quarantined: Buy spam now"]
        assert (await wf.run("Hello")).get_outputs() == ["delivered: Hello"]

    arun(main())


def _verdicts(*oks: bool) -> list[object]:
    """Verdicts of a class this helper defines: out of reach of the steps' closures."""

    @dataclass
    class Verdict:
        ok: bool

    return [Verdict(ok) for ok in oks]


def _draft(topic: str) -> object:
    """A draft of a pydantic model this helper defines."""

    class Draft(BaseModel):
        title: str
        words: int

    return Draft(title=topic.title(), words=len(topic.split()))


# Module-level steps: agent-framework (1.26) checkpoints only steps without captured state.


@step
async def judge(text: str) -> Verdict:  # type: ignore[name-defined]  # noqa: F821  # _verdicts' class
    return _verdicts("ok" in text)[0]


@step
async def judge_all(texts: list[str]) -> list[Verdict]:  # type: ignore[name-defined]  # noqa: F821
    return _verdicts(*("ok" in t for t in texts))


@step
async def write(topic: str) -> Draft:  # type: ignore[name-defined]  # noqa: F821  # _draft's class
    return _draft(topic)


@workflow(name="review")
async def review(text: str, ctx: RunContext) -> str:
    one = await judge(text)
    many = await judge_all([text, "no"])
    answer = await ctx.request_info("approve?", response_type=str, request_id="approve")
    return f"{one.ok}/{[v.ok for v in many]}/{answer}"


@workflow(name="publish")
async def publish(topic: str, ctx: RunContext) -> str:
    draft = await write(topic)
    answer = await ctx.request_info(draft.title, response_type=str, request_id="ok")
    return f"{draft.title} ({draft.words}): {answer}"


def test_a_class_out_of_the_closure_is_taken_by_the_name_the_annotation_spells() -> None:
    async def main() -> None:
        wf = review.build(checkpoint_storage=InMemoryCheckpointStorage())
        paused = await wf.run("ok text")
        assert paused.get_outputs() == []
        done = await wf.run(responses={"approve": "yes"})  # the recorded verdicts, decoded
        assert done.get_outputs() == ["True/[True, False]/yes"]

    arun(main())


def test_a_pydantic_model_out_of_the_closure_round_trips_through_a_resume() -> None:
    async def main() -> None:
        wf = publish.build(checkpoint_storage=InMemoryCheckpointStorage())
        await wf.run("local types")
        done = await wf.run(responses={"ok": "published"})
        assert done.get_outputs() == ["Local Types (2): published"]

    arun(main())


def test_a_request_s_data_of_a_class_of_the_enclosing_function_is_stored() -> None:
    @dataclass
    class HandoffRequest:
        target_agent: str
        reason: str

    @workflow
    async def route(x: str, ctx: RunContext) -> str:
        answer = await ctx.request_info(
            HandoffRequest(target_agent=x, reason="overflow"), response_type=str, request_id="r"
        )
        return f"got:{answer}"

    async def main() -> None:
        wf = route.build(checkpoint_storage=InMemoryCheckpointStorage())
        paused = await wf.run("helper")
        (request,) = paused.get_request_info_events()
        assert request.data == HandoffRequest("helper", "overflow")
        assert (await wf.run(responses={"r": "ok"})).get_outputs() == ["got:ok"]

    arun(main())
