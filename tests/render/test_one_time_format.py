"""Every time people read is formatted by one function, ``wfctl._render._time.human_time``:
no other module of ``wfctl/_render`` formats, converts or parses a time itself, and inside
``_time`` only ``human_time`` turns a time into text."""

from __future__ import annotations

import ast
import re
from pathlib import Path

RENDER = Path(__file__).resolve().parents[2] / "wfctl" / "_render"
#: What formatting, converting or parsing a time takes (a method, a field, a format code).
_TIME_WORK = re.compile(
    r"isoformat|strftime|strptime|fromtimestamp|astimezone|tzname|utcoffset|"
    r"\.(hour|minute|second|microsecond)\b|%[HMSbdYz]|\biso\(|\.describe\(\)"
)
#: Attributes whose use turns a time into text.
_FORMATTING = {"isoformat", "strftime", "hour", "minute", "second", "microsecond", "month"}


def test_no_render_module_but_time_formats_a_time() -> None:
    found = []
    for path in sorted(RENDER.glob("*.py")):
        if path.name == "_time.py":
            continue
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if _TIME_WORK.search(line.split("#")[0]):
                found.append(f"{path.name}:{number}: {line.strip()}")
    assert not found, "a time formatted outside wfctl/_render/_time.py:\n" + "\n".join(found)


def test_inside_time_only_human_time_turns_a_time_into_text() -> None:
    tree = ast.parse((RENDER / "_time.py").read_text(encoding="utf-8"))
    outside = []
    for function in (n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef)):
        if function.name == "human_time":
            continue
        for node in ast.walk(function):
            if isinstance(node, ast.Attribute) and node.attr in _FORMATTING:
                outside.append(f"{function.name}: .{node.attr} (line {node.lineno})")
    assert not outside, outside


def test_only_the_times_wfctl_wrote_into_its_text_are_shown_again() -> None:
    from datetime import UTC, datetime

    from wfctl._render._time import times_in  # the renderer's own helper

    current = datetime(2026, 6, 15, 12, 0, 0, tzinfo=UTC)
    text = "/s/2026-01-01T00:00:01+00:00/journal.jsonl:2 (step, at 2026-01-01T00:00:01.5+00:00)"
    assert times_in(text, current).endswith("(step, at Jan 01 00:00:01.500)")
    assert times_in(text, current).startswith("/s/2026-01-01T00:00:01+00:00/")  # a path, kept
    holder = "pid 7 on host h since 2026-06-15T11:59:00+00:00"
    assert times_in(holder, current) == "pid 7 on host h since Jun 15 11:59:00"
