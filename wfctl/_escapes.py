"""Text the output cannot encode, written as JSON escapes instead of failing the command.

A step may return a string holding a lone surrogate (``"\\ud800"``): the journal keeps it (as a
JSON escape), but no UTF-8 stream can write it, and a command that shows it (``show``,
``export``, a ``--json`` document) used to stop with an encoding error. :data:`ESCAPE` is an
error handler that writes each character the stream's encoding cannot hold as ``\\uXXXX``
(a character beyond the Basic Multilingual Plane as its two UTF-16 halves), as
``json.dumps(ensure_ascii=True)`` would write it: inside a JSON string the result is the same
value, and people read the code of a character they could not have seen anyway. The command
line sets it on stdout and stderr; ``export -o`` encodes its file with it.
"""

from __future__ import annotations

import codecs
from typing import Final

__all__ = ["ESCAPE"]

#: The name of the error handler (``str.encode(..., ESCAPE)``, ``open(..., errors=ESCAPE)``).
ESCAPE: Final = "wfctl-json-escape"


def _escaped(error: UnicodeError) -> tuple[str, int]:
    """The characters ``error`` could not encode, as JSON escapes; where to go on."""
    if not isinstance(error, UnicodeEncodeError):
        raise error
    units: list[int] = []
    for character in error.object[error.start : error.end]:
        code = ord(character)
        if code > 0xFFFF:
            code -= 0x10000
            units += [0xD800 | code >> 10, 0xDC00 | code & 0x3FF]
        else:
            units.append(code)
    return "".join([f"\\u{unit:04x}" for unit in units]), error.end


codecs.register_error(ESCAPE, _escaped)
