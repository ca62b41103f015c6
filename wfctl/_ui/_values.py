"""Stored values as people read them on a page: readable JSON, folded past a size.

A value is shown as ``wfctl show`` shows it (the codec's tagged objects made readable, a pickle
an opaque marker that is never loaded), as indented JSON text. Past :data:`FOLD_CHARS` the text
is cut on the server: the page never receives the rest, and says how much was left out and
which command shows it whole.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Final

from wfctl._readable import readable

__all__ = ["FOLD_CHARS", "Shown", "folded", "shown"]

#: The characters of a value a page shows before folding the rest away.
FOLD_CHARS: Final = 4000


@dataclass(frozen=True, slots=True)
class Shown:
    """A value's text for a page: ``text`` (at most :data:`FOLD_CHARS` characters) and how
    many characters were folded away (0: shown whole)."""

    text: str
    folded: int

    @property
    def whole(self) -> bool:
        """Whether the text is the whole value."""
        return self.folded == 0


def shown(value: Any, limit: int = FOLD_CHARS) -> Shown:
    """Return ``value`` (as stored) as readable JSON text, cut after ``limit`` characters."""
    return folded(json.dumps(readable(value), indent=2, ensure_ascii=False, default=str), limit)


def folded(text: str, limit: int = FOLD_CHARS) -> Shown:
    """Return ``text`` cut after ``limit`` characters."""
    if len(text) <= limit:
        return Shown(text, 0)
    return Shown(text[:limit], len(text) - limit)
