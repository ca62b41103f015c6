"""Durable invocation identity: scopes, keys, and the task factory that assigns scopes.

Every step call and ``request_info`` in a run gets a key that does not depend on scheduling:

- the workflow body runs in the root scope (``""``);
- each asyncio task created inside a run gets ``<parent>/<i>``, ``i`` counting the tasks its
  parent scope created (``asyncio.gather(a(), b())`` gives ``0`` and ``1``) -- except a task
  that only wraps one step call (``gather(step(x), ...)``, ``as_completed([step(i), ...])``):
  it opens no scope and its call is keyed in the creating scope. ``as_completed`` and
  ``wait`` create their tasks from a ``set``, in an order that changes from run to run; keyed
  in the creating scope and matched by argument digest, those calls keep their identity;
- calls made inside a step run in the step's own key as scope, so a cached outer step cannot
  shift the identities of the calls after it;
- a call's key is ``<scope>/<name>#<n>``, ``n`` counting calls of ``name`` in that scope, or
  ``<scope>/<name>@<explicit>`` for an explicit key.

The scope travels in a :class:`contextvars.ContextVar`; the task factory below copies a child
scope into each new task's context. It is installed on the running loop for the duration of a
run (reference counted, chaining any factory already there) and only touches tasks created in
a context that belongs to a run.
"""

from __future__ import annotations

import contextvars
import weakref
from collections.abc import Callable, Coroutine
from typing import TYPE_CHECKING, Any

from ._errors import DuplicateStepKeyError
from ._port import port_var

if TYPE_CHECKING:
    import asyncio

__all__ = [
    "ROOT_SCOPE",
    "Scope",
    "current_scope",
    "install_task_factory",
    "register_transparent",
    "scope_var",
    "uninstall_task_factory",
]


class Scope:
    """One scope of a run: a path, and the counters that number what happens inside it."""

    __slots__ = ("_calls", "_explicit", "_tasks", "path", "prefix")

    def __init__(self, path: str) -> None:
        self.path = path
        self.prefix = f"{path}/" if path else ""
        self._tasks = 0
        # Made on first use: every executed step opens a scope, and most call nothing inside.
        self._calls: dict[str, int] | None = None
        self._explicit: set[str] | None = None

    def child_task_scope(self) -> Scope:
        """Return the scope of the next task created from this scope."""
        index = self._tasks
        self._tasks = index + 1
        return Scope(f"{self.prefix}{index}")

    def call_key(self, name: str) -> str:
        """Return the key of the next counted call of ``name`` in this scope."""
        calls = self._calls
        if calls is None:
            calls = self._calls = {}
        n = calls.get(name, 0)
        calls[name] = n + 1
        return f"{self.prefix}{name}#{n}"

    def explicit_key(self, name: str, explicit: str) -> str:
        """Return the key of a call with a user-chosen key, unique within this scope.

        Raises:
            DuplicateStepKeyError: the same explicit key was already used in this scope.
        """
        key = f"{self.prefix}{name}@{explicit}"
        if self._explicit is None:
            self._explicit = set()
        elif key in self._explicit:
            raise DuplicateStepKeyError(key)
        self._explicit.add(key)
        return key


ROOT_SCOPE = ""

_scope: contextvars.ContextVar[Scope | None] = contextvars.ContextVar("wfctl_scope", default=None)


#: The run that owns new tasks (see :mod:`wfctl._port`).
_owner = port_var()


def current_scope() -> Scope | None:
    """Return the scope of the running code, or None outside a run."""
    return _scope.get()


def scope_var() -> contextvars.ContextVar[Scope | None]:
    """Return the context variable holding the current scope."""
    return _scope


#: Code objects of coroutines that are a bare step call: tasks running one open no scope.
_transparent: set[object] = set()


def register_transparent(code: object) -> None:
    """Declare that tasks running coroutines of ``code`` are keyed in their creator's scope."""
    _transparent.add(code)


_TaskFactory = Callable[..., "asyncio.Future[Any]"]


class _Installed:
    __slots__ = ("count", "previous")

    def __init__(self, previous: _TaskFactory | None) -> None:
        self.previous = previous
        self.count = 0


_installed: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, _Installed] = (
    weakref.WeakKeyDictionary()
)


def _factory(
    loop: asyncio.AbstractEventLoop,
    coro: Coroutine[Any, Any, Any],
    *,
    context: contextvars.Context | None = None,
    **kwargs: Any,
) -> asyncio.Future[Any]:
    owner = context.get(_owner) if context is not None else _owner.get()
    if owner is not None and getattr(coro, "cr_code", None) not in _transparent:
        # A task created inside a run: give it the next child scope of its creator. The
        # context is copied so a context the caller passed in stays unchanged.
        ctx = context.copy() if context is not None else contextvars.copy_context()
        parent = ctx.get(_scope)
        if parent is not None:
            ctx.run(_scope.set, parent.child_task_scope())
        context = ctx
        coro = owner.guard(coro)  # workflow code in its own task: a SystemExit fails the run
    state = _installed.get(loop)
    previous = state.previous if state else None
    if previous is not None:
        task = previous(loop, coro, context=context, **kwargs)
    else:
        import asyncio  # loaded by then: not at import (``wfctl runs`` never needs it)

        task = asyncio.Task(coro, loop=loop, context=context, **kwargs)
    if owner is not None:
        owner.adopt_task(task)  # type: ignore[arg-type]  # factories may return Task subclasses
    return task


def install_task_factory(loop: asyncio.AbstractEventLoop) -> None:
    """Install the scope-assigning task factory on ``loop`` (reference counted)."""
    state = _installed.get(loop)
    if state is None or loop.get_task_factory() is not _factory:
        state = _Installed(loop.get_task_factory())
        _installed[loop] = state
        loop.set_task_factory(_factory)  # type: ignore[arg-type]  # typeshed wants a Task return
    state.count += 1


def uninstall_task_factory(loop: asyncio.AbstractEventLoop) -> None:
    """Undo one :func:`install_task_factory`; the last one restores the previous factory."""
    state = _installed.get(loop)
    if state is None:
        return
    state.count -= 1
    if state.count <= 0:
        del _installed[loop]
        if loop.get_task_factory() is _factory:
            loop.set_task_factory(state.previous)
