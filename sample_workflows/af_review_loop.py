"""A writer and a reviewer agent revise a text until it passes, then a human approves it.

Written for agent-framework's functional workflow API: the only change to run it on wfctl is
its import line (``from agent_framework import ...`` -> ``from wfctl import ...``). The two
agents are deterministic stand-ins with an async ``run()``, as a model client's agents have;
each call is a ``@step``, so answering the approval runs no agent again. The approval request
has the explicit id ``approval``.

Run it as a script (it answers ``yes`` itself and prints its outputs)::

    python sample_workflows/af_review_loop.py

or with wfctl (input: a topic; default ``"durable workflows"``)::

    wfctl run sample_workflows/af_review_loop.py --input '"tides"'
    wfctl resume RUN_ID --response approval=yes

Answering ``yes`` returns ``{"status": "approved", "topic": ..., "text": ..., "reviews": [...]}``
(the reviewer's verdict of each round); any other answer returns ``{"status": "rejected",
"topic": ..., "text": ..., "reason": <the answer>}``.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Any

from wfctl import InMemoryCheckpointStorage, RunContext, step, workflow


@dataclass
class AgentResponse:
    """The part of an agent's response this workflow reads."""

    text: str


class WriterAgent:
    """Stands in for a model-backed writer: one more sentence per round of feedback."""

    name = "writer"

    async def run(self, prompt: str) -> AgentResponse:
        topic, _, feedback = prompt.partition("\nFeedback: ")
        sentences = [f"{topic.strip().capitalize()} matter."]
        if feedback:
            sentences.append(f"Here is an example ({feedback.strip()}).")
        return AgentResponse(" ".join(sentences))


class ReviewerAgent:
    """Stands in for a model-backed reviewer: passes a draft that gives an example."""

    name = "reviewer"

    async def run(self, prompt: str) -> AgentResponse:
        if "example" in prompt:
            return AgentResponse("PASS")
        return AgentResponse("add an example")


writer = WriterAgent()
reviewer = ReviewerAgent()


@step
async def write(topic: str, feedback: str) -> str:
    """Ask the writer for a draft, with the reviewer's last feedback."""
    prompt = f"{topic}\nFeedback: {feedback}" if feedback else topic
    return (await writer.run(prompt)).text


@step
async def review(draft: str) -> str:
    """Ask the reviewer for a verdict on the draft: ``PASS`` or what to change."""
    return (await reviewer.run(f"Review this draft: {draft}")).text


@workflow(name="af_review_loop")
async def af_review_loop(topic: str = "durable workflows", *, ctx: RunContext) -> dict[str, Any]:
    """Draft and review until the reviewer passes the text, then ask a human to approve it."""
    feedback, draft = "", ""
    reviews: list[str] = []
    while len(reviews) < 5:
        draft = await write(topic, feedback)
        verdict = await review(draft)
        reviews.append(verdict)
        if verdict == "PASS":
            break
        feedback = verdict
    answer = await ctx.request_info(
        {"draft": draft, "question": "Approve this text? Answer yes or no."},
        response_type=str,
        request_id="approval",
    )
    if answer.strip().lower() == "yes":
        return {"status": "approved", "topic": topic, "text": draft, "reviews": reviews}
    return {"status": "rejected", "topic": topic, "text": draft, "reason": answer}


async def main() -> None:
    """Run the loop, answer the approval with ``yes``, and print what the run produced."""
    review_loop = af_review_loop.build(checkpoint_storage=InMemoryCheckpointStorage())
    result = await review_loop.run("durable workflows")
    for request in result.get_request_info_events():
        print(f"approval requested: {request.request_id}")
    result = await review_loop.run(responses={"approval": "yes"})
    for output in result.get_outputs():
        print(output)


if __name__ == "__main__":
    asyncio.run(main())
