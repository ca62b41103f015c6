"""What ``wfctl submit`` and ``wfctl worker`` show people."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ._common import Text, status_text, stderr, stdout
from ._time import now, times_in

if TYPE_CHECKING:
    from wfctl._drive._submit import SubmitReport
    from wfctl._drive._worker import WorkerEvent, WorkerReport

__all__ = ["print_submit", "print_worker_event", "print_worker_report"]


def print_submit(report: SubmitReport) -> None:
    """Print the submitted run's id (stdout, alone on its line, for scripts) and a note."""
    stdout().print(report.run_id, soft_wrap=True)
    stderr().print(
        Text.assemble(
            f"{report.workflow_name} ",
            status_text("queued"),
            f" in {report.store}; a worker takes it (wfctl worker), or start it here with: ",
            report.resume_command,
        ),
        soft_wrap=True,
    )


def print_worker_event(event: WorkerEvent) -> None:
    """Print one line on stderr for what the worker just did."""
    err = stderr()
    run = f"{event.run_id} ({event.workflow})" if event.workflow else f"{event.run_id}"
    if event.kind == "taken":
        err.print(f"took {run}", soft_wrap=True)
    elif event.kind == "ended":
        line = Text.assemble("ended ", run, " ", status_text(event.status or ""))
        if event.reason:
            line.append(f": {event.reason}")
        err.print(line, soft_wrap=True)
    elif event.kind == "refused":
        reason = times_in(event.reason or "", now())
        err.print(Text(f"left {run} alone: {reason}", style="yellow"), soft_wrap=True)
    elif event.kind == "unreachable":
        err.print(
            Text(f"{event.reason}; looking again until it answers", style="yellow"),
            soft_wrap=True,
        )
    elif event.kind == "stopping":
        err.print(
            f"{event.reason}: stopping; the runs being driven pause at their next step "
            "(Ctrl-C again aborts them)",
            soft_wrap=True,
        )
    elif event.kind == "idle":
        err.print("no run left to take", soft_wrap=True)


def print_worker_report(report: WorkerReport) -> None:
    """Print how the worker ended: the runs it took, by how they ended (stderr)."""
    ended = ", ".join(f"{count} {status}" for status, count in sorted(report.ended.items()))
    what = "aborted" if report.aborted else "stopped"
    stderr().print(
        f"worker {what}: took {report.taken} run(s)"
        + (f" ({ended})" if ended else "")
        + (f"; left {len(report.refused)} alone" if report.refused else ""),
        soft_wrap=True,
    )
