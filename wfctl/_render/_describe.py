"""Rendering ``wfctl describe``: one run on one screen, a field a line."""

from __future__ import annotations

from typing import TYPE_CHECKING

from wfctl._readable import readable_text

from ._common import Text, status_text, stdout
from ._time import now, time_with_age, times_in

if TYPE_CHECKING:
    from wfctl._inspect._describe import RunDescription

__all__ = ["print_description"]

#: How much of a value (input, result, request data) one line shows; --json has it whole.
_VALUE_CHARS = 200


def print_description(description: RunDescription) -> None:
    """Show a run: its status line, then one labelled line per fact (long values cut short,
    saying so; ``--json`` holds them whole)."""
    out = stdout()
    summary = description.summary
    current = now()
    out.print(
        Text.assemble(
            (f"run {summary.run_id}", "bold"),
            f" · {summary.workflow_name} · ",
            status_text(summary.status),
        )
    )
    fields: list[tuple[str, str]] = [
        ("workflow", _workflow(description)),
        ("input", readable_text(description.input, _VALUE_CHARS)),
    ]
    if summary.status == "completed":
        fields.append(("result", readable_text(description.result, _VALUE_CHARS)))
        if description.outputs:
            fields.append(("outputs", f"{len(description.outputs)} yielded before the result"))
    if description.error is not None:
        where = f" (in {description.failed_step_key})" if description.failed_step_key else ""
        fields.append(("error", description.error + where))
    if description.cancel_reason is not None:
        fields.append(("reason", description.cancel_reason))
    for index, request in enumerate(description.requests):  # the label once, a line each
        expects = request.response_type or "any"
        data = readable_text(request.data, _VALUE_CHARS)
        label = "" if index else "waiting on"
        fields.append((label, f"{request.request_id} (expects {expects}): {data}"))
    if summary.waiting:
        fields.append(("waiting", times_in(summary.waiting, current)))
    if summary.problem:
        fields.append(("problem", summary.problem))
    fields.extend(
        [
            ("created", time_with_age(summary.created, current)),
            ("updated", time_with_age(summary.updated, current)),
            ("duration", _seconds(description.duration)),
            ("steps", _steps(description)),
            ("checkpoints", f"{description.checkpoint_count} (head {summary.head_checkpoint_id})"),
            ("origin", _origin(description)),
            ("store", description.store),
        ]
    )
    if description.journal is not None:
        fields.append(("journal", description.journal))
    width = max(len(label) for label, _ in fields)
    for label, value in fields:
        out.print(Text.assemble((f"  {label:<{width}}  ", "dim"), value), soft_wrap=True)


def _workflow(description: RunDescription) -> str:
    name = description.summary.workflow_name
    where = description.target or description.workflow_ref
    return f"{name} ({where})" if where else name


def _seconds(seconds: float | None) -> str:
    if seconds is None:
        return "-"
    if seconds < 60:
        return f"{seconds:.3f}s"
    minutes, rest = divmod(int(seconds), 60)
    hours, minutes = divmod(minutes, 60)
    return f"{hours}h {minutes:02d}m {rest:02d}s" if hours else f"{minutes}m {rest:02d}s"


def _steps(description: RunDescription) -> str:
    text = f"{description.executed} executed, {description.cached} cached"
    text += f", {description.retries} retried attempt{'s' if description.retries != 1 else ''}"
    if description.step_failures:
        text += f", {description.step_failures} failed for good"
    if description.resumes:
        text += f"; resumed {description.resumes} time{'s' if description.resumes != 1 else ''}"
    return text


def _origin(description: RunDescription) -> str:
    origin = description.summary.origin_checkpoint_id
    return f"restored from {origin}" if origin else "a fresh run (not restored)"
