"""Tables that fit the terminal: drop the least useful columns, never squeeze one to nothing.

rich shares a too-narrow width by shrinking columns, down to zero, or lets ``no_wrap`` columns
run past the edge. A fitted table knows which columns matter most (``rank`` 0 is never dropped)
and which may wrap (down to ``wrap_min``). It keeps the boxed style when every column fits,
else a lighter style with less chrome, and drops the highest-ranked columns until the rest fit.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from rich import box
from rich.cells import cell_len
from rich.console import RenderableType
from rich.table import Table

from ._common import Text

__all__ = ["Cell", "Column", "fitted_table"]

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
    if not isinstance(cell, str | Text):
        return 0
    plain = cell.plain if isinstance(cell, Text) else cell
    return max((cell_len(line) for line in plain.splitlines()), default=0)


def fitted_table(
    columns: Sequence[Column],
    rows: Sequence[Sequence[Cell]],
    width: int,
    *,
    title: str | None = None,
) -> Table:
    """Return a table of ``rows`` with the columns that fit in ``width`` cells.

    Args:
        columns: Every column, in display order.
        rows: One cell per column in each row.
        width: The terminal's width.
        title: Shown above the table, left-aligned.
    """
    needs = []
    for index, column in enumerate(columns):
        header = cell_len(column.header)
        if column.wrap_min is not None:
            needs.append(max(column.wrap_min, header))
        else:
            needs.append(max([header, *(_width(row[index]) for row in rows)]))
    keep = list(range(len(columns)))
    boxed = sum(needs) + 3 * len(keep) + 1 <= width
    if not boxed:
        # Lighter chrome first; then the least useful columns go (highest rank, rightmost).
        def light(kept: list[int]) -> int:
            return sum(needs[i] for i in kept) + 2 * (len(kept) - 1)

        droppable = sorted(
            (i for i in keep if columns[i].rank > 0), key=lambda i: (columns[i].rank, i)
        )
        while light(keep) > width and droppable:
            keep.remove(droppable.pop())
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
    for i in keep:
        column = columns[i]
        if column.wrap_min is None:
            table.add_column(column.header, no_wrap=True, justify=column.justify)
        else:
            table.add_column(
                column.header,
                min_width=needs[i],
                ratio=1,
                overflow="fold",
                justify=column.justify,
            )
    for row in rows:
        table.add_row(*(row[i] for i in keep))
    return table
