"""``@step``: an async function whose result a run records and replays by durable key."""

from __future__ import annotations

import functools
import inspect
from collections.abc import Awaitable, Callable, Coroutine
from typing import Any, Generic, ParamSpec, TypeVar, overload

from ._errors import WorkflowDefinitionError
from ._policies import Retry, StepPolicy
from ._port import port_var

__all__ = ["Step", "context_parameter", "step"]

P = ParamSpec("P")
R = TypeVar("R")

_port = port_var()


def context_parameter(fn: Callable[..., Any]) -> str | None:
    """Return the name of ``fn``'s ``RunContext`` parameter (by annotation or named ``ctx``)."""
    for param in inspect.signature(fn).parameters.values():
        annotation = param.annotation
        name = getattr(annotation, "__name__", annotation)
        if param.name == "ctx" or name in ("RunContext", "wfctl.RunContext"):
            return param.name
    return None


class Step(Generic[R]):
    """A step: call it like the function it wraps.

    Inside a run each call gets a durable key and its result is committed before the call
    returns (or served from the record on restore). Outside a run it is a plain call; a
    ``RunContext`` parameter then receives None.
    """

    def __init__(
        self,
        fn: Callable[..., Awaitable[R]],
        *,
        name: str | None = None,
        replay_key: Callable[..., Any] | None = None,
        retries: Retry | None = None,
        timeout: float | None = None,
    ) -> None:
        if not inspect.iscoroutinefunction(fn):
            raise WorkflowDefinitionError(
                f"@step needs an async function; {getattr(fn, '__qualname__', fn)!r} is not"
            )
        self.fn = fn
        self.name = name or fn.__name__
        if not self.name or any(c in self.name for c in "/#@"):
            raise WorkflowDefinitionError(f"invalid step name {self.name!r}: no '/', '#' or '@'")
        self.replay_key = replay_key
        if timeout is not None and timeout <= 0:
            raise WorkflowDefinitionError(f"step {self.name!r}: timeout must be > 0 seconds")
        #: The step's retries and timeout; None (no retries, no timeout declared) keeps the
        #: step on the plain path unless the workflow sets ``step_retries``.
        self.policy = None if retries is None and timeout is None else StepPolicy(retries, timeout)
        self.context_param = context_parameter(fn)
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
        if run is None:
            if self.context_param is not None:
                kwargs[self.context_param] = None
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
) -> Callable[[Callable[P, Awaitable[R]]], Step[R]]: ...


def step(
    fn: Callable[..., Awaitable[R]] | None = None,
    /,
    *,
    name: str | None = None,
    replay_key: Callable[..., Any] | None = None,
    retries: Retry | None = None,
    timeout: float | None = None,
) -> Step[R] | Callable[[Callable[..., Awaitable[R]]], Step[R]]:
    """Mark an async function as a step: ``@step``, ``@step(name=...)``, ``@step(replay_key=f)``.

    ``replay_key`` receives each call's arguments and returns its explicit durable key.
    ``retries`` (a :class:`~wfctl.Retry`) retries a failing call with backoff, overriding the
    workflow's ``step_retries`` (``Retry(attempts=1)`` turns them off); ``timeout`` bounds
    each attempt, in seconds, and a timeout is a retryable ``TimeoutError``.

    Raises:
        WorkflowDefinitionError: (a ``TypeError``, also a ``ValueError``) the function is not
            ``async``.
    """
    if fn is not None:
        return Step(fn, name=name, replay_key=replay_key, retries=retries, timeout=timeout)
    return lambda f: Step(f, name=name, replay_key=replay_key, retries=retries, timeout=timeout)
