"""The commands that feed and drain a store's queue: ``submit`` and ``worker``."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated

import typer

from ._app import (
    DebugOption,
    DrainOption,
    InputFileOption,
    InputOption,
    JsonOption,
    RunIdOption,
    StoreOption,
    TargetArgument,
    app,
    emit_json,
    exit_with,
    locate_store_option,
    resolve_store_option,
    workflow_output,
)

__all__ = ["submit", "worker"]


@app.command()
def submit(
    target: TargetArgument,
    input_json: InputOption = None,
    input_file: InputFileOption = None,
    run_id: RunIdOption = None,
    store: StoreOption = None,
    json_output: JsonOption = False,
    debug: DebugOption = False,
) -> None:
    """Queue a run of a workflow for a worker, without running it.

    The run's root (its input, the workflow's target and code signature) is written and the
    run is listed as queued until a 'wfctl worker' on the same store takes it ('wfctl resume
    RUN_ID' starts it here instead). Prints the run id. The input is checked as 'wfctl run'
    checks it.

    \b
    Example:
      wfctl submit sample_workflows/fan_out.py --store /srv/wf
    """
    from wfctl._drive._submit import submit_workflow

    with workflow_output(json_output):  # what the module prints as it loads
        report = submit_workflow(
            target,
            store=resolve_store_option(store),
            input_json=input_json,
            input_file=input_file,
            run_id=run_id,
        )
    if json_output:
        emit_json(report.to_json())
    else:
        from wfctl._render import print_submit

        print_submit(report)


@app.command()
def worker(
    concurrency: Annotated[
        int,
        typer.Option(
            "--concurrency",
            metavar="N",
            min=1,
            max=10_000,
            help="How many runs to drive at once.",
        ),
    ] = 1,
    workflows: Annotated[
        list[Path] | None,
        typer.Option(
            "--workflows",
            metavar="PATH",
            help="A directory whose workflow code this worker may import (repeatable; "
            "default: the current directory). A run whose recorded target lies elsewhere is "
            "left alone and reported once.",
        ),
    ] = None,
    exit_when_idle: Annotated[
        bool,
        typer.Option(
            "--exit-when-idle",
            help="End once no run is left to take and none is being driven (batch jobs).",
        ),
    ] = False,
    poll: Annotated[
        float,
        typer.Option(
            "--poll",
            metavar="SECONDS",
            min=0.01,
            max=3600.0,
            help="How often to look for new runs while there is nothing to take.",
        ),
    ] = 1.0,
    drain_timeout: DrainOption = 30.0,
    store: StoreOption = None,
    json_output: JsonOption = False,
    debug: DebugOption = False,
) -> None:
    """Take queued and interrupted runs from the store and drive them.

    Runs queued by 'wfctl submit' start; interrupted runs whose driver died, or that a
    stopping worker handed over, are recovered (as 'wfctl resume' would); paused, failed,
    completed and cancelled runs, and runs a person interrupted (Ctrl-C, 'wfctl pause'), are
    left alone. Each run's
    code is imported from the target its root recorded, only if it lies under --workflows,
    and by the rule 'wfctl resume' applies: not inside the store, not Python's standard
    library, and not found only through the current directory where the run was not started,
    unless --workflows names that directory.
    Several workers may share one store: each run is driven by one of them at a time. A line
    per run taken and ended goes to stderr (--json: one wfctl/worker-event@1 document per line
    on stdout). A run 'wfctl cancel' asks to end stops at its next step and ends cancelled
    (the worker goes on). SIGTERM, SIGHUP and the first Ctrl-C stop taking runs and pause the
    runs being driven at their next step; the worker waits for them and exits 0 (141 when it
    stopped so because its output's reader went away). A second Ctrl-C aborts them (exit 130;
    they stay resumable).

    \b
    Example:
      wfctl worker --concurrency 4 --workflows sample_workflows
    """
    from wfctl._drive._worker import WorkerEvent, run_worker

    lines = sys.stdout  # the events' own: what workflows print goes to stderr under --json

    def show(event: WorkerEvent) -> None:
        if json_output:
            lines.write(json.dumps(event.to_json(), ensure_ascii=False) + "\n")
            lines.flush()
        else:
            from wfctl._render import print_worker_event

            print_worker_event(event)

    location = locate_store_option(store)
    with workflow_output(json_output):
        report = run_worker(
            location.target,
            concurrency=concurrency,
            workflows=workflows or (),
            exit_when_idle=exit_when_idle,
            poll=poll,
            drain_timeout=drain_timeout,
            must_exist=location.named,
            on_event=show,
        )
    if not json_output:
        from wfctl._render import print_worker_report

        print_worker_report(report)
    exit_with(130 if report.aborted else 0)
