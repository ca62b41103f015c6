"""``@step``: an async function whose result a run records and replays by durable key."""

from __future__ import annotations

import contextvars
import functools
import inspect
from collections.abc import Awaitable, Callable, Coroutine
from typing import Any, Generic, ParamSpec, TypeVar, overload

from wfctl._errors import WorkflowDefinitionError

from ._annotated import AnnotatedTypes
from ._policies import Retry, StepPolicy
from ._port import RunPort, port_var

__all__ = ["NOT_GIVEN", "ContextSlot", "Step", "context_parameter", "step"]

P = ParamSpec("P")
R = TypeVar("R")

_port: contextvars.ContextVar[RunPort[Any, Step[Any]] | None] = port_var()


def context_parameter(fn: Callable[..., Any]) -> str | None:
    """Return the name of ``fn``'s ``RunContext`` parameter (by annotation or named ``ctx``)."""
    for param in inspect.signature(fn).parameters.values():
        annotation = param.annotation
        name = getattr(annotation, "__name__", annotation)
        if param.name == "ctx" or name in ("RunContext", "wfctl.RunContext"):
            return param.name
    return None


class ContextSlot:
    """Where a step's ``RunContext`` parameter sits, to take it out of a call and put it in.

    A caller does not pass the context: it is injected where the parameter is declared, first
    or last, positional or keyword-only. A caller that does pass it (``ctx=...``, or every
    positional argument including it) passed it explicitly; :meth:`split` takes it out so it
    is neither part of the call's identity nor passed twice.
    """

    __slots__ = ("index", "keyword_only", "name", "positional")

    def __init__(self, fn: Callable[..., Any], name: str) -> None:
        params = list(inspect.signature(fn).parameters.values())
        self.name = name
        positional = [p for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
        names = [p.name for p in positional]
        self.keyword_only = name not in names
        self.index = names.index(name) if name in names else -1
        # With ``*args`` a call never shows whether the context was passed by position.
        self.positional = -1 if any(p.kind == p.VAR_POSITIONAL for p in params) else len(names)

    def split(
        self, args: tuple[Any, ...], kwargs: dict[str, Any]
    ) -> tuple[tuple[Any, ...], dict[str, Any], Any]:
        """Return the call's arguments without the context, and the context it passed.

        The last item is :data:`NOT_GIVEN` when the caller passed no context.
        """
        if self.name in kwargs:
            rest = dict(kwargs)
            return args, rest, rest.pop(self.name)
        if not self.keyword_only and len(args) == self.positional:
            return args[: self.index] + args[self.index + 1 :], kwargs, args[self.index]
        return args, kwargs, NOT_GIVEN

    def join(
        self, args: tuple[Any, ...], kwargs: dict[str, Any], context: Any
    ) -> tuple[tuple[Any, ...], dict[str, Any]]:
        """Return the call's arguments with ``context`` in the parameter's place."""
        if self.keyword_only or len(args) < self.index:
            return args, {**kwargs, self.name: context}
        return (*args[: self.index], context, *args[self.index :]), kwargs


#: What :meth:`ContextSlot.split` returns for a call that passed no context.
NOT_GIVEN: Any = object()


class Step(Generic[R]):
    """A step: call it like the function it wraps.

    Inside a run each call gets a durable key and its result is committed before the call
    returns (or served from the record on restore). Outside a run it is a plain call; a
    ``RunContext`` parameter then receives the context the caller passed, else None. The
    parameter may come anywhere (``async def s(ctx, data)`` is called ``s(data)``).
    """

    def __init__(
        self,
        fn: Callable[..., Awaitable[R]],
        *,
        name: str | None = None,
        replay_key: Callable[..., Any] | None = None,
        retries: Retry | None = None,
        timeout: float | None = None,
        record_args: bool = True,
    ) -> None:
        if not inspect.iscoroutinefunction(fn):
            raise WorkflowDefinitionError(
                f"@step can only decorate async functions; {getattr(fn, '__qualname__', fn)!r} is not"
            )
        self.fn = fn
        self.name = name or fn.__name__
        #: The other fields of the step's events (``keep``'s: shared, never changed).
        self.event_fields: dict[str, Any] = {"executor_id": self.name}
        if not self.name or any(c in self.name for c in "/#@"):
            raise WorkflowDefinitionError(f"invalid step name {self.name!r}: no '/', '#' or '@'")
        self.replay_key = replay_key
        if timeout is not None and timeout <= 0:
            raise WorkflowDefinitionError(f"step {self.name!r}: timeout must be > 0 seconds")
        #: The step's retries and timeout; None (no retries, no timeout declared) keeps the
        #: step on the plain path unless the workflow sets ``step_retries``.
        self.policy = None if retries is None and timeout is None else StepPolicy(retries, timeout)
        #: Whether each call's arguments are stored in its record (the digest always is).
        self.record_args = record_args
        #: The classes the annotations name, registered so the step's values round-trip.
        self.types = AnnotatedTypes(fn)
        context_param = context_parameter(fn)
        #: Where the step's ``RunContext`` parameter is, if it declares one.
        self.context = ContextSlot(fn, context_param) if context_param is not None else None
        functools.update_wrapper(self, fn)

    def __call__(self, *args: Any, **kwargs: Any) -> Coroutine[Any, Any, R]:
        # Not ``async def``: the call is keyed here, when the call expression is evaluated, in
        # program order -- not when its coroutine first runs (see ``Run.start_step``).
        return self._start(args, kwargs, None)

    def keyed(self, key: object) -> Callable[..., Coroutine[Any, Any, R]]:
        """Return a caller of this step under the explicit durable key ``key``.

        The key replaces the counted part of the call's identity (``<scope>/<name>@<key>``)
        and must be unique within its scope in a run.
        """
        explicit = str(key)
        return lambda *args, **kwargs: self._start(args, kwargs, explicit)

    def _start(
        self, args: tuple[Any, ...], kwargs: dict[str, Any], explicit: str | None
    ) -> Coroutine[Any, Any, R]:
        run = _port.get()
        if run is not None and not self.types.done:
            self.types.register()  # an annotation that did not resolve at decoration
        slot = self.context
        if slot is None:
            return (
                self.fn(*args, **kwargs)
                if run is None
                else run.start_step(self, args, kwargs, explicit)
            )
        # The context is never part of the call: inside a run the step gets the run's own
        # (see ``Run._execute``); outside one, the context the caller passed, else None.
        args, kwargs, given = slot.split(args, kwargs)
        if run is None:
            args, kwargs = slot.join(args, kwargs, None if given is NOT_GIVEN else given)
            return self.fn(*args, **kwargs)
        return run.start_step(self, args, kwargs, explicit)

    def __repr__(self) -> str:
        return f"<step {self.name}>"


@overload
def step(fn: Callable[P, Awaitable[R]], /) -> Step[R]: ...


@overload
def step(
    *,
    name: str | None = None,
    replay_key: Callable[..., Any] | None = None,
    retries: Retry | None = None,
    timeout: float | None = None,
    record_args: bool = True,
) -> Callable[[Callable[P, Awaitable[R]]], Step[R]]: ...


def step(
    fn: Callable[..., Awaitable[R]] | None = None,
    /,
    *,
    name: str | None = None,
    replay_key: Callable[..., Any] | None = None,
    retries: Retry | None = None,
    timeout: float | None = None,
    record_args: bool = True,
) -> Step[R] | Callable[[Callable[..., Awaitable[R]]], Step[R]]:
    """Mark an async function as a step: ``@step``, ``@step(name=...)``, ``@step(replay_key=f)``.

    ``replay_key`` receives each call's arguments and returns its explicit durable key.
    ``retries`` (a :class:`~wfctl.Retry`) retries a failing call with backoff, overriding the
    workflow's ``step_retries`` (``Retry(attempts=1)`` turns them off); ``timeout`` bounds
    each attempt, in seconds, and a timeout is a retryable ``TimeoutError``. Each call's
    arguments are stored in its record (shown by ``wfctl show``, ``wfctl log -v`` and in a
    replay divergence); ``record_args=False`` stores only their digest (secrets, big inputs).

    Raises:
        WorkflowDefinitionError: (a ``TypeError``, also a ``ValueError``) the function is not
            ``async``.
    """
    options: dict[str, Any] = {
        "name": name,
        "replay_key": replay_key,
        "retries": retries,
        "timeout": timeout,
        "record_args": record_args,
    }
    if fn is not None:
        return Step(fn, **options)
    return lambda f: Step(f, **options)
