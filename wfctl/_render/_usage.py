"""Rendering ``wfctl du``: a row per run, the totals, then the bytes by kind or by channel."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from rich.filesize import decimal

from ._common import Text, status_text, stdout
from ._fit import Cell, Column, fitted_table, print_table

if TYPE_CHECKING:
    from wfctl._sources._protocol import KindSize
    from wfctl._sources._usage import UsageReport

__all__ = ["TOP_CHANNELS", "print_usage"]

#: How many channels the table by channel shows (the largest; ``--json`` has every one).
TOP_CHANNELS = 20


def print_usage(report: UsageReport, *, by_channel: bool = False) -> None:
    """The runs (largest first unless sorted otherwise), the totals and the store's own bytes,
    then the totals by record kind, or by channel (the largest :data:`TOP_CHANNELS`)."""
    out = stdout()
    if not report.total_run_count:
        out.print(f"No runs in {report.store}")
        return
    problems = any(run.problem for run in report.runs)  # the column only when it says something
    columns = [
        Column("run"),
        Column("workflow", rank=3, wrap_min=8),
        Column("status", rank=2),
        Column("records", rank=4, justify="right"),
        Column("size", justify="right"),
    ]
    if problems:
        columns.append(Column("problem", rank=1, wrap_min=12))
    rows: list[list[Cell]] = [
        [
            run.run_id,
            run.workflow or "-",
            status_text(run.status) if run.status else "-",
            str(run.record_count),
            decimal(run.size_bytes),
            *([Text(run.problem or "", style="red")] if problems else []),
        ]
        for run in report.runs
    ]
    if rows:
        title = f"{report.source} runs"
        print_table(out, fitted_table(columns, rows, out.width, title=title))
    out.print(
        f"{decimal(report.size_bytes)} in {report.record_count} record(s) of "
        f"{report.matching_run_count} matching run(s) ({len(report.runs)} shown, "
        f"{report.total_run_count} in the store)"
    )
    if report.store_size_bytes is not None:
        out.print(f"the store takes {decimal(report.store_size_bytes)} on disk: {report.store}")
    if report.problem_count:
        out.print(
            Text(
                f"{report.problem_count} run(s) could not be counted whole: their records up "
                "to the first that cannot be read are counted",
                style="red",
            )
        )
    if by_channel:
        _breakdown(report.by_channel, "channel", TOP_CHANNELS, report.source)
    else:
        _breakdown(report.by_kind, "kind", None, report.source)


def _breakdown(sizes: Sequence[KindSize], name: str, top: int | None, source: str) -> None:
    out = stdout()
    if not sizes:
        out.print(f"no {name}s: the {source} source names none in these runs")
        return
    shown = sizes if top is None else sizes[:top]
    columns = (
        Column(name, wrap_min=12),
        Column("records", rank=1, justify="right"),
        Column("size", justify="right"),
    )
    rows: list[list[Cell]] = [
        [size.kind, str(size.record_count), decimal(size.size_bytes)] for size in shown
    ]
    print_table(out, fitted_table(columns, rows, out.width, title=f"by {name}"))
    if len(shown) < len(sizes):
        out.print(f"{len(sizes) - len(shown)} more {name}(s) (--json lists every one)")
