"""The patterns agent-framework's functional samples use, written as a ported program would be.

Each test is a program for agent-framework's functional workflow API with only its import line
changed: sequential and parallel pipelines, streaming, human-in-the-loop with resume, steps and
checkpointing with call counts, agent calls in steps, and a group chat loop. The "agents" are
deterministic stand-ins with an async ``run()``; concurrency is ordered by ``asyncio.Event``
gates, never by sleeping.

The same file with ``from wfctl import`` switched to ``from agent_framework import`` runs under
agent-framework (1.23), and every test passes there except those of wfctl's deliberate differences
(docs/decisions/0038-deliberate-differences-from-agent-framework.md: the root checkpoint, keyed
automatic request ids, ``ReplayDivergenceError``, one pause holding every branch's question); those
assert wfctl's behaviour and say so. Names only wfctl has are reached through ``wfctl.``; names
wfctl does not have yet are imported inside the tests that need them. Every workflow is bound to an
explicit ``InMemoryCheckpointStorage``, so nothing is written to the default store.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pytest

import wfctl  # wfctl only: its deliberate differences (ReplayDivergenceError)
from wfctl import InMemoryCheckpointStorage, RunContext, step, workflow

# -- stand-in agents ------------------------------------------------------------------------


@dataclass
class AgentResponse:
    """What a stand-in agent returns: the ``.text`` of an agent-framework ``AgentResponse``."""

    text: str


class StandInAgent:
    """A deterministic "agent": its reply depends only on its name and the prompt."""

    def __init__(self, name: str, reply: Callable[[str], str] | None = None) -> None:
        self.name = name
        self.reply = reply or (lambda prompt: f"{name}: {prompt}")
        self.prompts: list[str] = []

    async def run(self, prompt: str) -> AgentResponse:
        self.prompts.append(prompt)
        return AgentResponse(self.reply(prompt))


calls: dict[str, int] = {}
gates: dict[str, asyncio.Event] = {}
finished: list[str] = []


@pytest.fixture(autouse=True)
def _fresh_counters() -> None:
    calls.clear()
    gates.clear()
    finished.clear()


def count(name: str) -> None:
    calls[name] = calls.get(name, 0) + 1


# -- sequential pipeline -------------------------------------------------------------------


@step
async def fetch(url: str) -> dict[str, Any]:
    count("fetch")
    return {"url": url, "status": 200, "body": f"data from {url}"}


@step
async def transform(raw: dict[str, Any]) -> str:
    count("transform")
    return f"[{raw['status']}] {raw['body']}"


async def validate(summary: str) -> bool:  # a plain function: no @step, runs again on restore
    count("validate")
    return summary.startswith("[200]")


@workflow
async def data_pipeline(url: str) -> str:
    raw = await fetch(url)
    summary = await transform(raw)
    return f"{summary} (valid={await validate(summary)})"


def test_sequential_pipeline_returns_its_output() -> None:
    async def main() -> None:
        wf = data_pipeline.build(checkpoint_storage=InMemoryCheckpointStorage())
        result = await wf.run("https://example.com/a")
        assert result.get_outputs() == ["[200] data from https://example.com/a (valid=True)"]
        assert calls == {"fetch": 1, "transform": 1, "validate": 1}

    asyncio.run(main())


def test_sequential_pipeline_final_state_is_idle() -> None:
    from wfctl import WorkflowRunState

    async def main() -> None:
        wf = data_pipeline.build(checkpoint_storage=InMemoryCheckpointStorage())
        result = await wf.run("https://example.com/a")
        assert result.get_final_state() == WorkflowRunState.IDLE

    asyncio.run(main())


def test_outside_a_run_a_step_is_a_plain_call() -> None:
    assert asyncio.run(transform({"status": 404, "body": "gone"})) == "[404] gone"
    assert calls == {"transform": 1}


# -- parallel pipeline (asyncio.gather of steps) --------------------------------------------


@step
async def research(source: str, topic: str) -> str:
    """Wait for the source before it (if any), then finish: completion order is the reverse
    of the call order, so gather's own order must come from the call, not the completion."""
    count(source)
    before = {"web": "papers", "papers": "news"}.get(source)
    if before is not None:
        await gates[before].wait()
    finished.append(source)
    gates[source].set()
    return f"{source} on {topic}"


@workflow
async def research_pipeline(topic: str) -> list[str]:
    web, papers, news = await asyncio.gather(
        research("web", topic), research("papers", topic), research("news", topic)
    )
    return [web, papers, news]


def open_gates() -> None:
    for source in ("web", "papers", "news"):
        gates[source] = asyncio.Event()


def test_parallel_pipeline_keeps_call_order_whatever_the_completion_order() -> None:
    async def main() -> None:
        storage = InMemoryCheckpointStorage()
        wf = research_pipeline.build(checkpoint_storage=storage)
        open_gates()
        result = await wf.run("agents")
        expected = ["web on agents", "papers on agents", "news on agents"]
        assert result.get_outputs() == [expected]
        assert finished == ["news", "papers", "web"]
        # Restoring the completed run serves every branch its own recorded result.
        latest = await storage.get_latest(workflow_name="research_pipeline")
        assert latest is not None
        open_gates()
        again = await wf.run(checkpoint_id=latest.checkpoint_id)
        assert again.get_outputs() == [expected]
        assert calls == {"web": 1, "papers": 1, "news": 1}

    asyncio.run(main())


# -- streaming ------------------------------------------------------------------------------


def test_streaming_yields_events_then_the_final_response() -> None:
    async def main() -> None:
        wf = data_pipeline.build(checkpoint_storage=InMemoryCheckpointStorage())
        stream = wf.run("https://example.com/s", stream=True)
        seen = [(event.type, getattr(event, "executor_id", None)) async for event in stream]
        result = await stream.get_final_response()
        assert result.get_outputs() == ["[200] data from https://example.com/s (valid=True)"]
        steps = [pair for pair in seen if pair[0].startswith("executor_")]
        assert steps == [
            ("executor_invoked", "fetch"),
            ("executor_completed", "fetch"),
            ("executor_invoked", "transform"),
            ("executor_completed", "transform"),
        ]
        outputs = [i for i, (kind, _) in enumerate(seen) if kind == "output"]
        assert len(outputs) == 1 and outputs[0] > seen.index(("executor_completed", "transform"))

    asyncio.run(main())


def test_status_events_on_request() -> None:
    async def main() -> None:
        wf = data_pipeline.build(checkpoint_storage=InMemoryCheckpointStorage())
        quiet = await wf.run("https://example.com/q")
        assert not [e for e in quiet if e.type == "status"]
        again = data_pipeline.build(checkpoint_storage=InMemoryCheckpointStorage())
        loud = await again.run("https://example.com/q", include_status_events=True)
        assert [e for e in loud if e.type == "status"]
        assert loud.status_timeline()

    asyncio.run(main())


# -- human in the loop, with resume ---------------------------------------------------------


@step
async def write_draft(topic: str) -> str:
    count("write_draft")
    return f"A draft about {topic}."


@step
async def revise(draft: str, feedback: str) -> str:
    count("revise")
    return f"{draft} Revised: {feedback}."


@workflow
async def review_pipeline(topic: str, ctx: RunContext) -> str:
    draft = await write_draft(topic)
    feedback = await ctx.request_info({"draft": draft}, response_type=str, request_id="review")
    return await revise(draft, feedback)


def test_hitl_pauses_and_resumes_without_rerunning_the_draft() -> None:
    async def main() -> None:
        wf = review_pipeline.build(checkpoint_storage=InMemoryCheckpointStorage())
        paused = await wf.run("tides")
        [request] = paused.get_request_info_events()
        assert request.request_id == "review"
        assert paused.get_outputs() == []
        done = await wf.run(responses={"review": "shorter"})
        assert done.get_outputs() == ["A draft about tides. Revised: shorter."]
        assert calls == {"write_draft": 1, "revise": 1}

    asyncio.run(main())


def test_hitl_paused_state_and_request_event_as_upstream() -> None:
    from wfctl import WorkflowRunState

    async def main() -> None:
        wf = review_pipeline.build(checkpoint_storage=InMemoryCheckpointStorage())
        paused = await wf.run("tides")
        assert paused.get_final_state() == WorkflowRunState.IDLE_WITH_PENDING_REQUESTS
        [request] = paused.get_request_info_events()
        assert request.type == "request_info"
        assert request.data == {"draft": "A draft about tides."}
        assert request.response_type is str
        done = await wf.run(responses={"review": "shorter"})
        assert done.get_final_state() == WorkflowRunState.IDLE

    asyncio.run(main())


@workflow
async def two_reviewers(topic: str, ctx: RunContext) -> list[str]:
    """Two branches ask at once: the run pauses once, holding both questions."""

    async def ask(reviewer: str) -> str:
        draft = await write_draft(topic)
        return await ctx.request_info({"draft": draft}, response_type=str, request_id=reviewer)

    return list(await asyncio.gather(ask("legal"), ask("style")))


def test_hitl_parallel_requests_answered_in_a_loop() -> None:
    async def main() -> None:
        wf = two_reviewers.build(checkpoint_storage=InMemoryCheckpointStorage())
        result, _ = await answer_every_round(wf, "tides", lambda rid: f"{rid} ok")
        assert result.get_outputs() == [["legal ok", "style ok"]]
        assert calls == {"write_draft": 2}

    asyncio.run(main())


def test_hitl_parallel_requests_pause_together() -> None:
    """Deliberate difference: a pause waits for every branch to finish or ask, so one pause
    holds both questions (upstream pauses at the first and asks the other after resuming)."""

    async def main() -> None:
        wf = two_reviewers.build(checkpoint_storage=InMemoryCheckpointStorage())
        paused = await wf.run("tides")
        assert sorted(r.request_id for r in paused.get_request_info_events()) == ["legal", "style"]
        done = await wf.run(responses={"legal": "fine", "style": "terse"})
        assert done.get_outputs() == [["fine", "terse"]]

    asyncio.run(main())


@step
async def plan(goal: str) -> list[str]:
    count("plan")
    return [f"{goal}: part {i}" for i in (1, 2)]


@workflow
async def approval_chain(goal: str, ctx: RunContext) -> list[str]:
    """Ask for one approval per part, one question at a time."""
    approved = []
    for part in await plan(goal):
        verdict = await ctx.request_info({"part": part}, response_type=str)
        approved.append(f"{part} -> {verdict}")
    return approved


async def answer_every_round(
    wf: Any, goal: str, answer: Callable[[str], str] | None = None
) -> tuple[Any, list[list[str]]]:
    """Drive a multi-round HITL run as upstream's samples do: resend every answer so far.

    ``answer`` gives the answer to a request id (default: ``ok1``, ``ok2``, ... in order).
    """
    answers: dict[str, str] = {}
    rounds: list[list[str]] = []
    result = await wf.run(goal)
    while requests := result.get_request_info_events():
        rounds.append([r.request_id for r in requests])
        for request in requests:
            rid = request.request_id
            answers[rid] = answer(rid) if answer else f"ok{len(answers) + 1}"
        result = await wf.run(responses=dict(answers))
    return result, rounds


def test_hitl_loop_resending_all_answers_so_far() -> None:
    async def main() -> None:
        wf = approval_chain.build(checkpoint_storage=InMemoryCheckpointStorage())
        result, rounds = await answer_every_round(wf, "ship")
        assert result.get_outputs() == [["ship: part 1 -> ok1", "ship: part 2 -> ok2"]]
        assert len(rounds) == 2 and calls == {"plan": 1}

    asyncio.run(main())


def test_hitl_automatic_request_ids_are_keyed() -> None:
    """Deliberate difference: an automatic request id is ``<scope>/request#<n>`` (upstream:
    ``auto::<n>``), the same key scheme as steps, so a question asked inside a branch or a
    step has an id that does not depend on scheduling order."""

    async def main() -> None:
        wf = approval_chain.build(checkpoint_storage=InMemoryCheckpointStorage())
        first = await wf.run("ship")
        assert [r.request_id for r in first.get_request_info_events()] == ["request#0"]
        second = await wf.run(responses={"request#0": "ok1"})
        assert [r.request_id for r in second.get_request_info_events()] == ["request#1"]
        done = await wf.run(responses={"request#1": "ok2"})
        assert done.get_outputs() == [["ship: part 1 -> ok1", "ship: part 2 -> ok2"]]

    asyncio.run(main())


# -- steps and checkpointing, with call counts ----------------------------------------------


def test_restoring_the_latest_checkpoint_serves_recorded_step_results() -> None:
    async def main() -> None:
        storage = InMemoryCheckpointStorage()
        wf = data_pipeline.build(checkpoint_storage=storage)
        first = await wf.run("https://example.com/c")
        assert calls == {"fetch": 1, "transform": 1, "validate": 1}
        latest = await storage.get_latest(workflow_name="data_pipeline")
        assert latest is not None
        again = await wf.run(checkpoint_id=latest.checkpoint_id)
        assert again.get_outputs() == first.get_outputs()
        # The steps' bodies ran once; the plain function runs again, as upstream.
        assert calls == {"fetch": 1, "transform": 1, "validate": 2}

    asyncio.run(main())


def test_checkpoints_one_per_step_plus_the_root_and_the_end() -> None:
    """Deliberate difference: the run's root checkpoint (its input and code signature) exists,
    so a run has one checkpoint more than upstream's, and restoring the root re-runs all."""

    async def main() -> None:
        storage = InMemoryCheckpointStorage()
        wf = data_pipeline.build(checkpoint_storage=storage)
        await wf.run("https://example.com/r")
        checkpoints = await storage.list_checkpoints(workflow_name="data_pipeline")
        assert len(checkpoints) == 4  # root, fetch, transform, completion
        root = min(checkpoints, key=lambda c: c.timestamp)
        restored = await wf.run(checkpoint_id=root.checkpoint_id)
        assert restored.get_outputs() == ["[200] data from https://example.com/r (valid=True)"]
        assert calls == {"fetch": 2, "transform": 2, "validate": 2}

    asyncio.run(main())


def test_steps_emit_executor_events_in_the_result() -> None:
    async def main() -> None:
        wf = data_pipeline.build(checkpoint_storage=InMemoryCheckpointStorage())
        result = await wf.run("https://example.com/e")
        pairs = [(e.type, e.executor_id) for e in result if e.type.startswith("executor_")]
        assert pairs == [
            ("executor_invoked", "fetch"),
            ("executor_completed", "fetch"),
            ("executor_invoked", "transform"),
            ("executor_completed", "transform"),
        ]
        completed = [e.data for e in result if e.type == "executor_completed"]
        assert completed[-1] == "[200] data from https://example.com/e"

    asyncio.run(main())


source_of_truth: dict[str, str] = {}


@step
async def lookup(key: str) -> str:
    count("lookup")
    return f"value of {key}"


@workflow
async def reads_outside_state(key: str) -> str:
    # The argument comes from outside the run: a restore that sees another value is a
    # different program, and its recorded result must not be served to it.
    return await lookup(source_of_truth.get(key, key))


def test_a_restore_that_would_swap_a_result_raises_replay_divergence() -> None:
    """Deliberate difference: upstream would run the call live on a different argument; wfctl
    refuses a replay whose recorded calls no longer match."""

    async def main() -> None:
        storage = InMemoryCheckpointStorage()
        wf = reads_outside_state.build(checkpoint_storage=storage)
        source_of_truth["k"] = "first"
        await wf.run("k")
        [_, after_lookup, *_] = await storage.list_checkpoints(workflow_name="reads_outside_state")
        source_of_truth["k"] = "second"
        with pytest.raises(wfctl.ReplayDivergenceError):
            await wf.run(checkpoint_id=after_lookup.checkpoint_id)

    asyncio.run(main())


# -- agent calls in steps -------------------------------------------------------------------

classifier = StandInAgent("classifier", lambda prompt: "Technical")
writer = StandInAgent("writer", lambda prompt: f"Summary of {prompt.split(': ', 1)[1]}")


@step
async def classify(document: str) -> str:
    count("classify")
    return (await classifier.run(f"Classify: {document}")).text


@step
async def summarize(document: str) -> str:
    count("summarize")
    return (await writer.run(f"Summarize: {document}")).text


@workflow
async def document_pipeline(document: str, ctx: RunContext) -> str:
    kind, summary = await classify(document), await summarize(document)
    verdict = await ctx.request_info({"summary": summary}, response_type=str, request_id="ok")
    return f"{kind} | {summary} | {verdict}"


def test_agent_calls_in_steps_run_once_across_a_pause() -> None:
    async def main() -> None:
        classifier.prompts.clear()
        writer.prompts.clear()
        wf = document_pipeline.build(checkpoint_storage=InMemoryCheckpointStorage())
        paused = await wf.run("notes on tides")
        assert [r.request_id for r in paused.get_request_info_events()] == ["ok"]
        done = await wf.run(responses={"ok": "approved"})
        assert done.get_outputs() == ["Technical | Summary of notes on tides | approved"]
        assert calls == {"classify": 1, "summarize": 1}
        assert classifier.prompts == ["Classify: notes on tides"]
        assert writer.prompts == ["Summarize: notes on tides"]

    asyncio.run(main())


# -- a group chat loop ----------------------------------------------------------------------


def critic_reply(prompt: str) -> str:
    return "APPROVED" if "revision 2" in prompt else "needs another revision"


participants = {
    "author": StandInAgent("author", lambda prompt: f"revision {prompt.count('critic:') + 1}"),
    "critic": StandInAgent("critic", critic_reply),
}


@step
async def take_turn(speaker: str, transcript: list[str]) -> str:
    count(speaker)
    return (await participants[speaker].run("\n".join(transcript))).text


@workflow
async def group_chat(topic: str) -> list[str]:
    transcript = [f"user: {topic}"]
    order = ["author", "critic"]
    for turn in range(10):  # each turn is a step; the critic's approval ends the chat
        speaker = order[turn % len(order)]
        reply = await take_turn(speaker, transcript)
        transcript.append(f"{speaker}: {reply}")
        if reply == "APPROVED":
            break
    return transcript


def test_group_chat_takes_turns_until_the_stop_condition() -> None:
    async def main() -> None:
        storage = InMemoryCheckpointStorage()
        wf = group_chat.build(checkpoint_storage=storage)
        result = await wf.run("a haiku")
        expected = [
            "user: a haiku",
            "author: revision 1",
            "critic: needs another revision",
            "author: revision 2",
            "critic: APPROVED",
        ]
        assert result.get_outputs() == [expected]
        assert calls == {"author": 2, "critic": 2}
        latest = await storage.get_latest(workflow_name="group_chat")
        assert latest is not None
        replayed = await wf.run(checkpoint_id=latest.checkpoint_id)
        assert replayed.get_outputs() == [expected]
        assert calls == {"author": 2, "critic": 2}, "no agent is called again on restore"

    asyncio.run(main())
