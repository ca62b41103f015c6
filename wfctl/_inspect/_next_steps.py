"""What to do after a run failed: the commands that can help, and only those.

A retry (``wfctl resume RUN``) runs the body again on the same input, serving every recorded
step from the record. It re-executes the step that failed, so it can help when a step failed
for a reason outside the code (a file, a service). When the body itself raised, outside any
step (a ``KeyError`` on the message, say), the same code on the same input fails the same way:
only changed code (``--allow-changed``) or a new run with another input can help, so a plain
retry is not suggested. Every command here is one a test runs.
"""

from __future__ import annotations

import asyncio
import json
import shlex
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from wfctl._config import StoreRef, locate_store
from wfctl._errors import WfctlError
from wfctl._records._payloads import RootPayload
from wfctl._redact import redact

if TYPE_CHECKING:
    from wfctl._engine._result import WorkflowRunResult
    from wfctl._engine._workflow import Workflow
    from wfctl._storage._protocol import CheckpointStorage

__all__ = [
    "Hint",
    "failed_run_hints",
    "failure_hints",
    "failure_summary",
    "resume_command",
    "store_option",
    "with_allow_changed",
]


@dataclass(frozen=True, slots=True)
class Hint:
    """A command to run, and when it helps."""

    when: str
    command: str

    def to_json(self) -> dict[str, str]:
        """Return ``{"when", "command"}``."""
        return {"when": self.when, "command": self.command}


def store_option(store: StoreRef) -> str:
    """Return `` --store DIR`` for a command to print, or nothing when ``store`` is the default.

    A URL is printed without its password (give that with ``PGPASSWORD`` or a ``.pgpass``).
    """
    try:
        default: StoreRef | None = locate_store(None).target
    except WfctlError:
        default = None
    if isinstance(store, str):
        return "" if default == store else f" --store {shlex.quote(redact(store))}"
    if isinstance(default, Path) and default.resolve() == store.resolve():
        return ""
    return f" --store {shlex.quote(redact(str(store)))}"


def resume_command(run_id: str, store: StoreRef) -> str:
    """Return the command that continues ``run_id`` in ``store``."""
    return f"wfctl resume {run_id}{store_option(store)}"


def with_allow_changed(command: str, options: Sequence[tuple[str, str | None]]) -> str:
    """Return ``command`` with ``options`` and ``--allow-changed``.

    Used to repeat a command that was refused because the code changed, exactly as given. Each
    option is ``(flag, value)``: a None value leaves the option out, an empty one gives the bare
    flag.
    """
    parts = [command]
    for flag, value in options:
        if value is not None:
            parts.append(f"{flag} {shlex.quote(value)}" if value else flag)
    return " ".join([*parts, "--allow-changed"])


def failure_summary(failed_step: str | None, *, unregistered: bool = False) -> str:
    """Say where the run failed and what a retry would do about it (``unregistered``: it failed
    reading a recorded value whose class this process has not registered)."""
    if unregistered:
        return (
            "It failed reading a recorded value whose class this process does not know: the "
            "record is intact; resume again from code that defines or registers that class."
        )
    if failed_step is not None:
        return f"It failed in step {failed_step}; the steps that succeeded are kept in the record."
    return (
        "It failed in the workflow body, outside any step: a retry runs the same code on the "
        "same input and fails the same way, so fix the code or start again with another input."
    )


def _plain_json(value: Any) -> bool:
    """Tell whether encoded data is plain JSON (no tagged value), as ``--input`` can give it."""
    if isinstance(value, dict):
        return "$t" not in value and all(_plain_json(v) for v in value.values())
    if isinstance(value, list):
        return all(_plain_json(v) for v in value)
    return True


def failure_hints(
    run_id: str,
    store_option: str,
    failed_step: str | None,
    target: str | None,
    recorded_input: Any,
    takes_message: bool,
) -> tuple[Hint, ...]:
    """Return the commands that can help a failed run, most direct first.

    Args:
        run_id: the failed run.
        store_option: `` --store DIR`` when the store is not the default one, else empty.
        failed_step: the key of the step that raised, or None when the body raised.
        target: the workflow target to start a new run with (None: not from the CLI).
        recorded_input: the run's input as its root recorded it (encoded data).
        takes_message: whether the workflow takes a message (``--input``).
    """
    resume = f"wfctl resume {run_id}{store_option}"
    hints = []
    if failed_step is not None:
        hints.append(Hint(f"after fixing the cause outside the code ({failed_step} runs again)",
                          resume))  # fmt: skip
    hints.append(
        Hint(
            "after fixing the code (recorded steps are served, the rest run the new code)",
            f"{resume} --allow-changed",
        )
    )
    if target is None:
        return tuple(hints)
    rerun = f"wfctl run {shlex.quote(target)}{store_option}"
    if not takes_message:
        hints.append(Hint("or start a new run", rerun))
        return tuple(hints)
    try:
        plain = _plain_json(recorded_input)
    except RecursionError:
        plain = False
    if plain:  # an input --input cannot express is left out: start that run from Python
        text = json.dumps(recorded_input, ensure_ascii=False)
        hints.append(
            Hint("or start a new run with another input (edit --input)",
                 f"{rerun} --input {shlex.quote(text)}")
        )  # fmt: skip
    return tuple(hints)


def failed_run_hints(
    result: WorkflowRunResult,
    step: str | None,
    storage: CheckpointStorage,
    workflow: Workflow,
    store: StoreRef,
) -> tuple[Hint, ...]:
    """Return the commands that can help a run that failed in ``step`` (None: the body)."""
    root = asyncio.run(storage.load(f"{result.run_id}.0"))
    hints = failure_hints(
        result.run_id,
        store_option(store),
        step,
        workflow.target,
        RootPayload.of(root).input,
        workflow.takes_message,
    )
    return hints
