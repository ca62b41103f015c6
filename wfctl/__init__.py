"""wfctl: durable async workflows with keyed replay and one locked checkpoint chain per run.

Write a workflow as a plain ``async`` function (``@workflow``), mark the calls worth remembering
as steps (``@step``), and run it: every step result is committed to a checkpoint chain before
the call returns, so a run can pause for answers, resume, survive a crash and be replayed.

The public names below are imported on first use (PEP 562), so ``import wfctl`` -- and the
``wfctl`` command's start-up, which imports this package first -- stays cheap: the engine, the
storages and their dependencies load only when a program touches them.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # the eager imports, for type checkers and IDEs
    from ._engine._af_names import (
        FunctionalWorkflow,
        FunctionalWorkflowDefinition,
        StepWrapper,
        WorkflowCheckpoint,
    )
    from ._engine._agent import FunctionalWorkflowAgent as FunctionalWorkflowAgent
    from ._engine._context import RunContext, get_run_context
    from ._engine._events import (
        RequestInfoEvent,
        WorkflowErrorDetails,
        WorkflowEvent,
        WorkflowEventSource,
        WorkflowRunState,
    )
    from ._engine._pausing import PauseSignal
    from ._engine._policies import Retry, attempts_of
    from ._engine._result import WorkflowRunResult
    from ._engine._step import Step, step
    from ._engine._streaming import WorkflowStream
    from ._engine._workflow import Workflow, workflow
    from ._errors import (
        AmbiguousRunError,
        AnswerTypeError,
        AttemptsExhaustedError,
        CheckpointCorruptError,
        CheckpointNotFoundError,
        DuplicateStepKeyError,
        InvalidIdError,
        JournalChangedError,
        LeaseLostError,
        NothingVerifiedError,
        ReplayDivergenceError,
        ReplayInterrupted,
        RunArgumentError,
        RunCancelledError,
        RunLockedError,
        RunNotFoundError,
        RunStateError,
        StoreLocationError,
        UnencodableValueError,
        UnregisteredTypeError,
        UntrustedTargetError,
        WfctlError,
        WorkflowChangedError,
        WorkflowDefinitionError,
        WorkflowExitError,
        WorkflowLoadError,
    )
    from ._records._checkpoint import Checkpoint
    from ._records._codec import register_type
    from ._storage import (
        CheckpointStorage,
        FileCheckpointStorage,
        InMemoryCheckpointStorage,
        RunStatus,
        RunSummary,
    )
    from ._storage._durability import Durability
    from ._storage._security import StoreSecurityWarning

__version__ = "0.1.0"

#: Where each public name lives: name -> implementation module (relative to this package).
_EXPORTS: dict[str, str] = {
    "AnswerTypeError": "._errors",
    "Checkpoint": "._records._checkpoint",
    "CheckpointCorruptError": "._errors",
    "CheckpointNotFoundError": "._errors",
    "CheckpointStorage": "._storage",
    "AmbiguousRunError": "._errors",
    "DuplicateStepKeyError": "._errors",
    "Durability": "._storage._durability",
    "FileCheckpointStorage": "._storage",
    "FunctionalWorkflow": "._engine._af_names",
    "FunctionalWorkflowDefinition": "._engine._af_names",
    "InMemoryCheckpointStorage": "._storage",
    "InvalidIdError": "._errors",
    "JournalChangedError": "._errors",
    "LeaseLostError": "._errors",
    "NothingVerifiedError": "._errors",
    "PauseSignal": "._engine._pausing",
    "ReplayDivergenceError": "._errors",
    "ReplayInterrupted": "._errors",
    "Retry": "._engine._policies",
    "RequestInfoEvent": "._engine._events",
    "RunArgumentError": "._errors",
    "RunCancelledError": "._errors",
    "RunContext": "._engine._context",
    "RunLockedError": "._errors",
    "RunNotFoundError": "._errors",
    "AttemptsExhaustedError": "._errors",
    "RunStateError": "._errors",
    "RunStatus": "._storage",
    "RunSummary": "._storage",
    "Step": "._engine._step",
    "StepWrapper": "._engine._af_names",
    "StoreLocationError": "._errors",
    "StoreSecurityWarning": "._storage._security",
    "UnencodableValueError": "._errors",
    "UnregisteredTypeError": "._errors",
    "UntrustedTargetError": "._errors",
    "WfctlError": "._errors",
    "Workflow": "._engine._workflow",
    "WorkflowChangedError": "._errors",
    "WorkflowCheckpoint": "._engine._af_names",
    "WorkflowDefinitionError": "._errors",
    "WorkflowErrorDetails": "._engine._events",
    "WorkflowEvent": "._engine._events",
    "WorkflowEventSource": "._engine._events",
    "WorkflowExitError": "._errors",
    "WorkflowLoadError": "._errors",
    "WorkflowRunResult": "._engine._result",
    "WorkflowRunState": "._engine._events",
    "WorkflowStream": "._engine._streaming",
    "attempts_of": "._engine._policies",
    "get_run_context": "._engine._context",
    "register_type": "._records._codec",
    "step": "._engine._step",
    "workflow": "._engine._workflow",
}

__all__ = [
    "AmbiguousRunError",
    "AnswerTypeError",
    "AttemptsExhaustedError",
    "Checkpoint",
    "CheckpointCorruptError",
    "CheckpointNotFoundError",
    "CheckpointStorage",
    "DuplicateStepKeyError",
    "Durability",
    "FileCheckpointStorage",
    "FunctionalWorkflow",
    "FunctionalWorkflowDefinition",
    "InMemoryCheckpointStorage",
    "InvalidIdError",
    "JournalChangedError",
    "LeaseLostError",
    "NothingVerifiedError",
    "PauseSignal",
    "ReplayDivergenceError",
    "ReplayInterrupted",
    "RequestInfoEvent",
    "Retry",
    "RunArgumentError",
    "RunCancelledError",
    "RunContext",
    "RunLockedError",
    "RunNotFoundError",
    "RunStateError",
    "RunStatus",
    "RunSummary",
    "Step",
    "StepWrapper",
    "StoreLocationError",
    "StoreSecurityWarning",
    "UnencodableValueError",
    "UnregisteredTypeError",
    "UntrustedTargetError",
    "WfctlError",
    "Workflow",
    "WorkflowChangedError",
    "WorkflowCheckpoint",
    "WorkflowDefinitionError",
    "WorkflowErrorDetails",
    "WorkflowEvent",
    "WorkflowEventSource",
    "WorkflowExitError",
    "WorkflowLoadError",
    "WorkflowRunResult",
    "WorkflowRunState",
    "WorkflowStream",
    "attempts_of",
    "get_run_context",
    "register_type",
    "step",
    "workflow",
]


#: Public names that need an optional extra: importable by name (``from wfctl import
#: FunctionalWorkflowAgent``), but not in ``__all__``, so ``from wfctl import *`` works without it.
_OPTIONAL_EXPORTS: dict[str, str] = {
    "FunctionalWorkflowAgent": "._engine._agent",  # the agent-framework extra
}


def __getattr__(name: str) -> Any:
    """Import a public name's module on first access and cache the name here (PEP 562)."""
    module = _EXPORTS.get(name) or _OPTIONAL_EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(module, __name__), name)
    globals()[name] = value  # later lookups skip this function
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__, *_OPTIONAL_EXPORTS})
