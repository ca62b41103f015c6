"""A workflow used as an agent-framework agent (``as_agent``), as a ported program uses it.

Written for agent-framework's functional API with only the import line changed; the same file
with ``from wfctl import`` switched to ``from agent_framework import`` passes under
agent-framework (1.26). The agent answers in agent-framework's own types (``AgentResponse``,
``AgentResponseUpdate``, ``Content``), so this file needs agent-framework installed either way.
Steps are module-level (agent-framework checkpoints only steps without captured state) and each
workflow is bound to an explicit ``InMemoryCheckpointStorage``.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from tests.conftest import arun
from wfctl import InMemoryCheckpointStorage, RunContext, step, workflow


@dataclass
class Handoff:
    """A request's data: a dataclass, which the approval request carries as JSON."""

    target: str
    reason: str


@step
async def add_one(x: int) -> int:
    return x + 1


@workflow(name="adder", description="Adds one")
async def adder(x: int) -> int:
    return await add_one(x)


@workflow(name="greeter")
async def greeter(name: str) -> str:
    # agent-framework's RunContext (1.26) has no yield_output: the return value is the output
    return f"hello {name}"


@workflow(name="handoff")
async def handoff(topic: str, ctx: RunContext) -> str:
    answer = await ctx.request_info(
        Handoff(target=topic, reason="overflow"), response_type=str, request_id="rid-1"
    )
    return f"got:{answer}"


def approvals_of(messages: Any) -> list[Any]:
    """The function-approval requests among the contents of ``messages``."""
    return [
        content
        for message in messages
        for content in message.contents
        if content.type == "function_approval_request"
    ]


def test_the_agent_is_named_after_the_workflow_and_keeps_what_it_is_given() -> None:
    wf = adder.build(checkpoint_storage=InMemoryCheckpointStorage())
    agent = wf.as_agent()
    assert (agent.name, agent.id, agent.description) == (
        "adder",
        "FunctionalWorkflowAgent_adder",
        "Adds one",
    )
    providers = [object()]
    named = wf.as_agent("calc", description="agent level", context_providers=providers)
    assert (named.name, named.id, named.description) == (
        "calc",
        "FunctionalWorkflowAgent_calc",
        "agent level",
    )
    assert list(named.context_providers) == providers


def test_run_through_the_agent_returns_the_outputs_as_its_messages() -> None:
    async def main() -> None:
        storage = InMemoryCheckpointStorage()
        agent = adder.build(checkpoint_storage=storage).as_agent()
        response = await agent.run(10)
        assert response.text == "11"
        assert [m.role for m in response.messages] == ["assistant"]
        # the run was driven through the workflow's storage: its checkpoints are there
        assert await storage.list_checkpoints(workflow_name="adder")

    arun(main())


def test_run_streamed_through_the_agent_yields_its_output_as_an_update() -> None:
    async def main() -> None:
        agent = greeter.build(checkpoint_storage=InMemoryCheckpointStorage()).as_agent()
        stream = agent.run("ada", stream=True)
        texts = [update.text async for update in stream]
        assert texts == ["hello ada"]
        final = await stream.get_final_response()
        assert final.text == "hello ada"

    arun(main())


def test_a_request_surfaces_as_an_approval_request_and_responses_resume_the_run() -> None:
    async def main() -> None:
        agent = handoff.build(checkpoint_storage=InMemoryCheckpointStorage()).as_agent()
        response = await agent.run("helper")
        assert list(agent.pending_requests) == ["rid-1"]
        (approval,) = approvals_of(response.messages)
        arguments = approval.function_call.arguments
        assert arguments == {
            "request_id": "rid-1",
            "data": {"target": "helper", "reason": "overflow"},
        }
        assert json.loads(json.dumps(arguments)) == arguments

        done = await agent.run(responses={"rid-1": "approved"})
        assert done.text == "got:approved"
        assert agent.pending_requests == {}
        assert approvals_of(done.messages) == []

    arun(main())


def test_a_request_surfaces_in_the_agent_s_stream() -> None:
    async def main() -> None:
        agent = handoff.build(checkpoint_storage=InMemoryCheckpointStorage()).as_agent()
        updates = [update async for update in agent.run("helper", stream=True)]
        (approval,) = approvals_of(updates)
        assert approval.function_call.arguments["request_id"] == "rid-1"
        assert list(agent.pending_requests) == ["rid-1"]
        streamed = agent.run(responses={"rid-1": "yes"}, stream=True)
        assert [update.text async for update in streamed] == ["got:yes"]

    arun(main())
