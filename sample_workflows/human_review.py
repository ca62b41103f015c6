"""A workflow that drafts a text, pauses for a human verdict, and continues on the answer.

``ctx.request_info`` suspends the run: ``wfctl run`` exits with code 3, lists the pending
request (its id is ``request#0``) and prints the resume command. The draft steps are recorded,
so answering runs only what comes after the question.

Run it (input: a topic, or ``{"topic": "..."}``; default ``"durable workflows"``)::

    wfctl run sample_workflows/human_review.py --input '"durable workflows"'
    wfctl resume RUN_ID --response 'request#0=yes'

Answering ``yes`` publishes: the run returns ``{"status": "published", "title": ...,
"text": ..., "words": ...}``. Any other answer returns ``{"status": "rejected", "title": ...,
"reason": <the answer>}``.
"""

from __future__ import annotations

from typing import Any

from wfctl import RunContext, step, workflow


@step
async def outline(topic: str) -> list[str]:
    """Plan the draft: a title and three section headings."""
    return [topic.title(), f"Why {topic} matter", f"How {topic} work", "What to try next"]


@step
async def draft(sections: list[str]) -> str:
    """Write one sentence per section under the title."""
    title, *rest = sections
    body = " ".join(f"{heading}: a short paragraph about it." for heading in rest)
    return f"{title}. {body}"


@step
async def publish(text: str) -> dict[str, Any]:
    """Publish the approved draft (here: count its words and mark it published)."""
    return {"status": "published", "text": text, "words": len(text.split())}


@workflow(name="human_review")
async def human_review(
    message: str | dict[str, Any] | None = None, *, ctx: RunContext
) -> dict[str, Any]:
    """Draft a text about a topic, ask a reviewer, then publish or reject it."""
    topic = message.get("topic") if isinstance(message, dict) else message
    sections = await outline(str(topic or "durable workflows"))
    text = await draft(sections)
    verdict = await ctx.request_info(
        {"draft": text, "question": "Publish this draft? Answer yes or no."}, str
    )
    if str(verdict).strip().lower() == "yes":
        return {"title": sections[0], **await publish(text)}
    return {"status": "rejected", "title": sections[0], "reason": str(verdict)}
