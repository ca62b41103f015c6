"""What admitting and driving a run read of its workflow: :class:`DefinedWorkflow`.

:class:`~wfctl.Workflow` implements it. Admission and driving name this Protocol, not the class
that calls them, so they sit below ``_workflow`` and import nothing back up.
"""

from __future__ import annotations

from collections.abc import Coroutine
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from wfctl._storage._protocol import CheckpointStorage

    from ._context import RunContext
    from ._policies import Retry

__all__ = ["DefinedWorkflow"]


class DefinedWorkflow(Protocol):
    """A workflow, as its run's admission and driving read it."""

    #: The checkpoint a pause of this workflow's last run committed (what ``run(...)`` with
    #: neither a run id nor a checkpoint resumes); driving sets it.
    _last_paused: str | None

    @property
    def name(self) -> str:
        """The workflow's name, recorded in every checkpoint."""
        ...

    @property
    def storage(self) -> CheckpointStorage:
        """The store its runs are written to."""
        ...

    @property
    def signature(self) -> str:
        """The signature of its code, recorded in the root checkpoint."""
        ...

    @property
    def reference(self) -> str:
        """``module:qualname`` of its function."""
        ...

    @property
    def target(self) -> str | None:
        """The target it was loaded from (``file.py:name``), if any."""
        ...

    @property
    def step_retries(self) -> Retry | None:
        """The retries of every step that declares none of its own."""
        ...

    def body(self, message: Any, context: RunContext) -> Coroutine[Any, Any, Any]:
        """The coroutine of one run of its function, given the message and the context."""
        ...
