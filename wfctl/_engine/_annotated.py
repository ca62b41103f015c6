"""Registering the classes a step's or workflow's annotations name, so their values round-trip.

A dataclass or pydantic model named in a ``@step``/``@workflow`` annotation (a parameter or the
return, also inside ``list[...]``, ``dict[...]``, ``X | None``, ``Annotated[...]``, and the
dataclass fields of those classes) is registered with :func:`wfctl.register_type` under its
default name, unless it is registered already (under any name). Only the running code's own
annotations are read: nothing a store names is ever imported.

The dataclasses and pydantic models the function's own code names by their own names (a
module-level class, or one of the enclosing function it closes over, e.g. to build a request's
data) are registered too; a class held in a variable of another name (a ``response_type``
passed in) is not. Annotations are resolved
with :func:`typing.get_type_hints`, in the function's module and that closure. Under ``from __future__
import annotations`` a name may not be defined yet when the decorator runs (a class declared
below the function): decoration never fails for that; :class:`AnnotatedTypes` tries again when
the step is first called in a run, or the workflow first runs. An annotation that still does
not resolve names a class by name only (one defined inside a function, out of the closure):
:meth:`AnnotatedTypes.adopt` registers a value's class when its name is one the annotations
spell and it is a dataclass or pydantic model. Otherwise storing such a value fails as before,
naming ``register_type``.
"""

from __future__ import annotations

import dataclasses
import inspect
import re
import typing
from collections.abc import Callable
from typing import Any

from wfctl._records._codec import register_type, registered_name

__all__ = ["AnnotatedTypes"]

_MAX_DEPTH = 16
_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


class AnnotatedTypes:
    """The classes ``fn``'s annotations name, registered once they can be resolved."""

    __slots__ = ("_fn", "_names", "done")

    def __init__(self, fn: Callable[..., Any]) -> None:
        self._fn = fn
        self.done = False
        #: The names the annotations spell while they do not resolve (for :meth:`adopt`).
        self._names: frozenset[str] = frozenset()
        self.register()

    def register(self) -> None:
        """Register what the annotations name, if they resolve now (at most once)."""
        if self.done:
            return
        closure = _closure_of(self._fn)
        seen: set[type] = set()
        named = [*closure.items(), *_globals_used(self._fn)]
        for name, value in named:  # the classes its code names by their own names
            # registered already: nothing to walk again (this runs per call while unresolved)
            if isinstance(value, type) and value.__name__ == name and not registered_name(value):
                _register(value, seen, 0)
        try:
            hints = typing.get_type_hints(self._fn, localns=closure, include_extras=True)
        except Exception:  # an unresolvable annotation (NameError, ...): try again at first use
            self._names = _spelled_names(self._fn)
            return
        self.done = True
        self._names = frozenset()
        for hint in hints.values():
            _register(hint, seen, 0)

    def adopt(self, value: Any) -> None:
        """Register the class of ``value`` (or of its items, one level down) when an
        annotation that does not resolve spells its name and it is a dataclass or pydantic
        model: the class a step returns, defined inside a function.

        Only a class the running code handed over is registered, under its default name;
        nothing is imported, and a class registered already (under any name) is left alone.
        """
        names = self._names
        if not names:
            return
        if isinstance(value, (list, tuple, set, frozenset)):
            items: list[Any] = [value, *value]
        elif isinstance(value, dict):
            items = [value, *value.values()]
        else:
            items = [value]
        for item in items:
            cls = type(item)
            if cls.__name__ in names and registered_name(cls) is None and _storable(cls):
                register_type(cls)


def _closure_of(fn: Callable[..., Any]) -> dict[str, Any]:
    """The names ``fn`` closes over (a class of the enclosing function its body uses)."""
    fn = inspect.unwrap(fn)
    code = getattr(fn, "__code__", None)
    cells = getattr(fn, "__closure__", None) or ()
    names: dict[str, Any] = {}
    for name, cell in zip(code.co_freevars if code is not None else (), cells, strict=False):
        try:
            names[name] = cell.cell_contents
        except ValueError:  # an empty cell: assigned after the function was defined
            continue
    return names


def _globals_used(fn: Callable[..., Any]) -> list[tuple[str, Any]]:
    """The module-level names the code of ``fn`` uses, with their values."""
    fn = inspect.unwrap(fn)
    code = getattr(fn, "__code__", None)
    namespace = getattr(fn, "__globals__", None)
    if code is None or not isinstance(namespace, dict):
        return []
    return [(name, namespace[name]) for name in code.co_names if name in namespace]


def _spelled_names(fn: Callable[..., Any]) -> frozenset[str]:
    """The identifiers the string annotations of ``fn`` spell (``"list[Classification]"``)."""
    annotations = getattr(inspect.unwrap(fn), "__annotations__", None) or {}
    return frozenset(
        name
        for text in annotations.values()
        if isinstance(text, str)
        for name in _IDENTIFIER.findall(text)
    )


def _storable(cls: type) -> bool:
    if dataclasses.is_dataclass(cls):
        return True
    if cls.__module__.split(".")[0] == "pydantic":  # BaseModel itself, not a user's model
        return False
    return all(callable(getattr(cls, a, None)) for a in ("model_dump", "model_validate"))


def _register(tp: Any, seen: set[type], depth: int) -> None:
    if depth > _MAX_DEPTH:
        return
    for arg in typing.get_args(tp):
        _register(arg, seen, depth + 1)
    if not isinstance(tp, type) or tp in seen or typing.get_args(tp):
        return
    seen.add(tp)
    if not _storable(tp):
        return
    if registered_name(tp) is None:
        register_type(tp)
    if dataclasses.is_dataclass(tp):
        try:
            fields = typing.get_type_hints(tp, include_extras=True)
        except Exception:  # a field annotation that does not resolve: skip the fields
            return
        for hint in fields.values():
            _register(hint, seen, depth + 1)
