"""``wfctl log`` writes its timeline's lines itself, and they are the lines rich draws.

A long run's log was slow in rich's per-line layout (measure, wrap, segment every line), so
``print_log`` writes each plain line as its text between its style's escape codes, and leaves
to rich only the lines that need its wrapping (too long, or holding tabs or line feeds). These
tests compare its output, byte for byte, with rich printing the same lines as one ``Text``
(how ``print_log`` drew them before), with and without colour, at several widths, on records
holding awkward text; and count that rich renders none of the common lines.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.cli.conftest import WORKFLOWS, invoke, run_id_of
from wfctl._inspect import _json_pages
from wfctl._inspect._entries import LogEntry
from wfctl._inspect._log import RunLog, run_log
from wfctl._render import FollowPrinter, _lifecycle, print_log
from wfctl._render._common import Text, _Console
from wfctl._render._runs import _entry_details, _entry_header, entry_tree
from wfctl._render._time import TimelineTimes, now

AWKWARD = WORKFLOWS / "awkward.py"
MANY = WORKFLOWS / "many.py"

#: Terminal settings the output is compared under: none (a pipe), colour, colour turned off.
TERMINALS = {
    "pipe": {},
    "colour": {"FORCE_COLOR": "1", "TERM": "xterm-256color", "COLORTERM": "truecolor"},
    "no colour": {"FORCE_COLOR": "1", "TERM": "xterm-256color", "NO_COLOR": "1"},
}


@pytest.fixture(scope="module")
def awkward_runs(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[str]]:
    """A store with two runs of awkward text: one completed, one failed after its answer."""
    store = tmp_path_factory.mktemp("log-lines") / "store"
    runs = []
    for fail in ("false", "true"):
        paused = invoke("run", AWKWARD, "--input", fail, "--store", store, "--json")
        run_id = run_id_of(paused)
        invoke("resume", run_id, "-r", "request#0=yes\x1b[31m\tno", "--store", store)
        runs.append(run_id)
    return store, runs


def _print_with_rich(log: RunLog, out: _Console, *, verbose: bool) -> None:
    """Print the timeline (not its title) as one rich ``Text``, each line wrapped by rich."""
    page = Text()

    def add(outer: str, branch: str, line: Text) -> None:
        room = max(out.width - len(outer) - 4, 8)
        parts = [line] if line.cell_len <= room else line.wrap(out, room)
        continued = "    " if branch.startswith("└") else "│   "
        for index, part in enumerate(parts):
            page.append(outer + (branch if index == 0 else continued))
            page.append_text(part)
            page.append("\n")

    current = now()
    shown_time = TimelineTimes(current)
    for entry in log.entries:
        last = entry.seq == log.summary.head_seq
        page.append("└── " if last else "├── ")
        page.append_text(Text.assemble(*_entry_header(entry, shown_time)))
        page.append("\n")
        outer = "    " if last else "│   "
        details = _entry_details(entry, current, verbose=verbose)
        for index, (line, under) in enumerate(details):
            final = index == len(details) - 1
            add(outer, "└── " if final else "├── ", Text(*line))
            inner = outer + ("    " if final else "│   ")
            for sub, child in enumerate(under):
                add(inner, "└── " if sub == len(under) - 1 else "├── ", Text(*child))
    page.rstrip()
    out.print(page, soft_wrap=True)


def _as_terminal(monkeypatch: pytest.MonkeyPatch, terminal: str, width: str) -> None:
    """Set the environment rich reads its terminal from: one of TERMINALS, ``width`` wide."""
    for name in ("FORCE_COLOR", "NO_COLOR", "TERM", "COLORTERM"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("COLUMNS", width)
    for name, value in TERMINALS[terminal].items():
        monkeypatch.setenv(name, value)


def _timeline(text: str) -> list[str]:
    """The lines after the title."""
    lines = text.split("\n")
    first = next(i for i, line in enumerate(lines) if line.startswith(("├── ", "└── ")))
    return lines[first:]


@pytest.mark.parametrize("terminal", TERMINALS)
@pytest.mark.parametrize("width", ["30", "80", "200"])
@pytest.mark.parametrize("verbose", [False, True])
def test_log_draws_the_lines_rich_draws(
    awkward_runs: tuple[Path, list[str]],
    terminal: str,
    width: str,
    verbose: bool,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    store, runs = awkward_runs
    _as_terminal(monkeypatch, terminal, width)
    for run_id in runs:
        print_log(run_log(store, run_id), verbose=verbose)
        drawn = capsys.readouterr().out
        _print_with_rich(run_log(store, run_id), _Console(), verbose=verbose)
        expected = capsys.readouterr().out
        assert _timeline(drawn) == _timeline(expected)
        assert ("\x1b[" in drawn) == (terminal != "pipe")  # the colour really was compared
        assert "\x1b[2J" not in drawn and "\\x1b[2J" in drawn  # controls shown, never sent


def test_rich_renders_none_of_a_long_timeline(
    store: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """rich lays out the title (and lines that must wrap), never a plain line of the timeline."""
    ran = invoke("run", MANY, "--input", "450", "--durability", "none", "--store", store, "--json")
    run_id = run_id_of(ran)
    rendered: list[str] = []
    original = _Console.render

    def counted(self: _Console, renderable: object, options: object = None) -> object:
        for segment in original(self, renderable, options):  # type: ignore[arg-type]
            rendered.append(segment.text)
            yield segment

    monkeypatch.setattr(_Console, "render", counted)
    monkeypatch.setenv("COLUMNS", "200")
    print_log(run_log(store, run_id), verbose=True)
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 1 + 2 + 450 * 4 + 2  # the title, root, steps with data, completed
    assert lines[-1] == "    └── result: 101025"
    assert "".join(rendered).startswith(f"run {run_id} · many · ")
    assert "├──" not in "".join(rendered)  # no timeline line went through rich


def test_log_json_is_the_standard_librarys_text(
    awkward_runs: tuple[Path, list[str]], store: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Entries without answers are written with orjson: the same text, floats included."""
    ran = invoke("run", MANY, "--input", "300", "--durability", "none", "--store", store, "--json")
    logs = [(store, run_id_of(ran))] + [(awkward_runs[0], run_id) for run_id in awkward_runs[1]]
    for where, run_id in logs:
        expected = json.dumps(run_log(where, run_id).to_json(), indent=2, ensure_ascii=False)
        assert "".join(run_log(where, run_id).json_text()) == expected + "\n"
    dumped: list[object] = []
    dumps = json.dumps

    def counted(value: object, **kwargs: Any) -> str:
        if kwargs.get("indent"):  # the slow encoder (readable texts use the compact one)
            dumped.append(value)
        return dumps(value, **kwargs)

    monkeypatch.setattr(_json_pages.json, "dumps", counted)
    text = "".join(run_log(*logs[0]).json_text())
    assert json.loads(text)["checkpoint_count"] == 302
    assert len(dumped) == 1  # the document's head: no entry went through the slow encoder


@pytest.mark.parametrize("terminal", TERMINALS)
@pytest.mark.parametrize("width", ["30", "72", "80", "200"])
def test_follow_draws_each_checkpoint_as_rich_draws_its_tree(
    awkward_runs: tuple[Path, list[str]],
    terminal: str,
    width: str,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    store, runs = awkward_runs
    _as_terminal(monkeypatch, terminal, width)
    drawn_by_rich: list[int] = []

    def counted(entry: LogEntry, *args: Any, **kwargs: Any) -> Any:
        drawn_by_rich.append(entry.seq)
        return entry_tree(entry, *args, **kwargs)

    monkeypatch.setattr(_lifecycle, "entry_tree", counted)
    entries = 0
    printer = FollowPrinter()  # one for every checkpoint, as log --follow keeps it
    for run_id in runs:
        for entry in run_log(store, run_id).entries:
            printer(entry)
            drawn = capsys.readouterr().out
            out = _Console()
            out.print(entry_tree(entry))
            assert drawn == capsys.readouterr().out, (width, terminal, entry.seq)
            assert ("\x1b[" in drawn) == (terminal != "pipe")
            entries += 1
    if width == "200":  # rich lays out only the checkpoints with a tab or a line feed
        assert 0 < len(drawn_by_rich) < entries / 2
