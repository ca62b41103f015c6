"""The commands that read or tidy the store: ``verify-lineage``, ``runs``, ``log``, ``show``,
``export``, ``pause`` and ``gc``.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from wfctl._checkpoint import RunStatus

from ._app import (
    DebugOption,
    ExportFormat,
    JsonOption,
    StoreOption,
    app,
    emit_json,
    exit_with,
    locate_store_option,
)

if TYPE_CHECKING:
    from wfctl._inspect import ExportResult

__all__ = ["export", "gc", "log", "pause", "runs", "show", "verify_lineage"]


@app.command("verify-lineage")
def verify_lineage(
    run_ids: Annotated[
        list[str] | None,
        typer.Argument(metavar="RUN_ID", help="Runs to verify (default: every run)."),
    ] = None,
    workflow: Annotated[
        str | None,
        typer.Option("--workflow", "-w", metavar="NAME", help="Only runs of this workflow."),
    ] = None,
    agent_framework: Annotated[
        Path | None,
        typer.Option(
            "--agent-framework",
            metavar="DIR",
            help="Verify a directory written by the agent framework's FileCheckpointStorage "
            "instead (plain JSON fields only; pickled payloads are never read).",
        ),
    ] = None,
    store: StoreOption = None,
    json_output: JsonOption = False,
    debug: DebugOption = False,
) -> None:
    """Check that every run is one unbroken checkpoint chain.

    Checks per run: one root, contiguous seq, each parent in the same run, no checkpoint with
    two children, everything reachable from the head, the head agrees, one workflow and
    signature, valid checksums, resolvable origins. Exit 1 if any run is broken or cannot be
    read (the other runs are still verified).

    \b
    Example:
      wfctl verify-lineage --workflow human_review
    """
    from wfctl._inspect import verify_runs

    location = locate_store_option(store) if agent_framework is None else None
    report = verify_runs(
        location.path if location else None,
        run_ids or (),
        workflow_name=workflow,
        agent_framework_dir=agent_framework,
        must_exist=location.named if location else True,
    )
    if json_output:
        emit_json(report.to_json())
    else:
        from wfctl._render import print_lineage

        print_lineage(report)
    exit_with(0 if report.ok else 1)


@app.command()
def runs(
    workflow: Annotated[
        str | None,
        typer.Option("--workflow", "-w", metavar="NAME", help="Only runs of this workflow."),
    ] = None,
    status: Annotated[
        RunStatus | None, typer.Option("--status", "-s", help="Only runs in this state.")
    ] = None,
    store: StoreOption = None,
    json_output: JsonOption = False,
    debug: DebugOption = False,
) -> None:
    """List the runs in the store.

    Oldest first, with each run's status, head checkpoint and pending requests. Every record's
    checksum and chain link is checked: a run with an edited record anywhere is listed as
    corrupt, and one whose journal cannot be read as unreadable.

    \b
    Example:
      wfctl runs --status paused
    """
    from wfctl._inspect import list_runs

    location = locate_store_option(store)
    report = list_runs(
        location.path,
        workflow_name=workflow,
        status=status.value if status else None,
        must_exist=location.named,
    )
    if json_output:
        emit_json(report.to_json())
    else:
        from wfctl._render import print_runs

        print_runs(report)


@app.command()
def log(
    run_id: Annotated[str, typer.Argument(metavar="RUN_ID", help="The run to show.")],
    store: StoreOption = None,
    json_output: JsonOption = False,
    debug: DebugOption = False,
) -> None:
    """Show a run's chain as a timeline.

    One entry per checkpoint (seq, kind, time) with the steps it committed and how long they
    took, the keys served from the cache, requests, answers and errors.

    \b
    Example:
      wfctl log 20261129-121400-3f9a2c
    """
    from wfctl._inspect import run_log

    location = locate_store_option(store)
    result = run_log(location.path, run_id, must_exist=location.named)
    if json_output:
        sys.stdout.writelines(result.json_text())  # entry by entry: a long run streams
    else:
        from wfctl._render import print_log

        print_log(result)


@app.command()
def show(
    checkpoint: Annotated[
        str, typer.Argument(metavar="CKPT", help="The checkpoint to show (RUN.SEQ).")
    ],
    toml: Annotated[bool, typer.Option("--toml", help="Print it as TOML.")] = False,
    store: StoreOption = None,
    json_output: JsonOption = False,
    debug: DebugOption = False,
) -> None:
    """Show one checkpoint record as stored.

    TOML has no null: null values are left out (inside arrays they are written as "null").

    \b
    Example:
      wfctl show 20261129-121400-3f9a2c.2 --toml
    """
    if toml and json_output:
        raise typer.BadParameter("give --json or --toml, not both", param_hint="'--toml'")
    from wfctl._inspect import show_checkpoint, to_toml

    location = locate_store_option(store)
    checkpoint_record = show_checkpoint(location.path, checkpoint, must_exist=location.named)
    if json_output:
        emit_json(checkpoint_record.to_dict())
    elif toml:
        sys.stdout.write(to_toml(checkpoint_record.to_dict()))
    else:
        from wfctl._render import print_checkpoint

        print_checkpoint(checkpoint_record)


@app.command()
def export(
    run_id: Annotated[str, typer.Argument(metavar="RUN_ID", help="The run to export.")],
    format: Annotated[
        ExportFormat, typer.Option("--format", "-f", help="Document format.")
    ] = ExportFormat.json,
    output: Annotated[
        Path | None,
        typer.Option("--output", "-o", metavar="FILE", help="Write to FILE instead of stdout."),
    ] = None,
    store: StoreOption = None,
    json_output: JsonOption = False,
    debug: DebugOption = False,
) -> None:
    """Export a run as JSON or TOML.

    The document holds the run's summary and every checkpoint as stored. With --json and no --output the document is JSON; with --json and --output, a JSON
    summary of what was written is printed.

    \b
    Example:
      wfctl export 20261129-121400-3f9a2c --format toml --output run.toml
    """
    from wfctl._inspect import export_run

    fmt = "json" if json_output and output is None else format.value
    location = locate_store_option(store)
    result: ExportResult = export_run(location.path, run_id, fmt, output, must_exist=location.named)
    if output is not None and json_output:
        emit_json(result.to_json())
    else:
        from wfctl._render import print_export

        print_export(result)


@app.command()
def pause(
    run_id: Annotated[str, typer.Argument(metavar="RUN_ID", help="The running run to pause.")],
    store: StoreOption = None,
    json_output: JsonOption = False,
    debug: DebugOption = False,
) -> None:
    """Ask a running run to pause at its next step boundary.

    The run executes in another process. Its running steps finish (those still running after
    its --drain-timeout are cancelled), then it writes a pause checkpoint and exits 130. Exit 2
    if the run is not running.

    \b
    Example:
      wfctl pause 20261129-121400-3f9a2c
    """
    from wfctl._inspect import pause_run, summary_json
    from wfctl._next_steps import resume_command

    location = locate_store_option(store)
    summary = pause_run(location.path, run_id, must_exist=location.named)
    resume = resume_command(summary.run_id, location.path)
    if json_output:
        emit_json(
            {
                "run_id": summary.run_id,
                "pause_requested": True,
                "resume_command": resume,
                "run": summary_json(summary),
            }
        )
    else:
        from wfctl._render import print_pause

        print_pause(summary, resume)


@app.command()
def gc(
    older_than: Annotated[
        str | None,
        typer.Option(
            "--older-than",
            metavar="AGE",
            help="Remove finished runs last updated at least AGE ago (e.g. 30m, 12h, 7d, 2w; "
            "default 7d when --keep is not given either).",
        ),
    ] = None,
    keep: Annotated[
        int | None,
        typer.Option(
            "--keep", metavar="N", min=0, help="Keep the N newest finished runs of each workflow."
        ),
    ] = None,
    include_failed: Annotated[
        bool, typer.Option("--include-failed", help="Remove failed runs too.")
    ] = False,
    dry_run: Annotated[
        bool, typer.Option("--dry-run", help="Only report what would be removed.")
    ] = False,
    store: StoreOption = None,
    json_output: JsonOption = False,
    debug: DebugOption = False,
) -> None:
    """Remove finished runs that nothing needs any more.

    Removes whole runs, never part of a chain: completed runs (and failed ones with
    --include-failed), never a paused, running, interrupted, corrupt or unreadable run, and
    never the origin of a run that stays. Every record of every run is checked (checksums and
    chain links) before a run counts as finished.

    \b
    Example:
      wfctl gc --older-than 30d --keep 5 --dry-run
    """
    from wfctl._gc import collect_garbage

    location = locate_store_option(store)
    report = collect_garbage(
        location.path,
        older_than=older_than,
        keep=keep,
        include_failed=include_failed,
        dry_run=dry_run,
        must_exist=location.named,
    )
    if json_output:
        emit_json(report.to_json())
    else:
        from wfctl._render import print_gc

        print_gc(report)
