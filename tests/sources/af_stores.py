"""One agent-framework checkpoint directory written by the real engine, once per session, for
the reader's tests and the CLI's: graph workflows (a request answered, one left waiting, a
checkpoint the framework would not save) and functional ones (parallel steps, two runs of one
workflow, a pause), and its copy as exported Cosmos DB documents."""

from __future__ import annotations

import asyncio
import json
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import agent_framework as af
import pytest
from agent_framework import Executor, WorkflowBuilder, WorkflowContext, handler, response_handler

from tests.sources.test_agent_framework_source import THING, workflows

#: The name agent-framework records for :class:`Ask` (allowed to be pickled on save).
ASK = f"{__name__}:Ask"


@dataclass
class Ask:
    """What the approver asks a person."""

    text: str


@dataclass
class Secret:
    """A message of a type outside the storage's allowlist: its checkpoint is not saved."""

    value: str


class Upper(Executor):
    @handler
    async def go(self, text: str, ctx: WorkflowContext[str]) -> None:
        await ctx.send_message(text.upper())


class Approver(Executor):
    @handler
    async def go(self, text: str, ctx: WorkflowContext[str]) -> None:
        await ctx.request_info(Ask(text), str)

    @response_handler
    async def done(self, original: Ask, answer: str, ctx: WorkflowContext[str, str]) -> None:
        await ctx.yield_output(f"{original.text}:{answer}")


class Hide(Executor):
    @handler
    async def go(self, text: str, ctx: WorkflowContext[Secret]) -> None:
        await ctx.send_message(Secret(text))


class Reveal(Executor):
    @handler
    async def go(self, secret: Secret, ctx: WorkflowContext[str]) -> None:
        await ctx.send_message(secret.value + "!")


class Say(Executor):
    @handler
    async def go(self, text: str, ctx: WorkflowContext[str, str]) -> None:
        await ctx.yield_output(text)


def _approval(storage: Any) -> Any:
    upper, approver = Upper(id="upper"), Approver(id="approver")
    builder = WorkflowBuilder(start_executor=upper, checkpoint_storage=storage, name="approval")
    return builder.add_edge(upper, approver).build()


def _skip(storage: Any) -> Any:
    hide, reveal, say = Hide(id="hide"), Reveal(id="reveal"), Say(id="say")
    builder = WorkflowBuilder(start_executor=hide, checkpoint_storage=storage, name="skip")
    return builder.add_edge(hide, reveal).add_edge(reveal, say).build()


def write_store(directory: Path) -> None:
    """Run, into ``directory``: ``approval`` answered, then ``approval`` left waiting;
    ``skip`` (iteration 1's checkpoint refused); ``fan`` of 3 then of 2 (parallel steps);
    ``review`` answered (by answers alone, which start a new root), then ``review`` paused."""
    made = workflows()

    async def main() -> None:
        storage = af.FileCheckpointStorage(directory, allowed_checkpoint_types=[THING, ASK])
        workflow = _approval(storage)
        asked = (await workflow.run("hello")).get_request_info_events()
        await workflow.run(responses={asked[0].request_id: "yes"})
        await _approval(storage).run("again")
        await _skip(storage).run("x")
        for name, message in (("fan", 3), ("fan", 2)):
            await made[name].build(checkpoint_storage=storage).run(message)
        review = made["review"].build(checkpoint_storage=storage)
        asked = (await review.run(2)).get_request_info_events()
        await review.run(responses={asked[0].request_id: "ok"})  # a new root: the same run
        await made["review"].build(checkpoint_storage=storage).run(2)

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the functional API says it is experimental
        asyncio.run(main())


def cosmos_copy(directory: Path, target: Path) -> None:
    """Copy ``directory`` as Cosmos DB's storage keeps it, one exported document per file: the
    same JSON with ``id`` (``<workflow>_<checkpoint>``), the partition's field and Cosmos's own
    fields; each file named by its document id."""
    target.mkdir()
    for index, file in enumerate(sorted(directory.glob("*.json"))):
        body = json.loads(file.read_text())
        document_id = f"{body['workflow_name']}_{body['checkpoint_id']}"
        document = {
            "id": document_id,
            **body,
            "_rid": f"AAAAAA{index:04d}==",
            "_self": f"dbs/AA==/colls/AA=/docs/{index}/",
            "_etag": f'"0000{index:04d}-0000-0000-0000-000000000000"',
            "_attachments": "attachments/",
            "_ts": 1765000000 + index,
        }
        (target / f"{document_id}.json").write_text(json.dumps(document))


@pytest.fixture(scope="session")
def af_store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The directory :func:`write_store` writes (read only by the tests: copy it to change it)."""
    directory = tmp_path_factory.mktemp("af-store")
    write_store(directory)
    return directory
