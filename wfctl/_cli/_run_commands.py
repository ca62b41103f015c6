"""The commands that execute workflows: ``run``, ``resume`` and ``replay``."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, TextIO

import typer

from ._app import (
    CHECKPOINT_NAMES,
    RUN_NAMES,
    BatchMsOption,
    BatchStepsOption,
    DebugOption,
    DrainOption,
    DurabilityOption,
    InputFileOption,
    InputOption,
    JsonItems,
    JsonOption,
    RunIdOption,
    StoreOption,
    TargetArgument,
    TargetOverride,
    TrustStoreOption,
    app,
    complete_checkpoint_id,
    complete_run_id,
    exit_with,
    finish_run,
    locate_store_option,
    named_checkpoint,
    named_run,
    resolve_durability_option,
    resolve_store_option,
    workflow_output,
)

if TYPE_CHECKING:
    from wfctl._inspect._diff import StepDiff
    from wfctl._inspect._replay import ReplayRows

__all__ = ["replay", "resume", "run"]


@app.command()
def run(
    target: TargetArgument,
    input_json: InputOption = None,
    input_file: InputFileOption = None,
    run_id: RunIdOption = None,
    drain_timeout: DrainOption = 30.0,
    durability: DurabilityOption = None,
    batch_steps: BatchStepsOption = None,
    batch_ms: BatchMsOption = None,
    store: StoreOption = None,
    json_output: JsonOption = False,
    debug: DebugOption = False,
) -> None:
    """Run a workflow with durable checkpoints.

    The input (--input / --input-file) is the workflow's message; without one, the message
    parameter's default is used, and a workflow whose parameter has no default is refused
    (exit 2). Shows live progress on a terminal and prints the outputs. When the run pauses
    for answers it lists the pending requests, writes an answers template (answers.toml in the
    run's directory) and prints the resume command (exit 3). The first Ctrl-C pauses the run
    at the next step boundary (exit 130, resumable); a second one aborts it. SIGTERM and SIGHUP
    pause it like the first Ctrl-C. Steps still running after --drain-timeout are cancelled
    (not recorded; they run again on resume). When the run fails (exit 1) it prints the
    commands that can help: a retry, a retry of fixed code, a new run. When 'wfctl cancel'
    ends it (at its next step boundary) it says who cancelled it, in one line (exit 1).
    --durability batch (or none) trades what an OS crash may lose for speed; a crash of the
    process loses nothing.

    \b
    Example:
      wfctl run sample_workflows/human_review.py --input '"durable workflows"'
    """
    from wfctl._drive._runner import run_workflow
    from wfctl._render import RunProgress

    with workflow_output(json_output), RunProgress(enabled=not json_output) as progress:
        outcome = run_workflow(
            target,
            store=resolve_store_option(store),
            input_json=input_json,
            input_file=input_file,
            run_id=run_id,
            drain_timeout=drain_timeout,
            durability=resolve_durability_option(durability, batch_steps, batch_ms),
            on_event=progress.on_event,
            on_interrupt=progress.on_interrupt,
        )
    finish_run(outcome, json_output)


@app.command()
def resume(
    run_id: Annotated[
        str,
        typer.Argument(
            metavar="RUN_ID",
            help=f"The run to continue: {RUN_NAMES}.",
            autocompletion=complete_run_id,
        ),
    ],
    response: Annotated[
        list[str] | None,
        typer.Option(
            "--response",
            "-r",
            metavar="KEY=VALUE",
            help="Answer the request KEY (repeatable: one answer per request, --responses "
            "included); VALUE is parsed as JSON, else kept as text (always text when the "
            "request expects str), then converted to the type the request expects or refused.",
        ),
    ] = None,
    responses: Annotated[
        Path | None,
        typer.Option(
            "--responses",
            metavar="FILE",
            help="Read answers from a .toml or .json table of KEY = VALUE (such as the "
            "answers template); an empty string leaves a request unanswered. Limits as for "
            "'wfctl run --input'.",
        ),
    ] = None,
    allow_changed: Annotated[
        bool,
        typer.Option(
            "--allow-changed",
            help="Continue although the workflow's code changed since the run was written "
            "(after fixing the cause of a failure): recorded steps are served from the "
            "record, the rest run the new code.",
        ),
    ] = False,
    target: TargetOverride = None,
    trust_store: TrustStoreOption = False,
    drain_timeout: DrainOption = 30.0,
    durability: DurabilityOption = None,
    batch_steps: BatchStepsOption = None,
    batch_ms: BatchMsOption = None,
    store: StoreOption = None,
    json_output: JsonOption = False,
    debug: DebugOption = False,
) -> None:
    """Continue a paused, failed or interrupted run.

    The run continues in its own chain, under the same run id. A paused run needs answers to
    its pending requests (--response / --responses); each answer is converted to the type its
    request expects (true/false for bool, a number for int or float, ...) or refused with
    exit 2, and then nothing is recorded. A failed or interrupted run is retried from its last
    checkpoint, serving every recorded step from the record; after a fix to the code, add
    --allow-changed. Exit codes and Ctrl-C behave as for 'wfctl run'.

    The workflow's code is imported from the target the run recorded (shown in the summary),
    unless --target names it. A recorded target is refused (by the rule 'wfctl worker'
    applies too) when its code lies inside the store, is Python's own standard library, or is
    found only through the current directory and the run was not started there, or when
    another user owns the store or the run and it is not trusted (--trust-store, or
    trusted_stores in wfctl.toml).

    \b
    Example:
      wfctl resume 20261129-121400-3f9a2c71 --response 'request#0=yes'
    """
    from wfctl._drive._runner import resume_run
    from wfctl._render import RunProgress

    run_id = named_run(locate_store_option(store), run_id)
    with workflow_output(json_output), RunProgress(enabled=not json_output) as progress:
        outcome = resume_run(
            run_id,
            store=resolve_store_option(store),
            responses=response or (),
            responses_file=responses,
            target=target,
            trust_store=trust_store,
            allow_changed=allow_changed,
            drain_timeout=drain_timeout,
            durability=resolve_durability_option(durability, batch_steps, batch_ms),
            on_event=progress.on_event,
            on_interrupt=progress.on_interrupt,
        )
    finish_run(outcome, json_output)


@app.command()
def replay(
    checkpoint: Annotated[
        str,
        typer.Option(
            "--checkpoint",
            "-c",
            metavar="CKPT",
            help=f"The checkpoint to replay from: {CHECKPOINT_NAMES}.",
            autocompletion=complete_checkpoint_id,
        ),
    ],
    allow_changed: Annotated[
        bool,
        typer.Option(
            "--allow-changed",
            help="Replay although the workflow's code changed; calls whose record no longer "
            "matches run live and are reported changed.",
        ),
    ] = False,
    no_execute: Annotated[
        bool,
        typer.Option(
            "--no-execute",
            help="Execute nothing: serve every result recorded up to the checkpoint; any call "
            "that would have to run (one past it, or one whose recorded call failed) is a "
            "divergence (a determinism check; from the run's head it checks the whole run).",
        ),
    ] = False,
    shuffle: Annotated[
        int | None,
        typer.Option(
            "--shuffle",
            metavar="SEED",
            help="Hand cached results back in a perturbed order seeded by SEED.",
        ),
    ] = None,
    target: TargetOverride = None,
    trust_store: TrustStoreOption = False,
    store: StoreOption = None,
    json_output: JsonOption = False,
    debug: DebugOption = False,
) -> None:
    """Replay from a checkpoint and diff against the source run.

    The replay is a new run whose root names the checkpoint it started from. Shows a table of
    every step (cached, same, changed, new, not reached, failed), the rows of the steps served
    from the record as the replay runs, then both runs' outputs side by side and a unified
    diff of their pretty JSON. Exit 0 when the outputs and the re-executed steps match, 1
    otherwise. The code is loaded as 'wfctl resume' loads it.

    \b
    Example:
      wfctl replay --checkpoint 20261129-121400-3f9a2c71.1 --shuffle 7
    """
    from wfctl._drive._runner import replay_checkpoint
    from wfctl._render import ReplayPrinter, RunProgress

    checkpoint = named_checkpoint(locate_store_option(store), checkpoint)
    printer: ReplayPrinter | ReplayJson
    out = sys.stdout  # the document's, while the workflow's own prints go to stderr
    with workflow_output(json_output), RunProgress(enabled=not json_output) as progress:
        printer = ReplayJson(out) if json_output else ReplayPrinter(progress.stop)
        rows = replay_checkpoint(
            checkpoint,
            store=resolve_store_option(store),
            target=target,
            trust_store=trust_store,
            allow_changed=allow_changed,
            execute=not no_execute,
            shuffle_seed=shuffle,
            on_event=progress.on_event,
            on_interrupt=progress.on_interrupt,
            rows_to=printer,
        )
    printer.finish(rows)  # the rows left, each written as it is compared, then the rest
    exit_with(0 if rows.finished().identical else 1)


class ReplayJson:
    """``wfctl replay --json``: its document written as the rows come, some while the replay
    runs (a :class:`~wfctl._inspect._replay_rows.RowSink`, told the source before any row),
    then :meth:`finish`."""

    def __init__(self, out: TextIO) -> None:
        self._out = out
        self._written: JsonItems | None = None

    def start(self, source_run_id: str, source_checkpoint_id: str, widest_key: int) -> None:
        """Begin the document (written from its first row on) with the source's ids."""
        from wfctl._inspect._replay_report import replay_json_head

        head = replay_json_head(source_run_id, source_checkpoint_id)
        self._written = JsonItems(head, "steps", floats=True, out=self._out)

    def row(self, row: StepDiff) -> None:
        """Write the document's next row (its head first)."""
        assert self._written is not None, "start comes first"
        self._written.add(row.to_json())

    def finish(self, rows: ReplayRows) -> None:
        """Write the rows left (``rows``, iterated), then the document's tail."""
        written = self._written
        assert written is not None, "start comes first"
        for row in rows:
            written.add(row.to_json())
        written.close(rows.finished().json_tail())
