"""Registering the classes a step's or workflow's annotations name, so their values round-trip.

A dataclass or pydantic model named in a ``@step``/``@workflow`` annotation (a parameter or the
return, also inside ``list[...]``, ``dict[...]``, ``X | None``, ``Annotated[...]``, and the
dataclass fields of those classes) is registered with :func:`wfctl.register_type` under its
default name, unless it is registered already (under any name). Only the running code's own
annotations are read: nothing a store names is ever imported.

Annotations are resolved with :func:`typing.get_type_hints`. Under ``from __future__ import
annotations`` a name may not be defined yet when the decorator runs (a class declared below the
function): decoration never fails for that; :class:`AnnotatedTypes` tries again when the step is
first called in a run, or the workflow first runs, and if the name is still unresolvable then,
it gives up silently (storing such a value fails as before, naming ``register_type``).
"""

from __future__ import annotations

import dataclasses
import typing
from collections.abc import Callable
from typing import Any

from wfctl._records._codec import register_type, registered_name

__all__ = ["AnnotatedTypes"]

_MAX_DEPTH = 16


class AnnotatedTypes:
    """The classes ``fn``'s annotations name, registered once they can be resolved."""

    __slots__ = ("_fn", "done")

    def __init__(self, fn: Callable[..., Any]) -> None:
        self._fn = fn
        self.done = False
        self.register()

    def register(self) -> None:
        """Register what the annotations name, if they resolve now (at most once)."""
        if self.done:
            return
        try:
            hints = typing.get_type_hints(self._fn, include_extras=True)
        except Exception:  # an unresolvable annotation (NameError, ...): try again at first use
            return
        self.done = True
        seen: set[type] = set()
        for hint in hints.values():
            _register(hint, seen, 0)


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
