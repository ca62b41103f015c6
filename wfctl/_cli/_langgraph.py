"""``gc --prune-history`` and ``rm`` on a LangGraph store: report, or with ``--yes`` apply."""

from __future__ import annotations

import sys
from collections.abc import Sequence
from typing import Annotated, Literal

import typer

from ._app import emit_json, locate_store_option, stopped_part_way

__all__ = ["YesOption", "change_langgraph", "confirmed", "langgraph_store", "refuse_options"]

YesOption = Annotated[
    bool,
    typer.Option(
        "--yes",
        "-y",
        help="Delete without asking. On wfctl's stores, gc and rm of more than one run ask "
        "first on a terminal, and need --yes without one; on a LangGraph store the change is "
        "applied only with --yes (without it, a report of what would go).",
    ),
]


def langgraph_store(store: str | None) -> str | None:
    """The location ``--store`` names when it is a LangGraph store, else None."""
    from wfctl._storage._langgraph import langgraph_location

    location = locate_store_option(store)
    text = str(location.target)
    return text if langgraph_location(text) is not None else None


def confirmed(count: int, what: str, yes: bool, listing: Sequence[str], hint: str = "") -> bool:
    """Whether deleting ``count`` runs (``what``: "gc would remove 3 runs") may go ahead.

    One run, or ``--yes``: without a question. More, on a terminal (stdin and stderr): the runs
    in ``listing`` are shown on stderr and the person is asked (the default is no). More,
    without a terminal: refused (exit 2), since nobody can be asked and a script that deletes
    many runs says so with ``--yes``.

    Raises:
        UsageSentence: more than one run, no terminal, no ``--yes``.
    """
    if yes or count <= 1:
        return True
    if not (sys.stdin.isatty() and sys.stderr.isatty()):
        from ._coercion import UsageSentence

        raise UsageSentence(f"{what} and there is no terminal to ask on: give --yes{hint}")
    for line in listing:
        typer.echo(f"  {line}", err=True)
    return typer.confirm(f"{what}; delete them?", default=False, err=True)


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
