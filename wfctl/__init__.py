"""wfctl: durable async workflows with keyed replay and one locked checkpoint chain per run.

Write a workflow as a plain ``async`` function (``@workflow``), mark the calls worth remembering
as steps (``@step``), and run it: every step result is committed to a checkpoint chain before
the call returns, so a run can pause for answers, resume, survive a crash and be replayed.
"""

from ._checkpoint import Checkpoint
from ._codec import register_type
from ._context import PauseSignal, RunContext, get_run_context
from ._errors import (
    CheckpointCorruptError,
    CheckpointNotFoundError,
    DuplicateStepKeyError,
    InvalidIdError,
    ReplayDivergenceError,
    RunLockedError,
    RunNotFoundError,
    RunStateError,
    UnencodableValueError,
    WfctlError,
    WorkflowChangedError,
    WorkflowDefinitionError,
    WorkflowLoadError,
)
from ._events import RequestInfoEvent, WorkflowEvent
from ._result import WorkflowRunResult
from ._step import Step, step
from ._storage import (
    CheckpointStorage,
    FileCheckpointStorage,
    InMemoryCheckpointStorage,
    RunSummary,
)
from ._workflow import Workflow, workflow

__version__ = "0.1.0"

__all__ = [
    "Checkpoint",
    "CheckpointCorruptError",
    "CheckpointNotFoundError",
    "CheckpointStorage",
    "DuplicateStepKeyError",
    "FileCheckpointStorage",
    "InMemoryCheckpointStorage",
    "InvalidIdError",
    "PauseSignal",
    "ReplayDivergenceError",
    "RequestInfoEvent",
    "RunContext",
    "RunLockedError",
    "RunNotFoundError",
    "RunStateError",
    "RunSummary",
    "Step",
    "UnencodableValueError",
    "WfctlError",
    "Workflow",
    "WorkflowChangedError",
    "WorkflowDefinitionError",
    "WorkflowEvent",
    "WorkflowLoadError",
    "WorkflowRunResult",
    "get_run_context",
    "register_type",
    "step",
    "workflow",
]
