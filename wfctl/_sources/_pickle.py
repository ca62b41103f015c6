"""What a pickle holds, read without running it.

Other engines' stores keep values as pickles (agent-framework's ``__pickled__`` values, DBOS's
``py_pickle`` rows). Unpickling runs whatever the stream names, so wfctl never does it: a pickle
is shown as an opaque marker with its size and what a static scan of its opcodes finds. The
scan is the standard library's :func:`pickletools.genops`, which parses opcodes and their
arguments and never builds an object or imports a module: the globals the stream would import
(``module.name``) and the first strings it pushes, each marked as a scan's finding rather than a
value; and, where the stream can be followed, what it would build read as plain data
(:mod:`wfctl._sources._pickle_read`), classes named and never imported or called.
"""

from __future__ import annotations

import pickletools
from typing import Any

from ._pickle_read import read_pickle

__all__ = ["MAX_SCANNED_STRINGS", "MAX_STRING_CHARS", "pickle_marker", "scan_pickle"]

#: How many strings (and how many globals) a scan reports at most.
MAX_SCANNED_STRINGS = 8
#: A scanned string longer than this is cut, with ``…`` at the end.
MAX_STRING_CHARS = 80

#: Opcodes whose argument is a string the stream pushes.
_STRING_OPS = frozenset(
    {
        "STRING",
        "BINSTRING",
        "SHORT_BINSTRING",
        "UNICODE",
        "BINUNICODE",
        "SHORT_BINUNICODE",
        "BINUNICODE8",
    }
)


def pickle_marker(raw: bytes, type_name: str | None = None) -> dict[str, Any]:
    """The opaque marker for the pickle ``raw``: ``{"$opaque": "pickle", "type": ...,
    "bytes": N, "scan": {...}, "reading": ...}`` (``type`` only when the store recorded one;
    ``reading``, what its opcodes would build as data, only when the stream can be read so:
    :func:`~wfctl._sources._pickle_read.read_pickle`)."""
    marker: dict[str, Any] = {"$opaque": "pickle"}
    if type_name is not None:
        marker["type"] = type_name
    marker["bytes"] = len(raw)
    marker["scan"] = scan_pickle(raw)
    reading = read_pickle(raw)
    if reading is not None:
        marker["reading"] = reading
    return marker


def scan_pickle(raw: bytes) -> dict[str, Any]:
    """What a static scan of ``raw``'s opcodes finds, never executing them.

    Returns ``{"globals": [...], "strings": [...]}``: the ``module.name`` of each global the
    stream would import (``GLOBAL``, ``INST``, and ``STACK_GLOBAL`` after two pushed strings),
    and the other strings it pushes, each list at most :data:`MAX_SCANNED_STRINGS` long, in
    stream order, without repeats. A stream that does not parse adds ``"problem"`` (what was
    found before the fault is kept); one longer than the lists adds ``"more": true``.
    """
    globals_: list[str] = []
    strings: list[str] = []
    recent: list[str] = []  # the last strings pushed, for STACK_GLOBAL
    more = False
    scan: dict[str, Any] = {}
    try:
        for opcode, arg, _ in pickletools.genops(raw):
            name = opcode.name
            if name in _STRING_OPS:
                text = arg.decode("latin-1") if isinstance(arg, bytes) else str(arg)
                recent = [*recent[-1:], text]
                more |= not _add(strings, text)
            elif name in ("GLOBAL", "INST"):
                module, _, qualname = str(arg).partition(" ")
                more |= not _add(globals_, f"{module}.{qualname}")
            elif name == "STACK_GLOBAL" and len(recent) == 2:
                module, qualname = recent
                for text in recent:  # they were the import's name, not values
                    if text in strings:
                        strings.remove(text)
                more |= not _add(globals_, f"{module}.{qualname}")
                recent = []
            elif not name.endswith("PUT") and not name.startswith("MEMOIZE"):
                recent = []
    except (ValueError, IndexError, EOFError, UnicodeDecodeError) as error:
        scan["problem"] = f"not a whole pickle stream: {error}"
    scan = {"globals": globals_, "strings": strings, **scan}
    if more:
        scan["more"] = True
    return scan


def _add(found: list[str], text: str) -> bool:
    """Add ``text`` (cut to :data:`MAX_STRING_CHARS`) to ``found`` unless it is there; False
    when ``found`` is full."""
    if len(text) > MAX_STRING_CHARS:
        text = text[: MAX_STRING_CHARS - 1] + "…"
    if text in found:
        return True
    if len(found) >= MAX_SCANNED_STRINGS:
        return False
    found.append(text)
    return True
