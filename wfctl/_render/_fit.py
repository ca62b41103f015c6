"""Tables that fit the terminal: drop the least useful columns, never squeeze one to nothing.

rich shares a too-narrow width by shrinking columns, down to zero, or lets ``no_wrap`` columns
run past the edge. A fitted table knows which columns matter most (``rank`` 0 is never dropped)
and which may wrap (down to ``wrap_min``). When its columns do not fit unwrapped, an empty
column (no cell with anything in it) goes first. It keeps the boxed style when every column
left fits, else a lighter style with less chrome, and drops the highest-ranked columns until
the rest fit.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from itertools import pairwise
from typing import TYPE_CHECKING, Final, Literal

from rich import box
from rich.cells import cell_len
from rich.console import COLOR_SYSTEMS, Console, ConsoleOptions, RenderableType, RenderResult
from rich.segment import Segment
from rich.style import Style

from wfctl._visible import visible

from ._common import Text

if TYPE_CHECKING:
    from rich.table import Table

__all__ = ["Cell", "Column", "fitted_table", "print_table", "write_laid_out"]

#: A table cell: text is measured; any other renderable is taken to wrap as needed.
Cell = RenderableType


@dataclass(frozen=True, slots=True)
class Column:
    """A column of a fitted table.

    ``rank``: 0 is kept at any width; higher ranks are dropped first (ties: the rightmost).
    ``wrap_min``: the column wraps its text (folding long words) and is never narrower than
    this; None: it never wraps and is as wide as its widest cell.
    """

    header: str
    rank: int = 0
    wrap_min: int | None = None
    justify: Literal["left", "right"] = "left"


def _width(cell: Cell) -> int:
    if isinstance(cell, str):
        plain = cell
    elif isinstance(cell, Text):
        plain = cell.plain
    else:
        return 0
    if plain.isascii() and plain.isprintable():  # one cell a character (no tab, no line feed)
        return len(plain)
    if "\n" not in plain:
        return cell_len(plain)
    return max((cell_len(line) for line in plain.splitlines()), default=0)


def fitted_table(
    columns: Sequence[Column],
    rows: Sequence[Sequence[Cell]],
    width: int,
    *,
    title: str | None = None,
    least: Sequence[int] | None = None,
) -> RenderableType:
    """Return a table of ``rows`` with the columns that fit in ``width`` cells.

    Args:
        columns: Every column, in display order.
        rows: One cell per column in each row.
        width: The terminal's width.
        title: Shown above the table, left-aligned.
        least: The least width of each column that never wraps (cells to come, say).
    """
    # Strings as they will be shown (controls escaped), then measured: each once.
    rows = [[visible(cell) if isinstance(cell, str) else cell for cell in row] for row in rows]
    sizes = [[_width(cell) for cell in row] for row in rows]
    needs = []
    for index, column in enumerate(columns):
        header = cell_len(column.header)
        if column.wrap_min is not None:
            needs.append(max(column.wrap_min, header))
        else:
            at_least = least[index] if least is not None else 0
            needs.append(max([header, at_least, *(row[index] for row in sizes)]))
    keep = list(range(len(columns)))
    natural = [  # each column as wide as its widest cell: what it takes without wrapping
        max([need, *(row[i] for row in sizes)]) for i, need in enumerate(needs)
    ]
    if sum(natural) + 3 * len(keep) + 1 > width and sizes:
        # An empty column goes before any column with something in it is wrapped or dropped.
        keep = [i for i in keep if columns[i].rank == 0 or any(row[i] for row in sizes)]
    boxed = sum(needs[i] for i in keep) + 3 * len(keep) + 1 <= width
    if not boxed:
        # Lighter chrome first; then the least useful columns go (highest rank, rightmost).
        def light(kept: list[int]) -> int:
            return sum(needs[i] for i in kept) + 2 * (len(kept) - 1)

        droppable = sorted(
            (i for i in keep if columns[i].rank > 0), key=lambda i: (columns[i].rank, i)
        )
        while light(keep) > width and droppable:
            keep.remove(droppable.pop())
    kept = [columns[i] for i in keep]
    every = len(keep) == len(columns)
    cells = rows if every else [[row[i] for i in keep] for row in rows]
    if all(isinstance(cell, str | Text) for row in cells for cell in row):  # the fast layout
        kept_sizes = sizes if every else [[row[i] for i in keep] for row in sizes]
        texts: list[list[str | Text]] = cells  # type: ignore[assignment]  # checked just above
        return _PlainTable(kept, [needs[i] for i in keep], texts, kept_sizes, width, boxed, title)
    return _rich_table(kept, [needs[i] for i in keep], cells, boxed, title)


def _rich_table(
    columns: Sequence[Column],
    needs: Sequence[int],
    rows: Sequence[Sequence[Cell]],
    boxed: bool,
    title: str | None,
) -> Table:
    """Lay the kept columns out with rich (cells that are neither text nor strings)."""
    from rich.table import Table  # not loaded by a table of text cells (start-up time)

    table = (
        Table(title=title, title_justify="left")
        if boxed
        else Table(
            title=title,
            title_justify="left",
            box=box.SIMPLE_HEAD,
            show_edge=False,
            pad_edge=False,
            collapse_padding=True,
        )
    )
    for column, need in zip(columns, needs, strict=True):
        if column.wrap_min is None:
            table.add_column(column.header, no_wrap=True, justify=column.justify)
        else:
            table.add_column(
                column.header, min_width=need, ratio=1, overflow="fold", justify=column.justify
            )
    for row in rows:
        table.add_row(*row)
    return table


#: A line of a cell: its text and style, in pieces.
_Line = list[Segment]
#: A row's left edge, the rule between two cells, and its right edge: boxed, and light.
_EDGES = {True: ("│ ", " │ ", " │"), False: ("", "  ", "")}


class _PlainTable:
    """A fitted table of text cells, laid out once as padded lines (as rich draws its tables).

    rich's ``Table`` measures and renders every cell through its general layout, ~0.8 ms a row:
    a store of 10,000 runs took seconds to list. This draws the same look (the boxed style when
    every column fits, else the light one) with one width measurement per cell; only a cell too
    wide for its column goes through rich's wrapping (folding long words, as the table did).
    """

    def __init__(
        self,
        columns: Sequence[Column],
        needs: Sequence[int],
        rows: Sequence[Sequence[str | Text]],
        sizes: Sequence[Sequence[int]],
        width: int,
        boxed: bool,
        title: str | None,
    ) -> None:
        self.columns, self.needs, self.rows, self.sizes = columns, needs, rows, sizes
        self.width, self.boxed, self.title = width, boxed, title

    def _widths(self) -> list[int]:
        """Each column as wide as its widest cell; wrapping columns narrowed to fit, widest first."""
        columns, needs = self.columns, self.needs
        widths = [
            max([need, cell_len(column.header), *(row[i] for row in self.sizes)])
            if column.wrap_min is not None
            else need
            for i, (column, need) in enumerate(zip(columns, needs, strict=True))
        ]
        n = len(widths)
        room = self.width - (3 * n + 1 if self.boxed else 2 * (n - 1))
        excess = sum(widths) - room
        while excess > 0:
            narrowable = [i for i, c in enumerate(columns) if c.wrap_min and widths[i] > needs[i]]
            if not narrowable:
                break
            widest = max(widths[i] for i in narrowable)
            for i in narrowable:
                if widths[i] == widest and excess > 0:
                    widths[i] -= 1
                    excess -= 1
        return widths

    def _total(self, widths: Sequence[int]) -> int:
        """The table's width in cells, chrome included."""
        return sum(widths) + (3 * len(widths) + 1 if self.boxed else 2 * (len(widths) - 1))

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        widths = self._widths()
        if options.ascii_only or self._total(widths) > self.width:
            # A terminal without box characters (rich substitutes them), or columns that never
            # wrap wider than the terminal (rich shortens them, visibly, rather than cropping)
            yield _rich_table(self.columns, self.needs, self.rows, self.boxed, self.title)
            return
        yield from self._top(console, widths)
        edges = _EDGES[self.boxed]
        rows = (
            self._row(console, row, widths, edges, sizes)
            for row, sizes in zip(self.rows, self.sizes, strict=True)
        )
        if console.color_system is None:  # styles show nothing: a row is one segment
            # (not the whole table: rich splits a segment's lines in quadratic time)
            yield from (Segment("".join(segment.text for segment in row)) for row in rows)
        else:
            for row in rows:
                yield from row
        yield from self._bottom(widths)

    def _top(self, console: Console, widths: Sequence[int]) -> Iterator[Segment]:
        """The title, and the header row between its rules."""
        chrome = box.HEAVY_HEAD if self.boxed else box.SIMPLE_HEAD
        total = self._total(widths)
        newline = Segment.line()
        if self.title is not None:
            title = Text(self.title, style=console.get_style("table.title"))
            for line in title.wrap(console, total, overflow="fold"):
                line.pad_right(total - line.cell_len)
                yield from line.render(console)
                yield newline
        header_style = console.get_style("table.header")
        headers = [Text(c.header, style=header_style) for c in self.columns]
        header_sizes = [cell_len(c.header) for c in self.columns]
        padded = [w + 2 for w in widths]  # a boxed column's width with its padding
        if self.boxed:
            yield Segment(chrome.get_top(padded))
            yield newline
            yield from self._row(console, headers, widths, ("┃ ", " ┃ ", " ┃"), header_sizes)
            yield Segment(chrome.get_row(padded, "head"))
            yield newline
        else:
            yield from self._row(console, headers, widths, _EDGES[False], header_sizes)
            yield Segment("─" * total)
            yield newline

    def _bottom(self, widths: Sequence[int]) -> Iterator[Segment]:
        if self.boxed:
            yield Segment(box.HEAVY_HEAD.get_bottom([w + 2 for w in widths]))
            yield Segment.line()

    def text(self, console: Console) -> str | None:
        """Return what ``console.print`` of this table writes, or None where rich must draw it.

        Rows of one-line cells are padded and joined as strings, each styled cell between the
        escape codes rich writes for its style (see :class:`_Written`); the title, the header
        and any row with a cell that wraps are rendered as :meth:`__rich_console__` renders
        them. None: rich substitutes box characters (an ASCII-only terminal), the columns are
        wider than the terminal, or the console writes other than by escape codes (a legacy
        Windows console, a notebook, a recording or quiet console).
        """
        widths = self.widths(console)
        return None if widths is None else self.lines(console, widths)

    def widths(self, console: Console) -> list[int] | None:
        """The columns' widths :meth:`text` lays the rows out in, or None where rich must
        draw the table (see :meth:`text`)."""
        if console.legacy_windows or console.is_jupyter or console.record or console.quiet:
            return None
        widths = self._widths()
        if console.options.ascii_only or self._total(widths) > self.width:
            return None
        return widths

    def lines(
        self, console: Console, widths: Sequence[int], *, top: bool = True, bottom: bool = True
    ) -> str:
        """Return the table laid out in ``widths`` (see :meth:`text`); ``top``: with its title
        and header, ``bottom``: with its bottom edge."""
        written = _Written(console)
        parts = [written.segments(self._top(console, widths))] if top else []
        left, mid, right = edges = _EDGES[self.boxed]
        end = right + "\n"
        codes = written.codes
        columns = self.columns
        for row, sizes in zip(self.rows, self.sizes, strict=True):
            line: list[str] = []
            for number, (cell, size, width, column) in enumerate(
                zip(row, sizes, widths, columns, strict=True)
            ):
                padded = _padded(cell, size, width, column.justify)
                if padded is None:  # a cell that wraps: the row's lines, as rich lays them out
                    folded = _folded_row(row, sizes, widths, columns, edges, codes)
                    if folded is None:  # as rich's layout renders it
                        folded = written.segments(self._row(console, row, widths, edges, sizes))
                    line = [folded]
                    break
                text, style = padded
                if not isinstance(cell, str):  # a string cell was made visible by fitted_table
                    text = visible(text)
                line.append(mid if number else left)
                if style and text:
                    before, after = codes(style)
                    line += (before, text, after)
                else:
                    line.append(text)
            else:
                line.append(end)
            parts += line
        if bottom:
            parts.append(written.segments(self._bottom(widths)))
        return "".join(parts)

    def page(self, columns: Sequence[Column], rows: Sequence[Sequence[str | Text]]) -> _PlainTable:
        """Return more rows of this table (one cell per column of ``columns``, the columns it
        was fitted from), to be laid out in its widths."""
        keep = [i for i, column in enumerate(columns) if column in self.columns]
        cells = [
            [visible(cell) if isinstance(cell, str) else cell for cell in (row[i] for i in keep)]
            for row in rows
        ]
        sizes = [[_width(cell) for cell in row] for row in cells]
        return _PlainTable(
            self.columns, self.needs, cells, sizes, self.width, self.boxed, title=None
        )

    def _row(
        self,
        console: Console,
        row: Sequence[str | Text],
        widths: Sequence[int],
        edges: tuple[str, str, str],
        sizes: Sequence[int],
    ) -> Iterator[Segment]:
        left, mid, right = edges
        padded = [
            _padded(cell, size, width, column.justify)
            for cell, size, width, column in zip(row, sizes, widths, self.columns, strict=True)
        ]
        if None not in padded:  # one line, every cell as it is: no lists of segments per cell
            joined = [left]
            for number, (text, style) in enumerate(padded):  # type: ignore[misc]
                if number:
                    joined.append(mid)
                if style and console.color_system is not None:
                    if any(joined):
                        yield Segment("".join(joined))
                    yield Segment(text, console.get_style(style))
                    joined = []
                else:
                    joined.append(text)
            joined.append(right + "\n")
            yield Segment("".join(joined))
            return
        cells = [
            _cell_lines(console, cell, size, width, column.justify)
            for cell, size, width, column in zip(row, sizes, widths, self.columns, strict=True)
        ]
        height = max(len(lines) for lines in cells)
        for index in range(height):
            # Unstyled pieces are joined: rich's cost is per segment, not per character.
            pieces = [Segment(left)]
            for number, (lines, width) in enumerate(zip(cells, widths, strict=True)):
                if number:
                    pieces.append(Segment(mid))
                pieces.extend(lines[index] if index < len(lines) else [Segment(" " * width)])
            pieces.append(Segment(right + "\n"))
            plain: list[str] = []
            for piece in pieces:
                if piece.style is None:
                    plain.append(piece.text)
                    continue
                if plain:
                    yield Segment("".join(plain))
                    plain = []
                yield piece
            yield Segment("".join(plain))


def _folded_row(
    row: Sequence[str | Text],
    sizes: Sequence[int],
    widths: Sequence[int],
    columns: Sequence[Column],
    edges: tuple[str, str, str],
    codes: Callable[[str | Style], tuple[str, str]],
) -> str | None:
    """Return a row with cells that wrap as :meth:`_PlainTable._row` renders it and
    :class:`_Written` writes it, when each cell fits on one line or folds (:func:`_folded`):
    strings, without a list of segments per line. None: another cell (rich's layout).

    ``codes`` is :meth:`_Written.codes` of the console written to.
    """
    cells: list[tuple[list[str], str | Style]] = []
    for cell, size, width, column in zip(row, sizes, widths, columns, strict=True):
        padded = _padded(cell, size, width, column.justify)
        if padded is not None:
            text, style = padded
            cells.append(([text if isinstance(cell, str) else visible(text)], style))
            continue
        folded = _folded(cell, width, column.justify)
        if folded is None:
            return None
        cells.append((folded, ""))
    left, mid, right = edges
    parts: list[str] = []
    for index in range(max(len(lines) for lines, _ in cells)):
        parts.append(left)
        for number, ((lines, style), width) in enumerate(zip(cells, widths, strict=True)):
            if number:
                parts.append(mid)
            if index >= len(lines):
                parts.append(" " * width)
            elif style and lines[index]:
                before, after = codes(style)
                parts += (before, lines[index], after)
            else:
                parts.append(lines[index])
        parts.append(right + "\n")
    return "".join(parts)


def _padded(
    cell: str | Text, size: int, width: int, justify: Literal["left", "right"]
) -> tuple[str, str | Style] | None:
    """Return a cell's one line padded to ``width`` and its style, or None if it must wrap.

    None too for text with styled spans, and for a right-justified line with trailing spaces
    (rich drops them): such a cell takes rich's general path.
    """
    style: str | Style = ""
    if isinstance(cell, str):
        plain, spans = cell, False  # made visible by fitted_table
    else:
        plain, style, spans = cell.plain, cell.style, bool(cell.spans)
    trailing = justify == "right" and plain[-1:].isspace()
    if spans or size > width or trailing or "\n" in plain:
        return None
    gap = " " * (width - size)
    return (gap + plain if justify == "right" else plain + gap), style


def _cell_lines(
    console: Console, cell: str | Text, size: int, width: int, justify: Literal["left", "right"]
) -> list[_Line]:
    """Return a cell's lines, each padded to ``width`` cells (folded when the text is wider).

    ``size`` is the cell's measured width (see :func:`_width`).
    """
    padded = _padded(cell, size, width, justify)
    if padded is not None:
        shown, style = padded
        return [[Segment(shown, console.get_style(style) if style else None)]]
    folded = _folded(cell, width, justify)
    if folded is not None:
        return [[Segment(line)] for line in folded]
    text = cell if isinstance(cell, Text) else Text(cell)
    lines = text.wrap(console, width, justify=justify, overflow="fold")
    out: list[_Line] = []
    for line in lines:
        if justify == "right":
            line.pad_left(width - line.cell_len)
        else:
            line.pad_right(width - line.cell_len)
        out.append(list(line.render(console)))
    return out


def _folded(cell: str | Text, width: int, justify: Literal["left", "right"]) -> list[str] | None:
    """Return the lines rich's ``Text.wrap`` (folding) makes of an unstyled cell, each padded
    to ``width`` on the side ``justify`` says; None for a cell it cannot lay out so.

    rich's wrap makes a ``Text`` of every line and justifies each, ~80 µs a cell: a replay of
    20,000 steps wrapped 40,000 previews. For unstyled printable ASCII (one cell a character,
    no line break or tab) the lines are where rich's wrap breaks the text (:func:`_breaks`), each
    cropped to ``width`` (``rstrip_end``, then the justification, which crops whatever is
    still past ``width``; right justification strips the line's trailing spaces first) and
    padded: what ``wrap`` does, without the objects. ``tests/render/test_fitted_table.py``
    compares the two on random text.
    """
    if isinstance(cell, str):
        plain = cell
    elif cell.style or cell.spans:
        return None
    else:
        plain = cell.plain
    if not (plain.isascii() and plain.isprintable()):
        return None
    breaks = [0, *_breaks(plain, width), len(plain)]
    if justify == "right":
        return [plain[start:end].rstrip()[:width].rjust(width) for start, end in pairwise(breaks)]
    return [plain[start:end][:width].ljust(width) for start, end in pairwise(breaks)]


#: A word as rich's wrap sees it: the spaces before it (at the start of the text), the word, and
#: the spaces after it.
_WORD: Final = re.compile(r"\s*\S+\s*")


def _breaks(plain: str, width: int) -> list[int]:
    """Return the offsets where rich's ``Text.wrap`` (folding) breaks a line of printable ASCII.

    wfctl's own copy of rich's private ``rich._wrap.divide_line`` (with ``fold=True``), for one
    cell a character: a private function may change or go in any rich release. A word goes on
    the line if it fits (its trailing spaces may run past ``width``: the caller crops them),
    else on the next line, and a word longer than ``width`` is cut every ``width`` characters,
    its last piece starting the next line's count. ``tests/render/test_fitted_table.py`` compares
    the lines with ``Text.wrap``'s on random text.
    """
    breaks: list[int] = []
    offset = 0  # characters on the current line
    for word in _WORD.finditer(plain):
        start, end = word.span()
        length = len(word.group().rstrip())
        if width - offset >= length:
            offset += end - start
        elif length > width:  # folded: a break before each piece (none at the very start)
            breaks.extend(piece for piece in range(start, end, width) if piece)
            offset = (end - start - 1) % width + 1  # the last piece's length
        elif offset and start:
            breaks.append(start)
            offset = end - start
    return breaks


def print_table(console: Console, table: RenderableType) -> None:
    """Print a fitted table: ``console.print(table)``, written as one string where it can be.

    rich's ``print`` passes every segment through its line splitting, cropping and writing,
    a few microseconds a row; the rows of a fitted table of text cells are already laid out
    (see :meth:`_PlainTable.text`), so their text is written as ``print`` would write it.
    """
    text = table.text(console) if isinstance(table, _PlainTable) else None
    if text is None:
        console.print(table)
        return
    write_laid_out(console, text)


#: How many rows :class:`RowsPrinter` lays out at once.
PAGE_ROWS: Final = 1000


class RowsPrinter:
    """A fitted table of rows (text cells) printed as they come, a page of :data:`PAGE_ROWS` at
    a time: :meth:`add` each row, then :meth:`close`.

    A table of one page is what ``print_table(console, fitted_table(...))`` prints. A longer
    one is fitted to its first page, each column that never wraps as wide as ``least`` says
    at least (the widest cell to come, when the caller knows it; it may be set until the first
    page is written), and the pages after it are written in the same columns (a cell wider than
    its column folded in it), with no header of their own; only the rows of one page are held.
    Where rich must draw the table (see :meth:`_PlainTable.text`), each page is a table of its
    own. ``before_write`` is called once, before the table's first line is written.
    """

    def __init__(
        self,
        console: Console,
        columns: Sequence[Column],
        *,
        title: str | None = None,
        least: Sequence[int] | None = None,
        before_write: Callable[[], None] | None = None,
    ) -> None:
        self.console, self.columns, self.title, self.least = console, columns, title, least
        self._before_write = before_write
        self._page: list[Sequence[str | Text]] = []
        #: The first page's table and its columns' widths (None: rich draws it), once written.
        self._first: RenderableType | None = None
        self._widths: list[int] | None = None

    def add(self, row: Sequence[str | Text]) -> None:
        """Take the table's next row; write the page before it if that page is full."""
        if len(self._page) == PAGE_ROWS:
            self._write(last=False)
        self._page.append(row)

    def close(self) -> None:
        """Write the rows left: the table's last page."""
        self._write(last=True)

    def _write(self, *, last: bool) -> None:
        page, self._page = self._page, []
        console, columns = self.console, self.columns
        if self._before_write is not None:
            self._before_write()
            self._before_write = None
        if self._first is None:
            if last:  # one page: the table whole
                print_table(console, fitted_table(columns, page, console.width, title=self.title))
                return
            table = fitted_table(columns, page, console.width, title=self.title, least=self.least)
            self._first = table
            self._widths = table.widths(console) if isinstance(table, _PlainTable) else None
            if self._widths is None or not isinstance(table, _PlainTable):
                console.print(table)
            else:
                write_laid_out(console, table.lines(console, self._widths, bottom=False))
            return
        first, widths = self._first, self._widths
        if widths is None or not isinstance(first, _PlainTable):
            console.print(fitted_table(columns, page, console.width, least=self.least))
            return
        lines = first.page(columns, page).lines(console, widths, top=False, bottom=last)
        write_laid_out(console, lines)


def write_laid_out(console: Console, text: str) -> None:
    """Write ``text``, already laid out and styled as rich would write it, to the console."""
    console.file.write(text)
    console.file.flush()


class _Written:
    """Segments as ``Console.print`` writes them: each styled text between its escape codes.

    rich writes ``style.render(text)``: ``<codes>text<reset>``, nothing around it without a
    colour system, and the colours removed (attributes such as bold kept) under ``no_color``.
    """

    def __init__(self, console: Console) -> None:
        self._system = COLOR_SYSTEMS.get(console.color_system or "")
        self._no_color = console.no_color and self._system is not None
        self._get_style = console.get_style
        self._codes: dict[str | Style, tuple[str, str]] = {}

    def codes(self, style: str | Style) -> tuple[str, str]:
        """Return the escape codes rich writes before and after text in ``style``."""
        found = self._codes.get(style)
        if found is None:
            resolved = self._get_style(style) if isinstance(style, str) else style
            if self._no_color:
                resolved = resolved.without_color
            before, _, after = resolved.render("\0", color_system=self._system).partition("\0")
            found = self._codes[style] = (before, after)
        return found

    def segments(self, segments: Iterable[Segment]) -> str:
        """Return ``segments`` (text made visible, as the console does) as written."""
        parts: list[str] = []
        for segment in segments:
            text = visible(segment.text)
            if segment.style and text:
                before, after = self.codes(segment.style)
                parts += (before, text, after)
            else:
                parts.append(text)
        return "".join(parts)
