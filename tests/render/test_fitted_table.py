"""The fitted table of text cells is laid out without rich's Table, and looks as that one did."""

from __future__ import annotations

import io
import random
from typing import Any

import pytest
from rich.console import Console  # noqa: TID251  # the test prints tables as the CLI does

from wfctl._render._common import Text, status_text
from wfctl._render._fit import Column, _PlainTable, _rich_table, fitted_table


def _printed(renderable: object, width: int, *, color: bool) -> str:
    buffer = io.StringIO()
    console = Console(
        file=buffer, width=width, color_system="truecolor" if color else None, force_terminal=color
    )
    console.print(renderable)
    return buffer.getvalue()


def _tables(seed: int, *, breaks: bool = True) -> list[tuple[_PlainTable, int]]:
    """Random tables of text cells; ``breaks=False``: no cell with a line break."""
    pick = random.Random(seed)
    found = []
    for _ in range(60):
        columns = [
            Column(
                f"h{i}" * pick.randint(1, 3),
                rank=pick.randint(1, 4) if i else 0,
                wrap_min=pick.choice([None, None, 6, 12]),
                justify=pick.choice(["left", "right"]),
            )
            for i in range(pick.randint(2, 7))
        ]
        rows = [
            [
                pick.choice(
                    [
                        status_text("completed"),
                        Text("word " * pick.randint(0, 6)),
                        "x" * pick.randint(0, 12),
                        "a\nbb" if breaks else "y " * pick.randint(0, 9),
                    ]
                )
                for _ in columns
            ]
            for _ in range(pick.randint(0, 4))
        ]
        for width in (60, 80, 120):
            table = fitted_table(columns, rows, width, title=pick.choice([None, "runs in /x"]))
            assert isinstance(table, _PlainTable)
            found.append((table, width))
    return found


@pytest.mark.parametrize("color", [False, True])
def test_text_tables_look_as_rich_draws_them(color: bool) -> None:
    compared = 0
    for table, width in _tables(7):
        rich_table = _rich_table(table.columns, table.needs, table.rows, table.boxed, table.title)
        ours, theirs = _printed(table, width, color=color), _printed(rich_table, width, color=color)
        if max(len(line) for line in _printed(rich_table, 1000, color=False).splitlines()) > width:
            continue  # squeezed to fit: wrapped columns are narrowed in another order than rich's
        compared += 1
        if color:  # rich also bolds a header's padding: compare that the colours are kept
            assert ("\x1b[32mcompleted" in ours) == ("\x1b[32mcompleted" in theirs)
            continue
        assert ours == theirs
    assert compared > 20


def test_a_table_of_other_renderables_is_still_rich() -> None:
    from rich.table import Table  # noqa: TID251
    from rich.tree import Tree  # noqa: TID251

    table = fitted_table([Column("a"), Column("b", wrap_min=6)], [["x", Tree("y")]], 80)
    assert isinstance(table, Table)


def test_store_text_is_shown_escaped_in_the_fast_table() -> None:
    table = fitted_table([Column("run"), Column("notes", wrap_min=12)], [["r1", "a\x1b[2Jb"]], 80)
    assert isinstance(table, _PlainTable)
    shown = _printed(table, 80, color=False)
    assert "\x1b" not in shown and "\\x1b[2Jb" in shown


def test_a_run_id_wider_than_the_terminal_is_never_cut_silently() -> None:
    long_id = "r" * 70
    table = fitted_table([Column("run"), Column("status")], [[long_id, "completed"]], 60)
    shown = _printed(table, 60, color=False)
    assert long_id in shown or "…" in shown  # whole, or visibly shortened as rich does
    assert all(len(line) <= 60 for line in shown.splitlines())


def test_a_row_of_one_line_cells_is_joined_without_per_cell_layout(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Cells that fit on one line are padded and joined; only the others are laid out."""
    from wfctl._render import _fit

    laid_out: list[object] = []
    cell_lines = _fit._cell_lines

    def counted(console: Console, cell: object, *args: object) -> object:
        laid_out.append(cell)
        return cell_lines(console, cell, *args)  # type: ignore[arg-type]

    monkeypatch.setattr(_fit, "_cell_lines", counted)
    columns = [Column("run"), Column("status"), Column("notes", rank=1, wrap_min=6)]
    rows = [[f"run-{i}", status_text("completed"), "short"] for i in range(100)]
    rows.append(["run-x", status_text("failed"), "a note far too long for its column"])
    for color in (False, True):
        laid_out.clear()
        printed = _printed(fitted_table(columns, rows, 40), 40, color=color)
        assert "run-99" in printed and "its    │" in printed
        assert laid_out == [
            "run-x",
            Text("failed", style="red"),
            "a note far too long for its column",
        ]


@pytest.mark.parametrize("mode", ["plain", "color", "no_color"])
def test_a_text_table_is_written_as_rich_prints_it(
    mode: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``print_table`` writes, byte for byte, what ``Console.print`` of the table writes."""
    from wfctl._render import _fit
    from wfctl._render._fit import print_table

    folded_rows: list[str] = []
    folded_row = _fit._folded_row

    def counted(*args: Any) -> str | None:
        folded = folded_row(*args)
        if folded is not None:
            folded_rows.append(folded)
        return folded

    monkeypatch.setattr(_fit, "_folded_row", counted)

    def console(buffer: io.StringIO, width: int) -> Console:
        color = mode != "plain"
        return Console(
            file=buffer,
            width=width,
            color_system="truecolor" if color else None,
            force_terminal=color,
            no_color=mode == "no_color",
        )

    written = 0
    for table, width in [*_tables(11), *_tables(13, breaks=False)]:
        printed, ours = io.StringIO(), io.StringIO()
        console(printed, width).print(table)
        print_table(console(ours, width), table)
        assert ours.getvalue() == printed.getvalue()
        written += table.text(console(io.StringIO(), width)) is not None
    assert written > 100  # most were written directly, not through rich's print
    assert len(folded_rows) > 50  # rows with cells that wrap, written without rich's layout


def test_store_text_in_a_text_cell_is_written_escaped() -> None:
    from rich.text import Text as RichText  # noqa: TID251  # a Text that escapes nothing

    from wfctl._render._fit import _PlainTable, print_table

    cell = Text("a").append(RichText("\x1b[2Jb"))  # rich's own text is appended as it is
    table = fitted_table([Column("run"), Column("status")], [["r1", cell]], 80)
    assert isinstance(table, _PlainTable)
    buffer = io.StringIO()
    print_table(Console(file=buffer, width=80, color_system=None), table)
    assert "\x1b" not in buffer.getvalue() and "a\\x1b[2Jb" in buffer.getvalue()


def test_unstyled_text_is_folded_as_rich_wraps_it() -> None:
    """``_folded`` gives the lines rich's ``Text.wrap`` gives (the general path), padded."""
    from wfctl._render._fit import _cell_lines, _folded

    console = Console(file=io.StringIO(), width=80, color_system=None)
    pick = random.Random(5)
    alphabet = "ab xyz-,.:\"'{}[]   "
    for _ in range(3_000):
        text = "".join(pick.choice(alphabet) for _ in range(pick.randint(1, 60)))
        width = pick.randint(1, 24)
        cell = pick.choice([text, Text(text)])
        justify = pick.choice(["left", "right"])
        folded = _folded(cell, width, justify)
        assert folded is not None
        wrapped = Text(text).wrap(console, width, justify=justify, overflow="fold")
        padded = [
            line.plain.rjust(width) if justify == "right" else line.plain.ljust(width)
            for line in wrapped
        ]
        assert folded == padded, (text, width, justify)
        lines = _cell_lines(console, cell, len(text), width, justify)
        assert ["".join(s.text for s in line) for line in lines] == folded
    assert _folded("tab\there", 4, "left") is None and _folded("é" * 9, 4, "left") is None
    assert _folded(Text("styled", style="red"), 4, "left") is None
