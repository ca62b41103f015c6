"""One meaning per short option across commands, built from the app itself.

The table of every short option is read from the typer app (``wfctl._cli._flags``): a letter
that stands for two long options in two commands fails here, and so does a short option added
without a decision (the table below, the man page's SHORT OPTIONS and the README's table are
the same). Through the installed ``wfctl``: a letter taken away is refused in one line (exit 2).
"""

from __future__ import annotations

import re

import pytest
import typer.main

from tests.cli.conftest import REPO, wfctl
from wfctl._cli import app
from wfctl._cli._flags import short_flags

#: Each short option and the one long option it stands for, in every command that has it.
DECIDED = {
    "-c": "--checkpoint",
    "-f": "--follow",
    "-i": "--input",
    "-n": "--limit",
    "-r": "--response",
    "-s": "--status",
    "-v": "--verbose",
    "-w": "--workflow",
    "-y": "--yes",
}


def _table() -> dict[str, tuple[str, ...]]:
    group = typer.main.get_command(app)
    context = group.make_context("wfctl", [], resilient_parsing=True)
    return {letter: flag.longs for letter, flag in short_flags(group, context).items()}


def test_each_short_option_has_one_meaning_in_every_command() -> None:
    clashes = {letter: longs for letter, longs in _table().items() if len(longs) > 1}
    assert clashes == {}


def test_the_short_options_are_the_ones_decided() -> None:
    assert {letter: longs[0] for letter, longs in _table().items()} == DECIDED


def test_the_readme_and_the_man_page_list_them() -> None:
    readme = (REPO / "docs" / "tour.md").read_text(encoding="utf-8")  # the tour shows them
    rows = dict(re.findall(r"^\| `(-[a-z])` \| `(--[a-z-]+)` \|", readme, flags=re.M))
    assert rows == DECIDED
    man = (REPO / "man" / "wfctl.1").read_text(encoding="utf-8")
    section = man.split(".SH SHORT OPTIONS", 1)[1].split(".SH ", 1)[0]
    for letter, long in DECIDED.items():
        roff = letter.replace("-", "\\-"), long.replace("-", "\\-")
        assert "\\fB{}\\fR, \\fB{}\\fR".format(*roff) in section


@pytest.mark.parametrize(
    "args",
    [
        ["runs", "-r"],
        ["export", "run", "-f", "toml"],
        ["export", "run", "-o", "run.json"],
        ["worker", "-c", "2"],
    ],
)
def test_a_letter_taken_away_is_refused_in_one_line(args: list[str], tmp_path: object) -> None:
    done = wfctl(*args, "--store", str(tmp_path))
    assert done.code == 2
    assert "has no option" in done.error_line()
