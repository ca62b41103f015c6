"""``wfctl du``: what each run of a store takes, for every store kind wfctl reads."""

from __future__ import annotations

from enum import StrEnum
from typing import Annotated

import typer

from wfctl._inspect._query import UsageSort

from ._app import (
    DebugOption,
    JsonOption,
    StoreOption,
    app,
    complete_run_id,
    emit_json,
    exit_with,
    locate_store_option,
)
from ._filters import SinceOption, StatusFilter, UntilOption, WorkflowGlob, run_query

__all__ = ["du"]


class Breakdown(StrEnum):
    """What ``du`` splits the totals by for people (``--json`` has both)."""

    KIND = "kind"
    CHANNEL = "channel"


@app.command()
def du(
    run_ids: Annotated[
        list[str] | None,
        typer.Argument(
            metavar="RUN_ID",
            help="Runs to count (default: every run).",
            autocompletion=complete_run_id,
        ),
    ] = None,
    workflow: WorkflowGlob = None,
    status: StatusFilter = None,
    since: SinceOption = None,
    until: UntilOption = None,
    sort: Annotated[
        UsageSort,
        typer.Option("--sort", help="Order by size (largest first), name or records."),
    ] = UsageSort.SIZE,
    reverse: Annotated[
        bool, typer.Option("--reverse", help="Reverse the order (by size: smallest first).")
    ] = False,
    limit: Annotated[
        int | None,
        typer.Option(
            "--limit",
            "-n",
            metavar="N",
            min=0,
            help="Show at most N runs (the totals still count every matching run).",
        ),
    ] = None,
    by: Annotated[
        Breakdown,
        typer.Option(
            "--by",
            help="Split the totals by record kind, or by channel (the largest 20, where the "
            "store's records hold channels).",
        ),
    ] = Breakdown.KIND,
    store: StoreOption = None,
    json_output: JsonOption = False,
    debug: DebugOption = False,
) -> None:
    """Show what each run takes in the store, largest first.

    Works on every store kind wfctl reads: its own file and PostgreSQL stores and another
    engine's (an agent-framework checkpoint directory, detected, or named by URL). Each run's
    bytes are its records as stored (a file store's run directory whole), counted by record
    kind, and by channel where the store's records hold channels; then the totals of the
    matching runs and what the whole store takes on disk (its files, or a database's wfctl
    tables with their indexes), which also counts what no run does. Every record is read and
    checked as it is counted, one at a time: memory does not grow with the store. A run
    whose records cannot all be read (an edited or cut record) is counted up to the first
    that fails, named in its row, and the exit code is 1 (as du's is when it cannot read a
    file); an unknown RUN_ID is exit 2.

    \b
    Example:
      wfctl du --workflow 'nightly-*' --limit 10 --store postgresql://db.internal/wfctl
    """
    from wfctl._sources._usage import store_usage

    query = run_query(status, workflow, since, until)  # the filters as `wfctl runs` reads them
    location = locate_store_option(store)
    report = store_usage(
        location.target,
        run_ids or (),
        must_exist=location.named,
        workflow=query.workflow,
        statuses=sorted(query.statuses),
        since=query.since,
        until=query.until,
        sort=sort,
        reverse=reverse,
        limit=limit,
    )
    if json_output:
        emit_json(report.to_json())
    else:
        from wfctl._render import print_usage

        print_usage(report, by_channel=by is Breakdown.CHANNEL)
    exit_with(0 if report.ok else 1)
