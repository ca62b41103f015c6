"""A workflow given agent-framework's ``Message`` objects through its agent
(tests/cli/test_agent_messages.py): its step answers with a ``Message``, then it asks before
sending, so the run pauses with both stored; a resume in another process reads them back.

``start`` runs it the way a chat program calls the agent: with a list of messages.
"""

from __future__ import annotations

from typing import Any

from agent_framework import Message

from wfctl import FileCheckpointStorage, RunContext, step, workflow


@step
async def answer(conversation: list[Message]) -> Message:
    said = " / ".join(message.text for message in conversation)
    return Message("assistant", [f"heard: {said}"], author_name="chat")


@workflow(name="chat")
async def chat(conversation: Any, ctx: RunContext) -> str:
    reply = await answer(conversation)
    verdict = await ctx.request_info("send?", response_type=str, request_id="send")
    first = conversation[0]
    return f"{reply.text} ({verdict}; {len(conversation)} messages, first by {first.role})"


async def start(store: str, run_id: str) -> None:
    agent = chat.build(checkpoint_storage=FileCheckpointStorage(store)).as_agent()
    asked = [Message("user", ["hello"]), Message("user", ["world"], author_name="ada")]
    response = await agent.run(asked, run_id=run_id)
    print(sorted(agent.pending_requests), response.messages[-1].contents[0].type)
