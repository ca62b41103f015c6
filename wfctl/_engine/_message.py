"""A workflow's message: the one parameter besides its ``RunContext``, its default, passing it.

``@workflow`` functions take at most one message. A fresh run without one uses the parameter's
default (and records it in the root); a parameter without a default needs one, and a workflow
without the parameter takes none. The message is passed by name, so the ``RunContext`` may be
declared before it.
"""

from __future__ import annotations

import inspect
import typing
from collections.abc import Awaitable, Callable
from typing import Any, Final

from wfctl._errors import AnswerTypeError, RunArgumentError, WorkflowDefinitionError

from ._response_types import convert_answer, type_name

__all__ = ["NO_MESSAGE", "MessageParameter"]

#: What ``Workflow.run`` gets when it is called without a message.
NO_MESSAGE: Final[Any] = object()


class MessageParameter:
    """The message parameter of a workflow function (``param`` is None when it takes none)."""

    __slots__ = ("context_param", "fn", "param", "workflow_name")

    def __init__(self, fn: Callable[..., Any], workflow_name: str, context_param: str | None):
        """Find the message parameter of ``fn``.

        Raises:
            WorkflowDefinitionError: ``fn`` takes more than one parameter besides its context.
        """
        others = [p for p in inspect.signature(fn).parameters.values() if p.name != context_param]
        if len(others) > 1:
            raise WorkflowDefinitionError(
                f"workflow {workflow_name!r} declares multiple non-RunContext parameters "
                f"({', '.join(p.name for p in others)}); it takes at most one parameter besides "
                "its RunContext (the message)"
            )
        self.param = others[0] if others else None
        self.context_param = context_param
        self.workflow_name = workflow_name
        self.fn = fn

    def from_data(self, message: Any) -> Any:
        """Return a message read from data (``--input``, a queued run's input) converted to
        the parameter's annotation, as an answer is to its request's ``response_type``:
        ``"5"`` or ``5.0`` for ``int`` is 5, an object for a registered dataclass is one.

        An annotation wfctl cannot check (none, ``Any``, a class that is not registered, a name
        that does not resolve) takes the message as given.

        Raises:
            RunArgumentError: the message does not fit the annotation (before anything is
                stored).
        """
        param = self.param
        if param is None or message is NO_MESSAGE:
            return message
        try:
            hint = typing.get_type_hints(self.fn).get(param.name)
            name = None if hint is None else type_name(hint, param.name)
        except Exception:  # an annotation wfctl cannot read or check: the message as given
            return message
        try:
            return convert_answer(message, name, param.name)
        except AnswerTypeError as exc:
            shown = repr(message)
            shown = shown if len(shown) <= 60 else shown[:57] + "..."
            raise RunArgumentError(
                f"the message for workflow {self.workflow_name!r} must be {exc.expected} "
                f"(its parameter {param.name!r}), not {shown}"
                + (
                    f": {exc.reason}"
                    if exc.reason and not exc.reason.startswith("expected")
                    else ""
                )
            ) from None

    def message_for(self, message: Any) -> Any:
        """Return the message a fresh run gets: ``message``, else the parameter's default.

        Raises:
            RunArgumentError: no message for a parameter without a default, or a message for a
                workflow that takes none.
        """
        param, name = self.param, self.workflow_name
        if param is None:
            if message is NO_MESSAGE:
                return None
            raise RunArgumentError(
                f"workflow {name!r} takes no message (it has no non-RunContext parameter to "
                "receive one), but one was given; run it without one (CLI: no --input)"
            )
        if message is not NO_MESSAGE:
            return message
        if param.default is inspect.Parameter.empty:
            raise RunArgumentError(
                f"workflow {name!r} needs a message for its parameter {param.name!r}, "
                "which has no default; pass one (CLI: --input JSON)"
            )
        return param.default

    def call(self, fn: Callable[..., Awaitable[Any]], message: Any, context: Any) -> Any:
        """Call the workflow function ``fn`` with ``message`` and its context."""
        kwargs = {self.context_param: context} if self.context_param else {}
        param = self.param
        if param is None:
            return fn(**kwargs)
        if param.kind in (param.POSITIONAL_ONLY, param.VAR_POSITIONAL):
            return fn(message, **kwargs)
        # By name, so a RunContext declared before the message still gets the context.
        return fn(**kwargs, **{param.name: message})
