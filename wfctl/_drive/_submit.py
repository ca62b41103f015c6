"""``wfctl submit``: admit a run without driving it, for a worker (``wfctl worker``) to take.

The run's root (its input, the workflow's target and code signature) is committed under the
run's lease, which is then released. The run is listed as ``queued`` until a worker claims it
(or ``wfctl resume`` starts it here).
"""

from __future__ import annotations

import asyncio
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from wfctl._engine._admission import submit_run
from wfctl._engine._message import NO_MESSAGE
from wfctl._inspect._documents import document, utc_time
from wfctl._inspect._next_steps import resume_command
from wfctl._storage._open import is_url, open_storage

from ._loader import load_workflow
from ._runner import NO_INPUT, read_input

__all__ = ["SubmitReport", "submit_workflow"]


@dataclass(frozen=True, slots=True)
class SubmitReport:
    """A run submitted: its id, its workflow, where its code is and its root checkpoint."""

    run_id: str
    workflow_name: str
    target: str
    store: str
    head_checkpoint_id: str
    created: str
    #: The command that starts the run here instead of in a worker.
    resume_command: str

    def to_json(self) -> dict[str, Any]:
        """Return the ``wfctl/submit@1`` document (see docs/json.md)."""
        return document(
            "submit",
            {
                "run_id": self.run_id,
                "workflow": self.workflow_name,
                "status": "queued",
                "head_checkpoint_id": self.head_checkpoint_id,
                "created_at": utc_time(self.created),
                "target": self.target,
                "store": self.store,
                "resume_command": self.resume_command,
            },
        )


def submit_workflow(
    target: str,
    *,
    store: str | os.PathLike[str],
    input_json: str | None = None,
    input_file: Path | None = None,
    run_id: str | None = None,
) -> SubmitReport:
    """Load ``target`` and commit a queued run of it on the input, without driving it.

    The input is read as ``wfctl run`` reads it (:func:`~wfctl._drive._runner.read_input`). The store
    is created if it does not exist, as ``wfctl run`` creates it.

    Raises:
        WfctlError: the input is invalid or unreadable.
        WorkflowLoadError: the target cannot be loaded.
        RunArgumentError: no input for a workflow whose parameter has no default, an input
            for one that takes none, or one that does not fit the parameter's annotation.
        InvalidIdError: ``run_id`` is malformed.
        RunStateError: a run with that id exists already.
        UnencodableValueError: the input cannot be stored.
    """
    message = read_input(input_json, input_file)
    workflow = load_workflow(target)
    if message is not NO_INPUT:  # checked against its annotation before a store is opened
        message = workflow.message_from_data(message)
    storage = open_storage(store, must_exist=False)
    bound = workflow.build(checkpoint_storage=storage)

    async def submit() -> Any:
        try:
            value = bound.message_for(NO_MESSAGE if message is NO_INPUT else message)
            return await submit_run(bound, value, run_id)
        finally:
            await storage.aclose()

    root = asyncio.run(submit())
    return SubmitReport(
        root.run_id,
        workflow.name,
        workflow.target or target,
        storage.location,
        root.checkpoint_id,
        root.timestamp,
        _resume_command(root.run_id, storage.location),
    )


def _resume_command(run_id: str, location: str) -> str:
    return resume_command(run_id, location if is_url(location) else Path(location))
