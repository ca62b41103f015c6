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
  ``<scope>/<name>@<explicit>`` for an explicit key;
- branches (coroutines that are not a bare step call) handed to ``as_completed`` in a list or
  tuple get their scopes in the list's order, not in the order ``as_completed`` makes their
  tasks (from a ``set``); handed over in any other iterable (a ``map``, a set) they have no
  order to keep, and a step call or request keyed in one fails with
  :class:`WorkflowDefinitionError` instead of being keyed by chance.

The scope travels in a :class:`contextvars.ContextVar`; the task factory below copies a child
scope into each new task's context. It is installed on the running loop for the duration of a
run (reference counted, chaining any factory already there) and only touches tasks created in
a context that belongs to a run.
"""

from __future__ import annotations

import contextvars
import sys
import weakref
from collections.abc import Callable, Coroutine
from types import CodeType, CoroutineType, FrameType
from typing import TYPE_CHECKING, Any, NoReturn

from wfctl._errors import DuplicateStepKeyError, WorkflowDefinitionError

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

    __slots__ = ("_calls", "_explicit", "_reserved", "_tasks", "path", "prefix", "unordered")

    def __init__(self, path: str, unordered: str | None = None) -> None:
        self.path = path
        self.prefix = f"{path}/" if path else ""
        #: Why this scope's place among its siblings is chance, if it is (then no call may be
        #: keyed in it or in any scope under it).
        self.unordered = unordered
        self._tasks = 0
        # Made on first use: every executed step opens a scope, and most call nothing inside.
        self._calls: dict[str, int] | None = None
        self._explicit: set[str] | None = None
        #: Scopes given out in advance to the branches of an ``as_completed`` call whose tasks
        #: are not made yet: ``id(coroutine)`` -> (the coroutine, its scope).
        self._reserved: dict[int, tuple[object, Scope]] | None = None

    def child_task_scope(self) -> Scope:
        """Return the scope of the next task created from this scope."""
        index = self._tasks
        self._tasks = index + 1
        return Scope(f"{self.prefix}{index}", self.unordered)

    def _refuse(self, name: str) -> NoReturn:
        raise WorkflowDefinitionError(
            f"{name!r} was called in a branch of the run whose identity is chance: "
            f"{self.unordered}. wfctl keys each branch by its place in the list as_completed "
            "is given: pass it a list or a tuple"
        )

    def branch_scope(self, coro: object) -> Scope:
        """Return the scope of a task made from this scope to run ``coro`` (not a step call).

        Tasks get the next child scope as they are made, except those ``as_completed`` makes:
        it makes them from a ``set``, in an order that changes from process to process, so the
        first one made reserves the scopes of every branch in the list it was given, in the
        list's order. Given in any other iterable (a ``map``, a set), the branches have no
        order wfctl can see: their scopes are marked ``unordered``, and a call keyed in one
        fails.
        """
        reserved = self._reserved
        if reserved:
            held = reserved.pop(id(coro), None)
            if held is not None and held[0] is coro:
                return held[1]
        given = _as_completed_argument()
        if given is None:
            return self.child_task_scope()
        if not isinstance(given, list | tuple):
            scope = self.child_task_scope()
            kind = type(given).__name__
            scope.unordered = f"asyncio.as_completed() was given its coroutines in a {kind}"
            return scope
        if reserved is None:
            reserved = self._reserved = {}
        mine: Scope | None = None
        seen: set[int] = set()  # a coroutine listed twice gets one task, as_completed dedups
        for item in given:
            if (
                type(item) is CoroutineType
                and item.cr_code not in _transparent
                and id(item) not in seen
            ):
                seen.add(id(item))
                scope = self.child_task_scope()
                if item is coro:
                    mine = scope
                else:
                    reserved[id(item)] = (item, scope)
        return mine if mine is not None else self.child_task_scope()

    def call_key(self, name: str) -> str:
        """Return the key of the next counted call of ``name`` in this scope.

        Raises:
            WorkflowDefinitionError: the scope is ``unordered``.
        """
        if self.unordered is not None:
            self._refuse(name)
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
            WorkflowDefinitionError: the scope is ``unordered``.
        """
        if self.unordered is not None:
            self._refuse(name)
        key = f"{self.prefix}{name}@{explicit}"
        if self._explicit is None:
            self._explicit = set()
        elif key in self._explicit:
            raise DuplicateStepKeyError(key)
        self._explicit.add(key)
        return key


ROOT_SCOPE = ""

_scope: contextvars.ContextVar[Scope | None] = contextvars.ContextVar("wfctl_scope", default=None)


#: The run that owns new tasks (see :mod:`wfctl._engine._port`).
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

#: Code objects of ``asyncio.as_completed`` and of what in it makes its tasks, each with the
#: name of its parameter that holds what ``as_completed`` was given (None: a comprehension, look
#: further up). Filled on first use: asyncio is loaded by then.
_as_completed_codes: dict[CodeType, str | None] | None = None


def _codes_of(function: object) -> dict[CodeType, str | None]:
    code = getattr(function, "__code__", None)
    if not isinstance(code, CodeType):
        return {}
    parameters = code.co_varnames[: code.co_argcount + code.co_kwonlyargcount]
    given = next((name for name in ("fs", "aws") if name in parameters), None)
    nested = {c: None for c in code.co_consts if isinstance(c, CodeType)}
    return {code: given, **nested}


def _as_completed_argument() -> object | None:
    """Return what ``asyncio.as_completed`` was given, when it is making the task being made."""
    global _as_completed_codes
    codes = _as_completed_codes
    if codes is None:
        import asyncio.tasks

        codes = _codes_of(asyncio.tasks.as_completed)
        # Python 3.13 on: the tasks are made in the iterator as_completed returns.
        iterator = getattr(asyncio.tasks, "_AsCompletedIterator", None)
        if iterator is not None:
            codes |= _codes_of(iterator.__init__)
        _as_completed_codes = codes
    # The factory, the loop's create_task, ensure_future and its helper, the comprehension,
    # as_completed: a few frames up at most.
    frame: FrameType | None = sys._getframe(2)
    for _ in range(8):
        if frame is None:
            return None
        code = frame.f_code
        if code in codes:
            parameter = codes[code]
            if parameter is not None:
                return frame.f_locals.get(parameter)
        frame = frame.f_back
    return None


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
            ctx.run(_scope.set, parent.branch_scope(coro))
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
