"""``Workflow.as_agent()``: a workflow as an agent-framework agent, driven durably by wfctl.

Imported only when asked for (``as_agent``, or the name ``wfctl.FunctionalWorkflowAgent``): it
imports agent-framework, the optional extra ``wfctl[agent-framework]``; without it the import
fails with one line naming the extra. The agent's ``run`` is the workflow's ``run`` (every step
checkpointed in the workflow's storage; the messages it is given, agent-framework's ``Message``
objects too, reach the workflow as they are and are stored by the codec), its outcome in
agent-framework's response types, as agent-framework's own ``FunctionalWorkflowAgent`` gives
them: each output a text message, each pending ``request_info`` a function-approval request
whose call's arguments are ``{"request_id", "data"}`` with the data made JSON-safe;
``run(responses=...)`` answers the paused run.
"""

from __future__ import annotations

import base64
import dataclasses
from collections.abc import AsyncIterator, Awaitable, Sequence
from datetime import date, datetime
from typing import Any, Literal, overload

try:
    from agent_framework import (
        AgentResponse,
        AgentResponseUpdate,
        BaseAgent,
        Content,
        Message,
        ResponseStream,
    )
except ImportError as exc:  # the optional extra is not installed
    raise ImportError(
        "Workflow.as_agent needs agent-framework, the optional extra of wfctl: "
        "pip install 'wfctl[agent-framework]'"
    ) from exc

__all__ = ["FunctionalWorkflowAgent"]

_JSON_SCALARS = (str, int, float, bool, type(None))


class FunctionalWorkflowAgent(BaseAgent):
    """A wfctl workflow as an agent-framework agent (what ``Workflow.as_agent()`` returns).

    ``id`` is ``FunctionalWorkflowAgent_<name>``; ``name`` defaults to the workflow's name and
    ``description`` to its description; ``context_providers`` are kept for the caller to read.
    ``pending_requests`` holds the ``request_info`` events the last run left unanswered, by
    request id.
    """

    #: The function name of the approval requests a ``request_info`` becomes.
    REQUEST_INFO_FUNCTION_NAME: str = "request_info"

    def __init__(
        self,
        workflow: Any,  # a wfctl Workflow: not imported here, which it imports
        *,
        name: str | None = None,
        description: str | None = None,
        context_providers: Sequence[Any] | None = None,
        **kwargs: Any,
    ) -> None:
        del kwargs  # agent-framework's signature: reserved, ignored
        self._workflow = workflow
        resolved = name or workflow.name
        super().__init__(
            id=f"FunctionalWorkflowAgent_{resolved}",
            name=resolved,
            description=description if description is not None else workflow.description,
            context_providers=context_providers,
        )
        self._pending_requests: dict[str, Any] = {}

    @property
    def pending_requests(self) -> dict[str, Any]:
        """The ``request_info`` events the last run left pending, by request id."""
        return self._pending_requests

    @overload
    def run(
        self,
        messages: Any | None = None,
        *,
        stream: Literal[True],
        responses: dict[str, Any] | None = None,
        checkpoint_id: str | None = None,
        checkpoint_storage: Any | None = None,
        session: Any | None = None,
        function_invocation_kwargs: Any | None = None,
        client_kwargs: Any | None = None,
        **kwargs: Any,
    ) -> ResponseStream[AgentResponseUpdate, AgentResponse]: ...

    @overload
    def run(
        self,
        messages: Any | None = None,
        *,
        stream: Literal[False] = ...,
        responses: dict[str, Any] | None = None,
        checkpoint_id: str | None = None,
        checkpoint_storage: Any | None = None,
        session: Any | None = None,
        function_invocation_kwargs: Any | None = None,
        client_kwargs: Any | None = None,
        **kwargs: Any,
    ) -> Awaitable[AgentResponse]: ...

    def run(
        self,
        messages: Any | None = None,
        *,
        stream: bool = False,
        responses: dict[str, Any] | None = None,
        checkpoint_id: str | None = None,
        checkpoint_storage: Any | None = None,
        session: Any | None = None,
        function_invocation_kwargs: Any | None = None,
        client_kwargs: Any | None = None,
        **kwargs: Any,
    ) -> ResponseStream[AgentResponseUpdate, AgentResponse] | Awaitable[AgentResponse]:
        """Run the workflow (start it with ``messages``, or answer or restore a run) and
        return its outcome as an ``AgentResponse``, or with ``stream=True`` a
        ``ResponseStream`` of ``AgentResponseUpdate`` items read as the run emits them.

        The arguments are the workflow's ``run``'s: ``messages`` is its message (None: none),
        ``responses`` answers the run this workflow paused last (or ``checkpoint_id``'s),
        ``checkpoint_storage`` and the other keywords are passed on. ``session``,
        ``function_invocation_kwargs`` and ``client_kwargs`` are what agent-framework passes
        every agent (an orchestration's ``AgentExecutor`` does): accepted and not used, since a
        workflow keeps its state in its storage and calls no chat client. Errors are the
        workflow's ``run``'s.
        """
        del session, function_invocation_kwargs, client_kwargs  # an agent's, not the workflow's
        arguments = dict(kwargs)
        if messages is not None:
            arguments["message"] = messages
        for key, value in (
            ("responses", responses),
            ("checkpoint_id", checkpoint_id),
            ("checkpoint_storage", checkpoint_storage),
        ):
            if value is not None:
                arguments[key] = value
        if stream:
            return self._streamed(arguments)
        return self._answered(arguments)

    async def _answered(self, arguments: dict[str, Any]) -> AgentResponse:
        result = await self._workflow.run(**arguments)
        self._pending_requests = {}
        messages = [Message("assistant", [_content_of(output)]) for output in result.get_outputs()]
        approvals = [self._approval(event) for event in result.get_request_info_events()]
        if approvals:
            messages.append(Message("assistant", approvals))
        return AgentResponse(messages=messages)

    def _streamed(
        self, arguments: dict[str, Any]
    ) -> ResponseStream[AgentResponseUpdate, AgentResponse]:
        self._pending_requests = {}
        workflow_stream = self._workflow.run(stream=True, **arguments)
        author = self.name

        async def updates() -> AsyncIterator[AgentResponseUpdate]:
            async for event in workflow_stream:
                if event.type == "output":
                    contents = [_content_of(event.data)]
                elif event.type == "request_info":
                    contents = [self._approval(event)]
                else:
                    continue
                yield AgentResponseUpdate(contents=contents, role="assistant", author_name=author)

        return ResponseStream(
            updates(), finalizer=AgentResponse.from_updates, cleanup_hooks=[workflow_stream.close]
        )

    def _approval(self, event: Any) -> Content:
        """The function-approval request a ``request_info`` event becomes (kept as pending)."""
        request_id = event.request_id
        self._pending_requests[request_id] = event
        call = Content.from_function_call(
            call_id=request_id,
            name=self.REQUEST_INFO_FUNCTION_NAME,
            arguments={"request_id": request_id, "data": json_safe(event.data)},
        )
        return Content.from_function_approval_request(
            id=request_id, function_call=call, additional_properties={"request_id": request_id}
        )


def _content_of(output: Any) -> Content:
    """An output as message content: itself if it is content, else its text."""
    if isinstance(output, Content):
        return output
    return Content.from_text(text=output if isinstance(output, str) else str(output))


def json_safe(value: Any, depth: int = 0) -> Any:
    """``value`` as JSON data, as agent-framework makes a request's data safe for a function
    call's arguments: dataclasses and pydantic models as their fields, dates as ISO text, bytes
    as base64, anything else as its ``str``."""
    if depth > 100:
        return str(value)
    if isinstance(value, _JSON_SCALARS):
        return value
    if isinstance(value, (datetime, date)):
        return value.isoformat()
    if isinstance(value, (bytes, bytearray)):
        return base64.b64encode(bytes(value)).decode("ascii")
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        fields = {f.name: getattr(value, f.name) for f in dataclasses.fields(value)}
        return json_safe(fields, depth + 1)
    if isinstance(value, dict):
        return {str(k): json_safe(v, depth + 1) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [json_safe(item, depth + 1) for item in value]
    dump = getattr(value, "model_dump", None)
    if callable(dump) and not isinstance(value, type):
        return json_safe(dump(mode="json"), depth + 1)
    return str(value)
