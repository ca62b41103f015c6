"""Regenerate the documentation's console sessions from a real session, or check them.

Usage::

    python scripts/tour.py            # rewrite every session block of the tour files
    python scripts/tour.py --check    # exit 1, with a diff, if a block drifted

A **session block** is a fenced block of a tour file (:data:`TOUR_FILES`) that holds an
``[exit N]`` line: its ``$ `` lines are commands, each followed by what it printed (stdout and
stderr, as a terminal shows them) and its exit code. Every session block of a file is run in
order, in one scratch directory holding copies of ``sample_workflows/``, the tour's own
workflows (``docs/tour/``, and ``purchase.py`` of the CLI tests) and
``tests/fixtures/af_forked/``, with the installed ``wfctl``
first on ``PATH``, ``NO_COLOR=1``, ``COLUMNS=96`` and ``TZ=UTC``. A line
``<!-- tour: COMMAND -->`` outside the blocks runs COMMAND there at that point, unseen by a
reader (a step the prose describes, such as fixing the code between two commands).

The scratch directory is named :data:`SHOWN_DIR` in what is written. ``--check`` compares the
new output with the file's after masking what changes from one session to the next (run ids,
times, durations, code signatures, hashes): anything else that differs is a drift the test
``tests/test_tour.py`` reports.
"""

from __future__ import annotations

import argparse
import difflib
import os
import re
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
#: The files whose session blocks are regenerated, in the repository.
TOUR_FILES = ("README.md", "docs/tour.md", "docs/commands.md")
#: Workflows of the CLI tests the tour runs too (``purchase.py`` asks for two typed answers).
SHARED_WORKFLOWS = ("purchase.py",)
#: What the scratch directory is called in the documentation.
SHOWN_DIR = "/tmp/tour"
#: The environment every command runs in (on top of the caller's, without WFCTL_*).
#: Unbuffered: stdout and stderr reach the one pipe in the order written, as on a terminal.
ENVIRONMENT = {
    "NO_COLOR": "1",
    "COLUMNS": "96",
    "TZ": "UTC",
    "TERM": "dumb",
    "PYTHONUNBUFFERED": "1",
}

_FENCE = re.compile(r"^```")
_EXIT = re.compile(r"^\[exit \d+\]$")
_HIDDEN = re.compile(r"^<!-- tour: (.*) -->$")

#: What changes from one session to the next, masked before two sessions are compared.
_VOLATILE = [
    (re.compile(r"\d{8}-\d{6}-[0-9a-f]{8}"), "<run-id>"),
    (re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?([+-]\d\d:\d\d|Z)?"), "<iso-time>"),
    (re.compile(r"\b[A-Z][a-z]{2} \d\d( \d{4})? \d\d:\d\d:\d\d(\.\d+)?"), "<time>"),
    (re.compile(r"\b\d\d:\d\d:\d\d(\.\d+)?"), "<time>"),
    (re.compile(r"\bjust now\b|\b\d+[smhdw] ago\b"), "<age>"),
    (re.compile(r"\b\d+(\.\d+)?\s?(ms|s|µs)\b"), "<duration>"),
    (re.compile(r"\b[0-9a-f]{12,64}\b"), "<hex>"),
    (re.compile(r"[ \t]+$", re.MULTILINE), ""),
]


def _mask(text: str) -> str:
    for pattern, shown in _VOLATILE:
        text = pattern.sub(shown, text)
    return text


def _scratch() -> Path:
    """A fresh scratch directory with the files the tour's commands read."""
    where = Path(tempfile.mkdtemp(prefix="wfctl-tour-"))
    shutil.copytree(REPO / "sample_workflows", where / "sample_workflows")
    for workflow in sorted((REPO / "docs" / "tour").glob("*.py")):
        shutil.copy(workflow, where / workflow.name)
    for name in SHARED_WORKFLOWS:  # the tests' own, not a copy kept in docs/tour/
        shutil.copy(REPO / "tests" / "cli" / "workflows" / name, where / name)
    fixture = Path("tests") / "fixtures" / "af_forked"
    shutil.copytree(REPO / fixture, where / fixture)
    return where


def _environment() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("WFCTL_")}
    env.update(ENVIRONMENT)
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    return env


def _run(command: str, where: Path, env: dict[str, str]) -> tuple[str, int]:
    """Run one command as the shell would; its output (stdout and stderr merged) and code."""
    done = subprocess.run(
        ["bash", "-c", command],
        cwd=where,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        timeout=300,
        check=False,
    )
    lines = done.stdout.replace(str(where), SHOWN_DIR).split("\n")
    return "\n".join(line.rstrip() for line in lines), done.returncode


def _blocks(lines: list[str]) -> Iterator[tuple[int, int]]:
    """Yield (first, last) line indexes of each fenced block's contents."""
    start: int | None = None
    for index, line in enumerate(lines):
        if _FENCE.match(line):
            if start is None:
                start = index + 1
            else:
                yield start, index
                start = None


def regenerate(text: str) -> str:
    """Return ``text`` with every session block's outputs made again by a real session."""
    lines = text.split("\n")
    sessions = [(a, b) for a, b in _blocks(lines) if any(_EXIT.match(x) for x in lines[a:b])]
    hidden = [(i, m.group(1)) for i, line in enumerate(lines) if (m := _HIDDEN.match(line))]
    where, env = _scratch(), _environment()
    out: list[str] = []
    position = 0
    try:
        steps = sorted(
            [(a, "block", b) for a, b in sessions] + [(i, "hidden", c) for i, c in hidden]
        )
        for index, kind, detail in steps:
            if kind == "hidden":
                assert isinstance(detail, str)
                output, code = _run(detail, where, env)
                if code != 0:
                    raise SystemExit(f"tour: hidden step {detail!r} failed ({code}): {output}")
                continue
            assert isinstance(detail, int)
            out.extend(lines[position:index])
            for line in lines[index:detail]:
                if line.startswith("$ "):
                    output, code = _run(line[2:], where, env)
                    out.append(line)
                    out.extend(output.rstrip("\n").split("\n") if output.strip() else [])
                    out.append(f"[exit {code}]")
            position = detail
        out.extend(lines[position:])
    finally:
        shutil.rmtree(where, ignore_errors=True)
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true", help="only report drift (exit 1)")
    parser.add_argument("files", nargs="*", default=list(TOUR_FILES))
    args = parser.parse_args(argv)
    drifted = False
    for name in args.files:
        path = REPO / name
        text = path.read_text(encoding="utf-8")
        fresh = regenerate(text)
        if not args.check:
            if fresh != text:
                path.write_text(fresh, encoding="utf-8")
                print(f"tour: rewrote {name}")
            continue
        old, new = _mask(text).splitlines(), _mask(fresh).splitlines()
        if old != new:
            drifted = True
            sys.stdout.writelines(
                line + "\n"
                for line in difflib.unified_diff(
                    old, new, f"{name} (as written)", f"{name} (now)", lineterm=""
                )
            )
    return 1 if drifted else 0


if __name__ == "__main__":
    raise SystemExit(main())
