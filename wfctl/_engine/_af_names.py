"""agent-framework's names for wfctl's types, so ported code finds them under either name.

Each is the same class, not a subclass: ``isinstance`` and ``type(x) is`` agree.
"""

from __future__ import annotations

from wfctl._records._checkpoint import Checkpoint

from ._step import Step
from ._workflow import Workflow

__all__ = [
    "FunctionalWorkflow",
    "FunctionalWorkflowDefinition",
    "StepWrapper",
    "WorkflowCheckpoint",
]

#: agent-framework's ``StepWrapper``: what ``@step`` returns.
StepWrapper = Step
#: agent-framework's ``FunctionalWorkflow``: what ``@workflow`` returns.
FunctionalWorkflow = Workflow
#: agent-framework's ``FunctionalWorkflowDefinition`` (what its ``@workflow`` returns, runnable
#: only once built): wfctl's ``Workflow`` is both the definition and the runnable workflow.
FunctionalWorkflowDefinition = Workflow
#: agent-framework's ``WorkflowCheckpoint``: one record of a run's chain.
WorkflowCheckpoint = Checkpoint
