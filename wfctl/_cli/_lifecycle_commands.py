"""The commands that end, delete or move runs: ``cancel``, ``rm`` and ``copy``."""

from __future__ import annotations

from typing import Annotated

import typer

from ._app import (
    RUN_NAMES,
    DebugOption,
    JsonOption,
    StoreOption,
    app,
    complete_run_id,
    emit_json,
    exit_with,
    named_run,
    stopped_part_way,
    wfctl_store_option,
)
from ._langgraph import YesOption, change_langgraph, confirmed, langgraph_store, refuse_options

__all__ = ["cancel", "copy", "rm"]


@app.command()
def cancel(
    run_id: Annotated[
        str,
        typer.Argument(
            metavar="RUN_ID",
            help=f"The run to end for good: {RUN_NAMES}.",
            autocompletion=complete_run_id,
        ),
    ],
    reason: Annotated[
        str | None,
        typer.Option("--reason", metavar="TEXT", help="Why; stored in the cancelled record."),
    ] = None,
    no_wait: Annotated[
        bool,
        typer.Option(
            "--no-wait",
            help="For a running run: return once it is asked, without waiting for its step "
            "boundary.",
        ),
    ] = False,
    store: StoreOption = None,
    json_output: JsonOption = False,
    debug: DebugOption = False,
) -> None:
    """End a run for good: running, paused, failed, interrupted or queued.

    Records a final 'cancelled' checkpoint at the head of the run's chain (the chain stays one
    verifiable lineage). A cancelled run cannot be resumed, and gc may remove it like a
    completed run. A running run (on this machine or another) is asked to stop at its next
    step boundary, as by pause; its driver records 'cancelled' itself and exits 1 saying who
    cancelled it, and cancel waits until it has (--no-wait: returns at once). Ctrl-C while
    waiting leaves the request in place (exit 130). Exit 2 if the run completed (before its
    step boundary, too) or was cancelled already.

    \b
    Example:
      wfctl cancel 20261129-121400-3f9a2c71 --reason "superseded by a new run"
    """
    from wfctl._inspect._cancel import cancel_run

    location = wfctl_store_option(store)
    run_id = named_run(location, run_id)
    left = (
        "the cancel request stays: the run ends cancelled at its next step boundary "
        "('wfctl runs' shows it)"
    )
    with stopped_part_way(left):
        report = cancel_run(
            location.target, run_id, reason=reason, wait=not no_wait, must_exist=location.named
        )
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
            metavar="RUN_ID...",
            help=f"The runs to delete, each {RUN_NAMES}.",
            autocompletion=complete_run_id,
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
    yes: YesOption = False,
    store: StoreOption = None,
    json_output: JsonOption = False,
    debug: DebugOption = False,
) -> None:
    """Delete whole runs.

    All the named runs are deleted, or (when one is refused) none. Refused: an unknown run, a
    running run (even with --force: cancel it first, or let it end), and a run that a run that
    stays names as its origin, unless --force. Deleting a run together with the runs restored
    from it needs no --force. More than one run is listed and asked about first on a terminal;
    without a terminal it needs --yes (exit 2 otherwise, nothing deleted). Ctrl-C stops it part way: the runs removed by then stay removed,
    and it says so (exit 130).

    On a LangGraph store (--store langgraph+sqlite://PATH, langgraph+postgresql://..., or a
    LangGraph SQLite file) RUN_ID is a thread id: its checkpoints, writes and blobs go, one
    transaction per thread. Without --yes it only reports what would go and the bytes freed.

    \b
    Examples:
      wfctl rm 20261129-121400-3f9a2c71 20261129-121500-8b1d4e05
      wfctl rm thread-7 --store langgraph+sqlite://checkpoints.sqlite --yes
    """
    from wfctl._inspect._remove import remove_runs

    langgraph = langgraph_store(store)
    if langgraph is not None:
        refuse_options({"--force": force}, "by rm of a LangGraph store")
        change_langgraph(langgraph, "remove", run_ids, yes=yes, json_output=json_output)
        return
    location = wfctl_store_option(store)
    run_ids = [named_run(location, name) for name in run_ids]
    if len(set(run_ids)) > 1 and not yes:  # refused as rm would be, then asked about
        plan = remove_runs(location.target, run_ids, force=force, check_only=True)
        listing = [f"{r.run_id} ({r.workflow_name}, {r.status})" for r in plan.removed]
        if not confirmed(len(listing), f"rm would delete {len(listing)} runs", yes, listing):
            typer.echo("nothing was deleted", err=True)
            return
    left = (
        "rm stopped part way: the runs it had removed stay removed, the others stay; "
        "'wfctl runs' lists what is left"
    )
    with stopped_part_way(left):
        report = remove_runs(location.target, run_ids, force=force, must_exist=location.named)
    from wfctl._render import print_dangling, print_removed

    print_dangling(report)  # on stderr, with or without --json: what --force broke
    if json_output:
        emit_json(report.to_json())
    else:
        print_removed(report)


@app.command()
def copy(
    source: Annotated[
        str,
        typer.Option(
            "--from",
            metavar="STORE",
            help="The store to copy from: a directory, postgresql://... or memory:. It must "
            "exist; nothing in it is written.",
            show_default=False,
        ),
    ],
    destination: Annotated[
        str,
        typer.Option(
            "--to",
            metavar="STORE",
            help="The store to copy to (created if it is a directory that does not exist).",
            show_default=False,
        ),
    ],
    run_ids: Annotated[
        list[str] | None,
        typer.Argument(
            metavar="RUN_ID...",
            help=f"The runs to copy (default: every run), each {RUN_NAMES} in the source.",
        ),
    ] = None,
    json_output: JsonOption = False,
    debug: DebugOption = False,
) -> None:
    """Copy runs from one store to another, keeping ids, chains, times, bytes and checksums.

    Each run is read strictly from the source (a corrupt run, or one running there, is not
    copied) and written record by record as the source stores it, then read back: every
    record must have the source's bytes and checksum (a store that keeps records decoded,
    memory:, refuses one it would hold as other bytes). Only then does the run appear in the
    destination, whole: until then it is not listed, claimed or resumed there, and a copy
    killed part way leaves no run (copying again copies it; gc or rm removes what it
    left). A run the destination holds already is skipped when its chain is the same,
    completed when it is a prefix (the run went on in the source), and otherwise left alone
    and reported. Exit 1 if any run was not copied (the others are), 2 for a store that cannot
    be opened or a run id the source does not hold (nothing copied). Ctrl-C stops it part way,
    and it says so (exit 130).

    \b
    Example:
      wfctl copy --from ./.wfctl --to postgresql://wfctl@db.example/wfctl
    """
    from wfctl._inspect._copy import copy_runs

    left = (
        "copy stopped part way: the runs it had copied are whole in the destination, the run "
        "it was copying is not there; copy again to copy the rest"
    )
    with stopped_part_way(left):
        report = copy_runs(source, destination, run_ids or ())
    if json_output:
        emit_json(report.to_json())
    else:
        from wfctl._render import print_copied

        print_copied(report)
    exit_with(0 if report.ok else 1)
