"""Everything the ``wfctl`` command shows people: tables, trees, panels and live progress.

The only package that imports rich (a ruff banned-API rule keeps it so), and it is imported
only by commands that print for people, so ``wfctl --help`` never loads it. Results go to
stdout; progress, notes and diagnostics go to stderr. Colour follows rich's rules (off when not
a terminal, or when ``NO_COLOR`` is set); width follows ``COLUMNS``.

Each name is imported from its module on first use (start-up time: ``wfctl runs`` needs the
tables, not the live progress display or the syntax highlighting of replay reports).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ._describe import print_description
    from ._langgraph import print_langgraph_change
    from ._lifecycle import (
        FollowPrinter,
        print_cancel,
        print_copied,
        print_dangling,
        print_removed,
    )
    from ._log import print_log
    from ._progress import RunProgress
    from ._reports import ReplayPrinter, print_lineage
    from ._runs import (
        print_checkpoint,
        print_export,
        print_gc,
        print_pause,
        print_run_outcome,
        print_runs,
    )
    from ._sources import print_source_entry, print_source_log, print_source_runs
    from ._usage import print_usage
    from ._worker import print_submit, print_worker_event, print_worker_report

__all__ = [
    "FollowPrinter",
    "ReplayPrinter",
    "RunProgress",
    "print_cancel",
    "print_checkpoint",
    "print_copied",
    "print_dangling",
    "print_description",
    "print_export",
    "print_gc",
    "print_langgraph_change",
    "print_lineage",
    "print_log",
    "print_pause",
    "print_removed",
    "print_run_outcome",
    "print_runs",
    "print_source_entry",
    "print_source_log",
    "print_source_runs",
    "print_submit",
    "print_usage",
    "print_worker_event",
    "print_worker_report",
]

_HOME = {
    "FollowPrinter": "_lifecycle",
    "RunProgress": "_progress",
    "print_langgraph_change": "_langgraph",
    "print_lineage": "_reports",
    "print_log": "_log",
    "ReplayPrinter": "_reports",
    "print_cancel": "_lifecycle",
    "print_copied": "_lifecycle",
    "print_dangling": "_lifecycle",
    "print_description": "_describe",
    "print_removed": "_lifecycle",
    "print_source_entry": "_sources",
    "print_source_log": "_sources",
    "print_source_runs": "_sources",
    "print_submit": "_worker",
    "print_usage": "_usage",
    "print_worker_event": "_worker",
    "print_worker_report": "_worker",
}


def __getattr__(name: str) -> Any:
    if name not in __all__:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{_HOME.get(name, '_runs')}"), name)
    globals()[name] = value
    return value
