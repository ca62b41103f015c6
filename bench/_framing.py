"""Where a record's bytes go: the step's own values against the framing around them, by field.

:func:`breakdown` reads one record as it is stored (a JSON object, one journal line) and parts
its bytes among the fields it finds, whatever they are: no field name is assumed but those of
the step's own values (``OWN``, or the caller's), so a record format with fields added,
dropped, renamed or holding compressed values is reported as it is. Each byte of the line is
counted once:

- a field holding an own value (``key``, ``digest``, ``args``, ``result``, at any depth): its
  value is the step's own; its name, colon and comma are framing, counted under
  ``<path> (name)``;
- a field holding an object, or a list of objects, is entered: its name, brackets and commas
  (the elements' braces included) are its wrapper, counted under ``<path> {}`` or
  ``<path> [{}]``, and its fields are counted under ``<path>.<field>`` (``<path>[].<field>``);
- any other field (a scalar, a list of scalars) is counted whole, name to comma, under its path;
- the line's own braces and newline are ``(line)``. A line that is not a JSON object is one
  part, ``(not a JSON object)``.

:func:`step_records` finds the step records of a store the same way: by their ``kind`` where
they name it, else by the step's own fields they hold.
"""

from __future__ import annotations

import json
import os
from collections.abc import Collection
from dataclasses import dataclass
from json.decoder import scanstring
from pathlib import Path

__all__ = ["OWN", "Breakdown", "Part", "breakdown", "step_records"]

#: The fields whose values are the step's own: what a reader needs of a step beyond its place.
OWN = ("key", "digest", "args", "result")
_DECODER = json.JSONDecoder()
_BLANK = " \t\r\n"


@dataclass(frozen=True)
class Part:
    """Bytes of one field (or wrapper) of a record; ``own`` when they are a step's own value."""

    field: str
    bytes: int
    own: bool = False


@dataclass(frozen=True)
class Breakdown:
    """One record's bytes, parted: ``total`` is the sum of the parts' bytes."""

    total: int
    parts: tuple[Part, ...]

    @property
    def own(self) -> int:
        """Bytes of the step's own values."""
        return sum(p.bytes for p in self.parts if p.own)

    @property
    def framing(self) -> int:
        """Bytes of everything else."""
        return self.total - self.own


class _Counter:
    """Adds bytes to named parts, in the order the parts are first met."""

    def __init__(self, text: str, own: Collection[str]) -> None:
        self.text = text
        self.own_names = own
        self.parts: dict[tuple[str, bool], int] = {}

    def add(self, field: str, start: int, end: int, own: bool = False) -> None:
        size = len(self.text[start:end].encode())
        self.parts[field, own] = self.parts.get((field, own), 0) + size

    def blank(self, i: int) -> int:
        while i < len(self.text) and self.text[i] in _BLANK:
            i += 1
        return i

    def holds_objects(self, i: int) -> bool:
        """Whether the value at ``i`` is a list of objects (not empty)."""
        if self.text[i] != "[":
            return False
        items = _DECODER.raw_decode(self.text, i)[0]
        return bool(items) and all(isinstance(item, dict) for item in items)

    def elements(self, path: str, wrapper: str, i: int) -> int:
        """Count a list of objects from its ``[`` at ``i``; return the index after its ``]``."""
        self.add(wrapper, i, i + 1)
        i += 1
        while True:
            i = self.members(f"{path}[]", wrapper, i)
            after = self.blank(i)
            self.add(wrapper, i, after + 1)  # the comma or the closing bracket
            i = after + 1
            if self.text[after] == "]":
                return i

    def members(self, path: str, wrapper: str, i: int) -> int:
        """Count an object from ``i`` (blanks, then its ``{``); return the index after its
        ``}``. Blanks go with what they follow: a field's with the field."""
        brace = self.blank(i)
        self.add(wrapper, i, brace + 1)
        i = brace + 1
        close = self.blank(i)
        if self.text[close] == "}":
            self.add(wrapper, i, close + 1)
            return close + 1
        while True:
            quote = self.blank(i)
            name, after_name = scanstring(self.text, quote + 1)
            start = self.blank(self.blank(after_name) + 1)  # past the colon
            field = f"{path}.{name}" if path else name
            if name in self.own_names:
                label = f"{field} (name)"
                self.add(label, i, start)
                end = _DECODER.raw_decode(self.text, start)[1]
                self.add(field, start, end, own=True)
            elif self.text[start] == "{":
                label = f"{field} {{}}"
                self.add(label, i, start)
                end = self.members(field, label, start)
            elif self.holds_objects(start):
                label = f"{field} [{{}}]"
                self.add(label, i, start)
                end = self.elements(field, label, start)
            else:
                label = field
                end = _DECODER.raw_decode(self.text, start)[1]
                self.add(label, i, end)
            after = self.blank(end)
            if self.text[after] == "}":
                self.add(wrapper, end, after + 1)
                return after + 1
            self.add(label, end, after + 1)  # a field's comma goes with the field
            i = after + 1


def breakdown(line: bytes, own: Collection[str] = OWN) -> Breakdown:
    """Part the bytes of one stored record (a journal line, its newline included) by field.

    Args:
        line: the record as stored.
        own: the names of the fields whose values are the step's own.
    """
    try:
        text = line.decode()
        if not isinstance(json.loads(text), dict):
            raise ValueError("not an object")
    except ValueError:  # UnicodeDecodeError and JSONDecodeError are ValueErrors
        return Breakdown(len(line), (Part("(not a JSON object)", len(line)),))
    counter = _Counter(text, own)
    end = counter.members("", "(line)", 0)
    counter.add("(line)", end, len(text))
    parts = tuple(Part(field, size, is_own) for (field, is_own), size in counter.parts.items())
    total = sum(p.bytes for p in parts)
    if total != len(line):  # every byte is counted once: a miscount is a bug here, not data
        raise AssertionError(f"parted {total} bytes of a {len(line)}-byte record")
    return Breakdown(total, parts)


def step_records(store: Path, own: Collection[str] = OWN) -> list[bytes]:
    """Every whole line under ``store`` that is a step record: ``kind`` ``step`` where the
    records name their kind, else any line holding one of the step's own fields."""
    lines = [
        line
        for folder, _, names in os.walk(store)
        for name in names
        for line in Path(folder, name).read_bytes().splitlines(keepends=True)
        if line.endswith(b"\n")
    ]
    kinds: list[bytes] = []
    holding: list[bytes] = []
    for line in lines:
        try:
            record = json.loads(line)
        except ValueError:
            continue
        if isinstance(record, dict) and record.get("kind") == "step":
            kinds.append(line)
        elif breakdown(line, own).own:
            holding.append(line)
    return kinds or holding
