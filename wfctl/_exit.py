"""The exit codes of the ``wfctl`` command, and the one table that maps outcomes to them.

=====  ===========================================================================
code   meaning
=====  ===========================================================================
0      ok
1      a negative finding: the run failed or was cancelled, the replay differs, a lineage
       is broken
2      a usage or input error: bad arguments, unknown run or checkpoint, corrupt
       file, locked run, a workflow that cannot be loaded
3      the run paused, waiting for answers
130    interrupted: Ctrl-C, SIGTERM, SIGHUP (or `wfctl pause`) paused the run cleanly, or a
       second Ctrl-C aborted it
141    the output's reader went away (a pipe closed early, as ``| head`` closes it): the
       command stopped writing, quietly, as one that SIGPIPE ends (128 + 13)
=====  ===========================================================================

Errors map through :data:`ERROR_EXIT_CODES`, most specific class first; a :class:`WfctlError`
the table does not name uses its own ``exit_code``. Anything else is a bug in wfctl and exits 1
(the CLI says "internal error" and suggests ``--debug``).
"""

from __future__ import annotations

from typing import Final

from ._errors import (
    AnswerTypeError,
    AttemptsExhaustedError,
    CheckpointCorruptError,
    CheckpointNotFoundError,
    DuplicateStepKeyError,
    InvalidIdError,
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
    UntrustedTargetError,
    WfctlError,
    WorkflowChangedError,
    WorkflowDefinitionError,
    WorkflowExitError,
    WorkflowLoadError,
)

__all__ = [
    "ERROR_EXIT_CODES",
    "EXIT_FINDING",
    "EXIT_INPUT",
    "EXIT_INTERRUPTED",
    "EXIT_OK",
    "EXIT_OUTPUT_CLOSED",
    "EXIT_PAUSED",
    "STATUS_EXIT_CODES",
    "exit_code_for_error",
    "exit_code_for_status",
]

EXIT_OK: Final = 0
EXIT_FINDING: Final = 1
EXIT_INPUT: Final = 2
EXIT_PAUSED: Final = 3
EXIT_INTERRUPTED: Final = 130
#: What a shell shows for a command that SIGPIPE ended; wfctl ignores the signal (Python
#: does) and exits with it itself, so that no finding (1) is claimed for a closed pipe.
EXIT_OUTPUT_CLOSED: Final = 141

#: Error type -> exit code. Looked up along the error's MRO, so subclasses inherit.
ERROR_EXIT_CODES: Final[dict[type[BaseException], int]] = {
    ReplayDivergenceError: EXIT_FINDING,  # a replay that diverges is a finding, not bad input
    WorkflowExitError: EXIT_FINDING,  # the workflow failed (it called sys.exit)
    AttemptsExhaustedError: EXIT_FINDING,  # the run failed: a step had no attempt left
    RunCancelledError: EXIT_FINDING,  # the run was cancelled while it ran: ended, not completed
    WorkflowChangedError: EXIT_INPUT,  # refused before anything ran; --allow-changed overrides
    CheckpointNotFoundError: EXIT_INPUT,
    RunNotFoundError: EXIT_INPUT,
    NothingVerifiedError: EXIT_INPUT,  # a verification that selected no run: not a pass
    InvalidIdError: EXIT_INPUT,
    CheckpointCorruptError: EXIT_INPUT,
    RunLockedError: EXIT_INPUT,
    RunStateError: EXIT_INPUT,
    StoreLocationError: EXIT_INPUT,  # a missing, non-directory or refused store path
    RunArgumentError: EXIT_INPUT,  # contradictory run() arguments, or a missing input
    AnswerTypeError: EXIT_INPUT,  # refused before it was recorded: the run stays paused
    UnencodableValueError: EXIT_INPUT,  # the run's input (or an answer) cannot be stored
    DuplicateStepKeyError: EXIT_INPUT,
    WorkflowDefinitionError: EXIT_INPUT,
    UntrustedTargetError: EXIT_INPUT,  # a store's recorded code refused; --target overrides
    WorkflowLoadError: EXIT_INPUT,
    ReplayInterrupted: EXIT_INTERRUPTED,
    WfctlError: EXIT_INPUT,  # any other refusal: the input or the store's state is the problem
    KeyboardInterrupt: EXIT_INTERRUPTED,
    OSError: EXIT_INPUT,  # an unreadable store or file named on the command line
}

#: What a command exits with for the state a run ended in.
STATUS_EXIT_CODES: Final[dict[str, int]] = {
    "completed": EXIT_OK,
    "failed": EXIT_FINDING,
    "cancelled": EXIT_FINDING,  # ended for good without completing (``log --follow``)
    "paused": EXIT_PAUSED,
    "interrupted": EXIT_INTERRUPTED,
    "aborted": EXIT_INTERRUPTED,
}


def exit_code_for_error(error: BaseException) -> int:
    """Return the exit code for ``error`` (1 for anything that is not a wfctl error)."""
    for cls in type(error).__mro__:
        code = ERROR_EXIT_CODES.get(cls)
        if code is not None:
            return code
    return EXIT_FINDING


def exit_code_for_status(status: str) -> int:
    """Return the exit code for a run that ended ``status`` (see :data:`STATUS_EXIT_CODES`)."""
    return STATUS_EXIT_CODES.get(status, EXIT_FINDING)
