"""The commands that read or tidy the store: ``verify-lineage``, ``runs``, ``log``, ``show``,
``export``, ``pause`` and ``gc``.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from wfctl._inspect._query import RunQuery, SortField

from ._app import (
    CHECKPOINT_NAMES,
    RUN_NAMES,
    DebugOption,
    ExportFormat,
    JsonOption,
    StoreOption,
    app,
    complete_checkpoint_id,
    complete_run_id,
    emit_json,
    emit_json_items,
    exit_with,
    locate_store_option,
    named_checkpoint,
    named_run,
    stopped_part_way,
    wfctl_store_option,
)
from ._filters import SinceOption, StatusFilter, UntilOption, WorkflowGlob, run_query
from ._langgraph import YesOption, change_langgraph, confirmed, langgraph_store, refuse_options

if TYPE_CHECKING:
    from wfctl._config import StoreLocation
    from wfctl._inspect._export import ExportResult
    from wfctl._sources._protocol import Source

__all__ = ["export", "gc", "log", "pause", "runs", "show", "verify_lineage"]


def _located(store: str | None) -> tuple[StoreLocation, Source | None]:
    """The store ``--store`` selects, and a source on it when it is of another engine than
    wfctl (read through its :class:`Source`; wfctl's own stores keep their own reads)."""
    from wfctl._sources._open import open_other_source

    location = locate_store_option(store)
    return location, open_other_source(location.target)


def _refuse(source: Source, options: dict[str, bool]) -> None:
    """Refuse the options a source of another engine cannot answer (one line, exit 2)."""
    from wfctl._sources._views import a_kind

    given = [name for name, present in options.items() if present]
    if given:
        raise typer.BadParameter(
            f"reads wfctl stores only, not {a_kind(source.kind)} source",
            param_hint=f"'{given[0]}'",
        )


@app.command("verify-lineage")
def verify_lineage(
    run_ids: Annotated[
        list[str] | None,
        typer.Argument(
            metavar="RUN_ID",
            help=f"Runs to verify (default: every run); each {RUN_NAMES}.",
            autocompletion=complete_run_id,
        ),
    ] = None,
    workflow: WorkflowGlob = None,
    status: StatusFilter = None,
    since: SinceOption = None,
    until: UntilOption = None,
    agent_framework: Annotated[
        Path | None,
        typer.Option(
            "--agent-framework",
            metavar="DIR",
            help="Verify a directory written by the agent framework's FileCheckpointStorage "
            "instead (plain JSON fields only; pickled payloads are never read). The same as "
            "--store DIR or --store agent-framework://DIR.",
        ),
    ] = None,
    store: StoreOption = None,
    json_output: JsonOption = False,
    debug: DebugOption = False,
) -> None:
    """Check that every run is one unbroken checkpoint chain.

    Checks per run: one root, contiguous seq, each parent in the same run, no checkpoint with
    two children, everything reachable from the head, the head agrees, one workflow and
    signature, valid checksums, each record's data readable as its kind's, resolvable
    origins. Exit 1 if any run is broken or cannot be
    read (the other runs are still verified). A run that goes on, or is removed, while it is
    being verified (beside a running workflow, a worker, a gc) gets a note, not a problem.
    The filters (--workflow, --status, --since, --until) select runs as 'wfctl runs' lists
    them. A store with no run, or filters that match none, verify nothing: that is not a
    pass (exit 2, "nothing was verified"). An agent-framework checkpoint directory (--store
    DIR, detected) is verified one run (chain of checkpoints) at a time, filtered by --workflow
    only: several roots, a skipped checkpoint (an iteration gap) and missing parents are
    problems, checkpoints sharing a timestamp a note; a LangGraph
    checkpointer (--store FILE.sqlite, langgraph+sqlite://FILE, langgraph+postgresql://...) one
    thread at a time, by LangGraph's rules (one root per namespace, steps, two loop children of
    one checkpoint).

    A DBOS system database (--store FILE.sqlite, dbos+sqlite://FILE, dbos+postgresql://...)
    is verified one root workflow at a time, its children with it, by DBOS's rules (steps
    1..N, each child's parent, forks, a recv's notification, a setEvent's history row, a
    finished workflow's output).

    \b
    Example:
      wfctl verify-lineage --workflow 'review*' --since 7d
    """
    from wfctl._inspect._verify import verify_runs
    from wfctl._sources._open import open_source

    query = run_query(status, workflow, since, until)
    location: StoreLocation | None = None
    other: Source | None
    if agent_framework is not None:  # an alias of --store agent-framework://DIR
        other = open_source(f"agent-framework://{agent_framework}")
    else:
        location, other = _located(store)
    if other is not None:
        from wfctl._sources._views import verify_source

        with other:
            report = verify_source(other, run_ids or (), query)
    else:
        assert location is not None
        named = [named_run(location, name) for name in run_ids or ()]
        report = verify_runs(location.target, named, query=query, must_exist=location.named)
    if json_output:
        emit_json(report.to_json())
    else:
        from wfctl._render import print_lineage

        print_lineage(report)
    exit_with(0 if report.ok else 1)


@app.command()
def runs(
    workflow: WorkflowGlob = None,
    status: StatusFilter = None,
    since: SinceOption = None,
    until: UntilOption = None,
    sort: Annotated[
        SortField, typer.Option("--sort", help="Order by this field (ties by run id).")
    ] = SortField.CREATED,
    reverse: Annotated[
        bool,
        typer.Option(
            "--reverse",
            help="Reverse the order (oldest first, or Z to A for --sort run_id/workflow/status).",
        ),
    ] = False,
    limit: Annotated[
        int | None,
        typer.Option("--limit", "-n", metavar="N", min=0, help="Show at most N runs."),
    ] = None,
    store: StoreOption = None,
    json_output: JsonOption = False,
    debug: DebugOption = False,
) -> None:
    """List the runs in the store.

    Newest first (see --sort and --reverse), with each run's status, head checkpoint and
    pending requests, then a count line (shown of matching, and the store's total). Filters
    combine: a run is listed when it matches every one given. --limit keeps the first N of
    the order shown: --limit 1 is the newest run. Every record's checksum and chain link is checked: a run with an edited
    record anywhere is listed as corrupt, and one whose journal cannot be read as unreadable
    (such a run is listed under any --workflow pattern and time filter when its own workflow
    or creation time cannot be read). An agent-framework checkpoint directory (--store DIR,
    detected) lists each run, a chain of a workflow's checkpoints named by its first one's id,
    with its iterations or steps and pending requests; a LangGraph checkpointer (--store FILE.sqlite,
    langgraph+sqlite://FILE, langgraph+postgresql://...) one run per thread, read through
    their sources (--json: wfctl/source-runs@1).

    A DBOS system database (--store FILE.sqlite, dbos+sqlite://FILE, dbos+postgresql://...)
    lists one run per root workflow (a child workflow is shown in its parent's log), PENDING
    as unknown: DBOS does not record whether the process that runs it is alive.

    \b
    Example:
      wfctl runs --status paused --status failed --since 2d --limit 10
    """
    from wfctl._inspect._runs import list_runs

    query = run_query(status, workflow, since, until, sort=sort, reverse=reverse, limit=limit)
    location, other = _located(store)
    if other is not None:
        with other:
            _source_runs(other, query, json_output)
        return
    report = list_runs(location.target, query, must_exist=location.named)
    if json_output:
        emit_json(report.to_json(), floats=False)
    else:
        from wfctl._render import print_runs

        print_runs(report)


@app.command()
def log(
    run_id: Annotated[
        str,
        typer.Argument(
            metavar="RUN_ID", help=f"The run to show: {RUN_NAMES}.", autocompletion=complete_run_id
        ),
    ],
    verbose: Annotated[
        bool,
        typer.Option(
            "--verbose",
            "-v",
            help="Show what each step received (its arguments) and returned (another engine's "
            "store: each record's values).",
        ),
    ] = False,
    follow: Annotated[
        bool,
        typer.Option(
            "--follow",
            "-f",
            help="Keep printing checkpoints as they are committed until the run ends, then "
            "exit with its status's code (Ctrl-C stops following: 130). With --json, one JSON "
            "document per line.",
        ),
    ] = False,
    from_seq: Annotated[
        int | None,
        typer.Option(
            "--from",
            metavar="SEQ",
            min=0,
            help="Start at checkpoint SEQ (the checkpoints before it are verified, not shown).",
            show_default=False,
        ),
    ] = None,
    last: Annotated[
        int | None,
        typer.Option(
            "--last",
            metavar="N",
            min=0,
            help="Show only the last N checkpoints (not with --from).",
            show_default=False,
        ),
    ] = None,
    limit: Annotated[
        int | None,
        typer.Option(
            "--limit",
            "-n",
            metavar="N",
            min=0,
            help="Show at most N checkpoints, from where the list starts (not with --follow).",
            show_default=False,
        ),
    ] = None,
    store: StoreOption = None,
    json_output: JsonOption = False,
    debug: DebugOption = False,
) -> None:
    """Show a run's chain as a timeline.

    One entry per checkpoint (seq, kind, time) with the steps it committed and how long they
    took, the keys served from the cache, requests, answers and errors. With -v, each step's
    arguments and result too (a step declared record_args=False shows none). Each checkpoint is
    shown once its record and every one before it verified (checksum and chain link); a record
    that fails stops the command (exit 2) after the checkpoints before it. With --follow, each
    checkpoint is printed once it is committed until the run ends (a completed, failed,
    paused or cancelled record, or its process gone); the exit code is then the run's: 0
    completed, 1 failed or cancelled, 3 paused for answers, 130 interrupted (stopped with
    nothing to answer, or killed). The journal is looked at (one stat) every 50 ms after a
    commit, backing off to once a second while the run is idle; on PostgreSQL each look is
    one statement.

    An agent-framework checkpoint directory (--store DIR) shows a run's checkpoints in order
    (RUN: a start of its id, or a workflow with one run), a branch of a fork indented under
    it, with iterations, the executors that ran, messages, requests and the step cache's
    entries (--json: wfctl/source-log@1); a LangGraph
    checkpointer a thread's checkpoints, subgraphs under the step that ran them, with the nodes
    that ran, interrupts, resumes, errors and task results (-v: every value).

    A DBOS system database shows a workflow's steps in order, each child workflow's steps
    under the step that started it, with the messages received, events set and sleeps.

    A long run can be shown a page at a time: --last N shows its last N checkpoints, --from SEQ
    starts at checkpoint SEQ, and --limit N stops after N. Every record up to the last one
    shown is verified all the same (those before the page without being decoded), and none
    after it is read. With --follow, --from and --last say where following starts.

    \b
    Example:
      wfctl log 20261129-121400-3f9a2c71 --last 20 --follow
    """
    if from_seq is not None and last is not None:
        raise typer.BadParameter("give --from or --last, not both", param_hint="'--last'")
    if follow and limit is not None:
        raise typer.BadParameter(
            "--follow goes on until the run ends: leave out --limit", param_hint="'--limit'"
        )
    from wfctl._inspect._entries import LogPage

    page = LogPage(from_seq, last, limit)
    location, other = _located(store)
    if other is not None:
        options = {"--follow": follow, "--from": from_seq is not None, "--last": last is not None}
        _refuse(other, {**options, "--limit": limit is not None})
        with other:
            _source_log(other, run_id, json_output, verbose)
        return
    run_id = named_run(location, run_id)
    if follow:
        from ._follow import follow_log

        follow_log(location, run_id, json_output, page, verbose)
    from wfctl._inspect._log import run_log

    result = run_log(location.target, run_id, must_exist=location.named, page=page)
    if json_output:
        sys.stdout.writelines(result.json_text())  # entry by entry: a long run streams
    else:
        from wfctl._render import print_log

        print_log(result, verbose=verbose)


@app.command()
def show(
    checkpoint: Annotated[
        str,
        typer.Argument(
            metavar="CKPT",
            help=f"The checkpoint to show: {CHECKPOINT_NAMES}.",
            autocompletion=complete_checkpoint_id,
        ),
    ],
    toml: Annotated[bool, typer.Option("--toml", help="Print it as TOML.")] = False,
    store: StoreOption = None,
    json_output: JsonOption = False,
    debug: DebugOption = False,
) -> None:
    """Show one checkpoint record as stored.

    --json wraps the record in a document naming its run and checkpoint (the record itself
    keeps the store's keys and the tagged encoding of values); --toml prints the record alone.
    TOML has no null: null values are left out (inside arrays they are written as "null").
    In an agent-framework checkpoint directory (--store DIR), CKPT is a checkpoint id or a
    unique start of it; pickled values are shown as opaque markers, read as data and never
    unpickled (--json: wfctl/source-show@1). In a
    LangGraph checkpointer, CKPT is LangGraph's checkpoint id or a unique prefix of it; what a
    value names is described, never imported or unpickled.

    In a DBOS system database, CKPT is WORKFLOW_ID.FUNCTION_ID (a step); a pickled value is
    shown as an opaque marker with what a scan of it finds, never unpickled.

    \b
    Example:
      wfctl show 20261129-121400-3f9a2c71.2 --toml
    """
    if toml and json_output:
        raise typer.BadParameter("give --json or --toml, not both", param_hint="'--toml'")
    from wfctl._inspect._show import checkpoint_json, checkpoint_toml, show_checkpoint

    location, other = _located(store)
    if other is not None:
        _refuse(other, {"--toml": toml})
        with other:
            _source_show(other, checkpoint, json_output)
        return
    checkpoint = named_checkpoint(location, checkpoint)
    checkpoint_record = show_checkpoint(location.target, checkpoint, must_exist=location.named)
    if json_output:
        emit_json(checkpoint_json(checkpoint_record))
    elif toml:
        sys.stdout.write(checkpoint_toml(checkpoint_record))
    else:
        from wfctl._render import print_checkpoint

        print_checkpoint(checkpoint_record)


@app.command()
def export(
    run_id: Annotated[
        str,
        typer.Argument(
            metavar="RUN_ID",
            help=f"The run to export: {RUN_NAMES}.",
            autocompletion=complete_run_id,
        ),
    ],
    format: Annotated[
        ExportFormat, typer.Option("--format", help="Document format.")
    ] = ExportFormat.json,
    output: Annotated[
        Path | None,
        typer.Option("--output", metavar="FILE", help="Write to FILE instead of stdout."),
    ] = None,
    store: StoreOption = None,
    json_output: JsonOption = False,
    debug: DebugOption = False,
) -> None:
    """Export a run as JSON or TOML.

    The document holds the run's summary and every checkpoint as stored. With --json and no --output the document is JSON; with --json and --output, a JSON
    summary of what was written is printed. --output writes a new file and renames it over FILE once complete: a run that fails part-way leaves FILE as it was.
    An agent-framework checkpoint directory (--store DIR) exports a run's checkpoints as
    JSON on stdout (wfctl/source-export@1), a LangGraph checkpointer a thread's, decoded as
    show decodes them.

    \b
    Example:
      wfctl export 20261129-121400-3f9a2c71 --format toml --output run.toml
    """
    from wfctl._inspect._export import export_run

    if output is not None and str(output) == ".":  # '' comes as '.': no file named
        raise typer.BadParameter("needs a file name", param_hint="'--output'")
    fmt = "json" if json_output and output is None else format.value
    location, other = _located(store)
    if other is not None:
        _refuse(other, {"--format": fmt != "json", "--output": output is not None})
        from wfctl._sources._views import export_document

        with other:
            emit_json(export_document(other, run_id))
        return
    result: ExportResult = export_run(
        location.target, named_run(location, run_id), fmt, output, must_exist=location.named
    )
    if output is not None and json_output:
        emit_json(result.to_json())
    else:
        from wfctl._render import print_export

        print_export(result)


@app.command()
def pause(
    run_id: Annotated[
        str,
        typer.Argument(
            metavar="RUN_ID",
            help=f"The running run to pause: {RUN_NAMES}.",
            autocompletion=complete_run_id,
        ),
    ],
    store: StoreOption = None,
    json_output: JsonOption = False,
    debug: DebugOption = False,
) -> None:
    """Ask a running run to pause at its next step boundary.

    The run executes in another process. Its running steps finish (those still running after
    its --drain-timeout are cancelled), then it writes a pause checkpoint and exits 130. Exit 2
    if the run is not running, or is being cancelled ('wfctl cancel' asked it first).

    \b
    Example:
      wfctl pause 20261129-121400-3f9a2c71
    """
    from wfctl._inspect._pause import pause_run

    location = wfctl_store_option(store)
    report = pause_run(location.target, named_run(location, run_id), must_exist=location.named)
    if json_output:
        emit_json(report.to_json())
    else:
        from wfctl._render import print_pause

        print_pause(report)


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
    prune_history: Annotated[
        bool,
        typer.Option(
            "--prune-history",
            help="On a LangGraph store: keep each thread's newest checkpoint and what LangGraph "
            "needs to load it, remove the rest (only a report without --yes).",
        ),
    ] = False,
    yes: YesOption = False,
    workflow: WorkflowGlob = None,
    status: StatusFilter = None,
    since: SinceOption = None,
    until: UntilOption = None,
    store: StoreOption = None,
    json_output: JsonOption = False,
    debug: DebugOption = False,
) -> None:
    """Remove finished runs that nothing needs any more.

    Removes whole runs, never part of a chain: completed and cancelled runs (and failed ones
    with --include-failed), never a paused, running, interrupted, corrupt or unreadable run, and
    never the origin of a run that stays. Every record of every run is checked (checksums and
    chain links) before a run counts as finished. The filters (--workflow, --status, --since,
    --until, as for 'wfctl runs') narrow which runs gc considers, with or without --dry-run:
    the rules above still apply to those, --keep still counts every finished run of a
    workflow, and a run outside the filters still protects its origin. When it would remove
    more than one run, it lists them and asks first on a terminal; without a terminal it
    needs --yes (exit 2 otherwise, nothing removed). Ctrl-C stops it part way: the runs
    removed by then stay removed, and it says so (exit 130).

    On a LangGraph store, --prune-history keeps each thread's head (its newest root
    checkpoint), the subgraph checkpoints it is paused in, the ancestors its DeltaChannel
    values are rebuilt from and their pending writes, and removes every other checkpoint, write
    and blob, one transaction per thread; a thread whose needs cannot be proven is left as it
    is and named. Without --yes (or with --dry-run) it only reports.

    \b
    Examples:
      wfctl gc --older-than 30d --keep 5 --workflow 'nightly-*' --dry-run
      wfctl gc --older-than 30d --yes                # from cron: no question
      wfctl gc --prune-history --store langgraph+sqlite://checkpoints.sqlite --yes
    """
    from wfctl._inspect._gc import collect_garbage

    langgraph = langgraph_store(store)
    if langgraph is not None or prune_history:
        what = "with --prune-history" if prune_history else "on a LangGraph store"
        refuse_options(
            {
                "--prune-history": langgraph is None,
                "--older-than": older_than is not None,
                "--keep": keep is not None,
                "--include-failed": include_failed,
                "--workflow": workflow is not None,
                "--status": status is not None,
                "--since": since is not None,
                "--until": until is not None,
            },
            what if langgraph is not None else "by a wfctl store (LangGraph stores only)",
        )
        if not prune_history:
            raise typer.BadParameter(
                "is needed on a LangGraph store", param_hint="'--prune-history'"
            )
        assert langgraph is not None  # refused above otherwise
        change_langgraph(langgraph, "prune", None, yes=yes and not dry_run, json_output=json_output)
        return
    query = run_query(status, workflow, since, until)
    location = wfctl_store_option(store)
    left = (
        "nothing was removed"
        if dry_run
        else "gc stopped part way: the runs it had removed stay removed, the others stay; "
        "'wfctl runs' lists what is left, and gc can be run again"
    )
    only: set[str] | None = None
    if not dry_run and not yes:  # what would go, first: more than one run is asked about
        plan = collect_garbage(
            location.target,
            older_than=older_than,
            keep=keep,
            include_failed=include_failed,
            dry_run=True,
            must_exist=location.named,
            query=query,
        )
        listing = [f"{item.run_id} ({item.workflow_name}, {item.status})" for item in plan.removed]
        what = f"gc would remove {len(plan.removed)} runs"
        if not confirmed(len(plan.removed), what, yes, listing, " (--dry-run lists them)"):
            typer.echo("nothing was removed", err=True)
            return
        only = {item.run_id for item in plan.removed}
    with stopped_part_way(left):
        report = collect_garbage(
            location.target,
            older_than=older_than,
            keep=keep,
            include_failed=include_failed,
            dry_run=dry_run,
            must_exist=location.named,
            query=query,
            only=only,
        )
    if json_output:
        emit_json(report.to_json())
    else:
        from wfctl._render import print_gc

        print_gc(report)


def _source_runs(source: Source, query: RunQuery, json_output: bool) -> None:
    from wfctl._sources._views import (
        listed_runs,
        run_document,
        runs_head,
        runs_tail,
        source_runs,
    )

    if json_output:  # a source run holds no float (RunInfo): orjson writes the same text
        runs, counts = listed_runs(source, query)
        items = (run_document(info) for info in runs)
        emit_json_items(runs_head(source), "runs", items, lambda: runs_tail(counts))
        return
    from wfctl._render import print_source_runs

    print_source_runs(source.kind, *source_runs(source, query))


def _source_log(source: Source, run_id: str, json_output: bool, verbose: bool) -> None:
    from wfctl._sources._views import log_document, log_tree

    if json_output:
        emit_json(log_document(source, run_id))
        return
    from wfctl._render import print_source_log

    print_source_log(source.kind, run_id, *log_tree(source, run_id), verbose=verbose)


def _source_show(source: Source, entry_id: str, json_output: bool) -> None:
    from wfctl._sources._views import show_document

    if json_output:
        emit_json(show_document(source, entry_id))
        return
    from wfctl._render import print_source_entry

    print_source_entry(source.kind, source.record(entry_id))
