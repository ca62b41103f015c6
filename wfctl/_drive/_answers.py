"""Answers to a paused run's requests: the TOML template ``wfctl run`` writes, and parsing them.

When a run pauses, ``<store>/runs/<run_id>/answers.toml`` lists every pending request: a comment
block with the request's data (as pretty JSON) and expected type, then the key with an empty
string to fill in. tomli-w writes no comments, so the comments are built here and each
``key = value`` line is written by tomli-w (which quotes keys such as ``branch/0/request#0``).
Text UTF-8 cannot hold (a lone surrogate in the request data) is written as its JSON escape
(``\\ud800``), as every command shows it: inside the data's JSON that is the same value. TOML
has no escape for one, so a request id holding one gets a comment saying to answer it in a
``.json`` answers file instead of a key line. A comment allows no control character but tab:
those in the store's text are shown as escapes (``\\x7f``), as on the terminal.

Reading answers back:

- an answers file (``.toml`` or ``.json``) is a table of request id -> answer, taken with its own
  types; an answer left as the empty string means *not answered yet* (so resuming with an
  untouched template fails clearly instead of answering ``""``; send an empty string with
  ``--response 'KEY=""'``, or ``--response 'KEY='`` for a request that takes ``str``);
- ``--response KEY=VALUE`` values are parsed as JSON, else kept as text -- and always kept as
  text when the request's ``response_type`` is ``str`` (or ``str | None``). They add to the
  file's answers: a request answered twice (by two pairs, or by a pair and the file) is
  refused, instead of the last answer silently winning.

Either way the engine then converts each answer to its request's type, or refuses it before
anything is recorded (see :mod:`wfctl._engine._response_types`).
"""

from __future__ import annotations

import json
import shlex
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from wfctl._engine._response_types import admits_text
from wfctl._errors import WfctlError
from wfctl._escapes import ESCAPE
from wfctl._inspect._next_steps import resume_command
from wfctl._readable import readable
from wfctl._storage._fs import OS_FS, write_private_bytes
from wfctl._storage._layout import TEMPLATE_NAME
from wfctl._visible import visible

from ._inputs import NotJsonError, load_json, load_toml, read_text

__all__ = [
    "TEMPLATE_NAME",
    "PendingRequest",
    "parse_responses",
    "template_text",
    "write_answers_template",
]


@dataclass(frozen=True, slots=True)
class PendingRequest:
    """A request a paused run waits on: its key (the id to answer), data and expected type."""

    key: str
    data: Any
    response_type: str | None = None

    def to_json(self) -> dict[str, Any]:
        """Return ``{"request_id", "data", "response_type"}`` (``data`` in the codec's encoding)."""
        return {"request_id": self.key, "data": self.data, "response_type": self.response_type}


def _comment(text: str, indent: str = "") -> list[str]:
    """Return ``text`` as comment lines, each of its lines one, controls shown as escapes.

    TOML allows no control character but tab in a comment, and a line break would end it:
    text from the store (request data and ids, the store's path) is shown as the terminal shows
    it (:func:`wfctl._visible.visible`: ``DEL`` as ``\\x7f``), and each of its lines is commented.
    """
    return [f"# {indent}{line}".rstrip() for line in visible(text).splitlines()] or ["#"]


def template_text(run_id: str, requests: Sequence[PendingRequest], path: Path) -> str:
    """Return the answers template for ``requests`` (see the module docstring)."""
    import tomli_w  # only when a run pauses on requests (start-up time)

    store = path.parent.parent.parent  # <store>/runs/<run_id>/answers.toml
    lines = [
        f"# Answers for the requests run {run_id} is waiting on.",
        "# Fill in each value (TOML: a string, number, boolean, array or table), then run:",
        *_comment(f"{resume_command(run_id, store)} --responses {shlex.quote(str(path))}", "  "),
        '# A value left as "" is not sent: that request stays pending.',
    ]
    lines.append("# Each value must fit the type its request expects, or nothing is recorded.")
    for request in requests:
        expected = request.response_type or "any"
        lines += ["", *_comment(f"{request.key} (expects: {expected})"), "# request data:"]
        # Decoded for people: a date in the request reads as its ISO text, not its encoding.
        lines += _comment(json.dumps(readable(request.data), indent=2, ensure_ascii=False), "  ")
        entry = tomli_w.dumps({request.key: ""}).rstrip("\n")
        if _toml_holds(entry):
            lines.append(entry)
        else:  # a lone surrogate: TOML text is Unicode scalar values, with no escape for one
            lines.append("# TOML cannot hold this id: answer it in a .json answers file")
    return "\n".join(lines) + "\n"


def _toml_holds(text: str) -> bool:
    """Whether TOML can hold ``text``: not if it has a lone surrogate, which UTF-8 cannot encode."""
    try:
        text.encode()
    except UnicodeEncodeError:
        return False
    return True


def write_answers_template(run_dir: Path, run_id: str, requests: Sequence[PendingRequest]) -> Path:
    """Write the answers template into ``run_dir`` and return its path.

    Written like every other store file: private (``0600``: requests often carry private
    data), atomically (a temporary file renamed into place), and never through a link planted
    at its name. What UTF-8 cannot encode is written as its JSON escape (see
    :mod:`wfctl._escapes`).

    Raises:
        OSError: the file cannot be written.
    """
    path = run_dir / TEMPLATE_NAME
    write_private_bytes(
        OS_FS, str(path), template_text(run_id, requests, path).encode("utf-8", ESCAPE)
    )
    return path


def _read_file(path: Path) -> dict[str, Any]:
    what = f"answers file {str(path)!r}"
    text = read_text(path, what)
    table = load_json(text, what) if path.suffix.lower() == ".json" else load_toml(text, what)
    if not isinstance(table, dict):
        raise WfctlError(f"answers file {str(path)!r} must hold a table of request id -> answer")
    return {key: value for key, value in table.items() if value != ""}


def _parse_pair(pair: str, response_types: Mapping[str, str | None]) -> tuple[str, Any]:
    key, eq, raw = pair.partition("=")
    key = key.strip()
    if not eq or not key:
        raise WfctlError(f"--response expects KEY=VALUE, got {pair!r}")
    if admits_text(response_types.get(key)):
        return key, raw
    try:
        return key, load_json(raw, f"--response {key}")
    except NotJsonError:  # not JSON (NaN included): kept as text, as documented
        return key, raw


def parse_responses(
    pairs: Sequence[str],
    file: Path | None,
    response_types: Mapping[str, str | None],
) -> dict[str, Any]:
    """Return the answers given on the command line: the file's and those of ``pairs``.

    Args:
        pairs: ``KEY=VALUE`` strings.
        file: a ``.toml`` or ``.json`` answers file, or None.
        response_types: the pending requests' ``response_type`` by key (``"str"`` keeps a
            pair's value as raw text).

    Raises:
        WfctlError: a pair has no ``=``, the file cannot be read or parsed, or a request is
            answered twice: by two pairs, or by a pair and the file (a key the file leaves
            ``""`` is not answered there).
    """
    answers = _read_file(file) if file is not None else {}
    from_file = set(answers)
    for pair in pairs:
        key, value = _parse_pair(pair, response_types)
        if key in answers:
            where = (
                f"--responses {str(file)!r} and --response" if key in from_file else "--response"
            )
            raise WfctlError(f"request {key!r} is answered twice ({where}): answer it once")
        answers[key] = value
    return answers
