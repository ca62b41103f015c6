"""The commands that end or delete runs: ``cancel`` and ``rm``."""

from __future__ import annotations

from typing import Annotated

import typer

from ._app import (
    DebugOption,
    JsonOption,
    StoreOption,
    app,
    complete_run_id,
    emit_json,
    locate_store_option,
)

__all__ = ["cancel", "rm"]


@app.command()
def cancel(
    run_id: Annotated[
        str,
        typer.Argument(
            metavar="RUN_ID", help="The run to end for good.", autocompletion=complete_run_id
        ),
    ],
    reason: Annotated[
        str | None,
        typer.Option("--reason", metavar="TEXT", help="Why; stored in the cancelled record."),
    ] = None,
    store: StoreOption = None,
    json_output: JsonOption = False,
    debug: DebugOption = False,
) -> None:
    """End a paused, failed, interrupted or queued run for good.

    Records a final 'cancelled' checkpoint at the head of the run's chain (the chain stays one
    verifiable lineage). A cancelled run cannot be resumed, and gc may remove it like a
    completed run. Exit 2 if the run is running (pause it first), completed or cancelled
    already.

    \b
    Example:
      wfctl cancel 20261129-121400-3f9a2c --reason "superseded by a new run"
    """
    from wfctl._cancel import cancel_run

    location = locate_store_option(store)
    report = cancel_run(location.path, run_id, reason=reason, must_exist=location.named)
    if json_output:
        emit_json(report.to_json())
    else:
        from wfctl._render import print_cancel

        print_cancel(report)


@app.command()
def rm(
    run_ids: Annotated[
        list[str],
        typer.Argument(
            metavar="RUN_ID...", help="The runs to delete.", autocompletion=complete_run_id
        ),
    ],
    force: Annotated[
        bool,
        typer.Option(
            "--force",
            help="Delete a run even when a run that stays was restored from it (its origin "
            "then dangles; each such run is named on stderr).",
        ),
    ] = False,
    store: StoreOption = None,
    json_output: JsonOption = False,
    debug: DebugOption = False,
) -> None:
    """Delete whole runs.

    All the named runs are deleted, or (when one is refused) none. Refused: an unknown run, a
    running run (even with --force: pause it or let it end first), and a run that a run that
    stays names as its origin, unless --force. Deleting a run together with the runs restored
    from it needs no --force.

    \b
    Example:
      wfctl rm 20261129-121400-3f9a2c 20261129-121500-8b1d4e
    """
    from wfctl._remove import remove_runs

    location = locate_store_option(store)
    report = remove_runs(location.path, run_ids, force=force, must_exist=location.named)
    from wfctl._render import print_dangling, print_removed

    print_dangling(report)  # on stderr, with or without --json: what --force broke
    if json_output:
        emit_json(report.to_json())
    else:
        print_removed(report)
