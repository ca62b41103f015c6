"""Making control characters in stored text visible before it reaches a terminal.

Everything wfctl prints for people can hold text read from a store: workflow names, keys,
request data, results, error messages. A store is data that may come from anyone, and raw
control characters in it would be obeyed by the terminal: ``ESC [2J`` clears the screen,
``ESC ]0;...`` sets the window title, a carriage return or a right-to-left override hides
text. So every such character is replaced by an escape that shows it: ``\\x1b``, ``\\x0d``,
``\\u202e``. Line feeds and tabs are kept: they lay text out and control nothing else.

The standard library only, so the command line's error path can use it without loading rich.
"""

from __future__ import annotations

import re
from typing import Final

__all__ = ["visible"]

#: Unicode's "Cc" category (C0 controls, DEL, C1 controls), minus line feed and tab.
_CONTROLS: Final = [c for c in (*range(0x20), *range(0x7F, 0xA0)) if chr(c) not in "\n\t"]
#: Bidirectional formatting characters: they reorder what follows, so text can hide text.
_BIDI: Final = [0x061C, 0x200E, 0x200F, *range(0x202A, 0x202F), *range(0x2066, 0x206A)]
_TABLE: Final[dict[int, str]] = {c: f"\\x{c:02x}" for c in _CONTROLS} | {
    c: f"\\u{c:04x}" for c in _BIDI
}

#: Any character of the table.
_REPLACED: Final = re.compile("[" + "".join(re.escape(chr(c)) for c in sorted(_TABLE)) + "]")


def visible(text: str) -> str:
    """Return ``text`` with every control character shown as an escape (``ESC`` -> ``\\x1b``).

    Line feeds and tabs are kept. A backslash already in ``text`` is kept as it is, so a
    stored ``\\x1b`` (four characters) looks the same as a real escape character; ``--json``
    tells them apart.
    """
    # Most text has nothing to replace, and translate with a table costs ~50 ns a character.
    # Every character the table replaces is one str.isprintable refuses (a control or a format
    # character); text with line feeds or tabs is searched for the others instead.
    if text.isprintable() or _REPLACED.search(text) is None:
        return text
    return text.translate(_TABLE)
