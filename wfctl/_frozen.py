"""Frozen dataclasses filled in without their generated ``__init__`` (hot paths only).

A frozen dataclass's ``__init__`` sets each field through ``object.__setattr__``; a slotted
one's fields are slot descriptors, whose ``__set__`` does the same store about twice as fast.
Code that makes many such objects (an engine event per step, a checkpoint and its step records
per journal line read) takes each field's setter once, then fills a new object slot by slot.
The object is the one ``__init__`` would make of the same values, and stays frozen.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import fields
from typing import Any

__all__ = ["slot_setters"]

SlotSetter = Callable[[Any, Any], None]


def slot_setters(cls: type, *names: str) -> tuple[SlotSetter, ...]:
    """Return the setters of the slotted dataclass ``cls``'s fields ``names``, in that order.

    ``names`` must be every field of ``cls``: an object filled in with them has no field left
    unset (a field added to the class later fails here, at import, until it is set too).

    Raises:
        TypeError: ``names`` are not exactly the fields of ``cls``.
    """
    slots = {f.name: getattr(cls, f.name).__set__ for f in fields(cls)}
    if sorted(names) != sorted(slots):
        raise TypeError(f"{cls.__name__} has fields {sorted(slots)}, not {sorted(names)}")
    return tuple(slots[name] for name in names)
