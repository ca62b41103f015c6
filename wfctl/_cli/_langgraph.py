"""``gc --prune-history`` and ``rm`` on a LangGraph store: report, or with ``--yes`` apply."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Annotated, Literal

import typer

from ._app import emit_json, locate_store_option, stopped_part_way

__all__ = ["YesOption", "change_langgraph", "langgraph_store", "refuse_options"]

YesOption = Annotated[
    bool,
    typer.Option(
        "--yes",
        help="On a store of another engine (LangGraph), apply the change; without it the "
        "command only reports what would go. wfctl's own stores need no --yes.",
    ),
]


def langgraph_store(store: str | None) -> str | None:
    """The location ``--store`` names when it is a LangGraph store, else None."""
    from wfctl._storage._langgraph import langgraph_location

    location = locate_store_option(store)
    text = str(location.target)
    return text if langgraph_location(text) is not None else None


def refuse_options(options: dict[str, bool], what: str) -> None:
    """Refuse the first option given that ``what`` does not take (one line, exit 2)."""
    for name, present in options.items():
        if present:
            raise typer.BadParameter(f"is not taken {what}", param_hint=f"'{name}'")


def change_langgraph(
    location: str,
    action: Literal["prune", "remove"],
    threads: Sequence[str] | None,
    *,
    yes: bool,
    json_output: bool,
) -> None:
    """Report what the change would remove, or with ``yes`` apply it, and show the report."""
    from wfctl._storage._langgraph import apply, plan_prune, plan_remove

    left = (
        "stopped part way: each thread changed by then stays changed, every other thread is "
        "as it was (one transaction per thread)"
        if yes
        else "nothing was changed"
    )
    with stopped_part_way(left):
        if action == "prune":
            plan = plan_prune(location, threads)
        else:
            plan = plan_remove(location, threads or ())
        report = apply(plan) if yes else plan.report
    if json_output:
        emit_json(report.to_json())
    else:
        from wfctl._render import print_langgraph_change

        print_langgraph_change(report)
