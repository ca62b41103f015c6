"""agent-framework's chat types given to a workflow used as an agent, as a larger program does.

Written for agent-framework's functional API with only the import line changed; the same file
with ``from wfctl import`` switched to ``from agent_framework import`` passes under
agent-framework (1.26). The workflow receives what the agent is given, as it is: a list of
``Message`` objects, one ``Message`` or a string. An orchestration of agent-framework's own
(``WorkflowBuilder`` with ``AgentExecutor``s, what ``SequentialBuilder`` builds) runs a stand-in
chat agent, then the workflow's agent, which answers from the whole conversation.
"""

from __future__ import annotations

from typing import Any

from agent_framework import AgentResponse, BaseAgent, Message, WorkflowBuilder

from tests.conftest import arun
from wfctl import InMemoryCheckpointStorage, step, workflow

#: What each run's workflow was given, and what its step gave back (replayed or live).
SEEN: list[Any] = []


@step
async def heard(conversation: Any) -> Any:
    return conversation


@workflow(name="listener")
async def listener(conversation: Any) -> str:
    SEEN.append(conversation)
    echoed = await heard(conversation)
    SEEN.append(echoed)
    if isinstance(echoed, list):
        return " | ".join(f"{m.role}: {m.text}" for m in echoed)
    if isinstance(echoed, Message):
        return f"{echoed.role}: {echoed.text}"
    return f"text: {echoed}"


class Drafter(BaseAgent):
    """A stand-in chat agent: no model, no network; it drafts from the conversation it gets."""

    def run(self, messages: Any = None, *, stream: bool = False, **kwargs: Any) -> Any:
        async def answer() -> AgentResponse:
            text = " ".join(m.text for m in messages)
            reply = Message("assistant", [f"draft of {text}"], author_name=self.name)
            return AgentResponse(messages=[reply])

        return answer()


def _shapes(values: list[Any]) -> list[Any]:
    return [
        [type(item).__name__ for item in value] if isinstance(value, list) else type(value).__name__
        for value in values
    ]


def test_a_list_of_messages_reaches_the_workflow_as_a_list_of_messages() -> None:
    async def main() -> None:
        SEEN.clear()
        agent = listener.build(checkpoint_storage=InMemoryCheckpointStorage()).as_agent()
        asked = [Message("user", ["hello"]), Message("assistant", ["hi, what now?"])]
        response = await agent.run(asked)
        assert response.text == "user: hello | assistant: hi, what now?"
        assert _shapes(SEEN) == [["Message", "Message"], ["Message", "Message"]]
        assert SEEN[0] is asked  # the run's input itself, as agent-framework passes it

    arun(main())


def test_one_message_and_a_string_reach_the_workflow_as_they_are() -> None:
    async def main() -> None:
        SEEN.clear()
        agent = listener.build(checkpoint_storage=InMemoryCheckpointStorage()).as_agent()
        one = await agent.run(Message("user", ["only this"]))
        assert one.text == "user: only this"
        text = await agent.run("plain")
        assert text.text == "text: plain"
        assert _shapes(SEEN) == ["Message", "Message", "str", "str"]

    arun(main())


def test_an_orchestration_runs_the_workflow_s_agent_after_a_chat_agent() -> None:
    async def main() -> None:
        SEEN.clear()
        agent = listener.build(checkpoint_storage=InMemoryCheckpointStorage()).as_agent()
        drafter = Drafter(name="drafter")
        flow = (
            WorkflowBuilder(start_executor=drafter, output_from=[agent])
            .add_edge(drafter, agent)
            .build()
        )
        result = await flow.run("a poem")
        (output,) = result.get_outputs()
        assert isinstance(output, AgentResponse)
        assert output.text == "user: a poem | assistant: draft of a poem"
        assert _shapes(SEEN[:1]) == [["Message", "Message"]]

    arun(main())
