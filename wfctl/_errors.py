"""The wfctl error tree.

Every error wfctl raises on purpose derives from :class:`WfctlError`. Each subclass takes
structured fields and builds its own message. The exit code each maps to on the command line
lives in one table, ``wfctl._exit.ERROR_EXIT_CODES``.

The pause signal is deliberately *not* here: it is a ``BaseException`` (see ``_pause``), so that
``except Exception:`` in user code cannot swallow it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Sequence

__all__ = [
    "AmbiguousRunError",
    "AnswerTypeError",
    "AttemptsExhaustedError",
    "CheckpointCorruptError",
    "CheckpointNotFoundError",
    "DuplicateStepKeyError",
    "InvalidIdError",
    "JournalChangedError",
    "LeaseLostError",
    "NothingVerifiedError",
    "ReplayDivergenceError",
    "ReplayInterrupted",
    "RunArgumentError",
    "RunCancelledError",
    "RunLockedError",
    "RunNotFoundError",
    "RunStateError",
    "StoreLocationError",
    "UnencodableValueError",
    "UnregisteredTypeError",
    "UntrustedTargetError",
    "WfctlError",
    "WorkflowChangedError",
    "WorkflowDefinitionError",
    "WorkflowExitError",
    "WorkflowLoadError",
]


class WfctlError(Exception):
    """Root of every error wfctl raises on purpose.

    Catch this to handle any wfctl failure.
    """


class InvalidIdError(WfctlError, ValueError):
    """Raised when a run or checkpoint id is malformed (path separators, traversal, NUL, ...).

    Raised before any file is touched, unlike :class:`CheckpointNotFoundError`, which means a
    well-formed id that names nothing.
    """

    def __init__(self, kind: str, value: str, reason: str) -> None:
        self.kind = kind
        self.value = value
        self.reason = reason
        super().__init__(f"invalid {kind} id {value!r}: {reason}")


class CheckpointNotFoundError(WfctlError, KeyError):
    """Raised when a well-formed checkpoint id names no checkpoint in the storage.

    ``suggestions`` are checkpoint ids close to it (of the runs closest to its run part).
    """

    def __init__(self, checkpoint_id: str, suggestions: Sequence[str] = ()) -> None:
        self.checkpoint_id = checkpoint_id
        self.suggestions = tuple(suggestions)
        super().__init__(checkpoint_id)

    def __str__(self) -> str:
        return _not_found("checkpoint", self.checkpoint_id, self.suggestions)


class RunNotFoundError(WfctlError, KeyError):
    """Raised when a well-formed run id names no run in the storage.

    ``suggestions`` are stored run ids close to it (a typo's likely meaning), best first.
    """

    def __init__(self, run_id: str, suggestions: Sequence[str] = ()) -> None:
        self.run_id = run_id
        self.suggestions = tuple(suggestions)
        super().__init__(run_id)

    def __str__(self) -> str:
        return _not_found("run", self.run_id, self.suggestions)


def _not_found(what: str, name: str, suggestions: Sequence[str]) -> str:
    text = f"{what} {name!r} not found"
    if suggestions:
        text += "; did you mean " + " or ".join(repr(s) for s in suggestions) + "?"
    return text


class AmbiguousRunError(WfctlError, LookupError):
    """Raised when the start of a run id given for a run names several runs.

    Unlike :class:`RunNotFoundError`, runs were found: too many. ``candidates`` are the ids it
    starts (the first few, sorted), ``count`` how many there are.
    """

    #: How many candidates the message names.
    SHOWN = 5

    def __init__(self, prefix: str, candidates: Sequence[str], count: int) -> None:
        self.prefix = prefix
        self.candidates = tuple(candidates)
        self.count = count
        named = ", ".join(self.candidates[: self.SHOWN])
        more = count - min(count, self.SHOWN)
        if more:
            named += f" and {more} more"
        super().__init__(
            f"run id {prefix!r} is ambiguous: {count} runs start with it ({named}); give more of it"
        )


class NothingVerifiedError(WfctlError, LookupError):
    """Raised when a lineage verification selected no run, so nothing was verified.

    The store (or directory) holds no run, or none matched the filters given. Unlike
    :class:`RunNotFoundError` (a run named by its id is missing), nothing was named; unlike a
    broken lineage (a finding, exit 1), nothing was found wrong: nothing was checked, and a
    check of nothing is not a pass. ``selection`` says what selected nothing.
    """

    def __init__(self, selection: str) -> None:
        self.selection = selection
        super().__init__(f"{selection}; nothing was verified")


class CheckpointCorruptError(WfctlError):
    """Raised when stored checkpoint data cannot be trusted.

    Covers a failed checksum, a truncated or edited record that is not the torn tail of a
    crash, an unknown type tag, a future format version and a broken chain. ``where`` names the
    file and record; ``reason`` says what is wrong.
    """

    def __init__(self, where: str, reason: str) -> None:
        self.where = where
        self.reason = reason
        super().__init__(f"corrupt checkpoint data in {where}: {reason}")


class UnregisteredTypeError(CheckpointCorruptError):
    """Raised when stored data names a dataclass, pydantic model or class that stores itself
    (``to_dict``/``from_dict``) this process has not registered (a ``CheckpointCorruptError``,
    as before it had a name of its own); for agent-framework's chat types, when agent-framework
    is not loaded.

    The data is not damaged: the class is unknown here, and wfctl never imports what a store
    names. A class defined inside a function is registered when the step or workflow that
    returns it runs (its annotation spells it), so a process that serves its recorded result
    without running that code has not seen it.
    """

    def __init__(self, where: str, kind: str, name: str) -> None:
        self.kind = kind
        self.name = name
        shown = repr(name)[:120]
        if name.startswith("agent_framework."):
            hint = (
                "it is agent-framework's, and agent-framework is not loaded here (wfctl "
                "imports nothing a store names); import agent_framework in the code that reads it"
            )
        elif "<locals>" in name:
            hint = (
                "it is defined inside a function, and this process has not run the code that "
                "returns one (wfctl imports nothing a store names); define it at module level, "
                "or register it with wfctl.register_type before resuming"
            )
        else:
            hint = (
                "wfctl imports nothing a store names; register it with wfctl.register_type "
                "(or name it in a step's annotation) in the code that reads it"
            )
        # The parent's fields, with a message of its own: the data is not corrupt.
        self.where = where
        self.reason = f"the {kind} {shown} is not registered in this process: {hint}"
        WfctlError.__init__(self, f"{where}: {self.reason}")


class StoreLocationError(WfctlError):
    """Raised when a path cannot be used as a checkpoint store, before anything is read or written.

    The path is empty or the root of the file system, is not a directory, does not exist when a
    read was asked of it by name, or holds its ``runs`` entry as a symbolic link or a file. Unlike
    :class:`RunNotFoundError` (the store is fine; the run is not in it), this is about the whole
    store. ``path`` is the store's path as given or resolved; ``reason`` says what is wrong;
    ``unreachable`` is True when a database server could not be reached (it may answer later:
    a worker waits for it), False for a store that is not one or refused what was asked.
    """

    def __init__(self, path: str, reason: str, *, unreachable: bool = False) -> None:
        from ._redact import redact  # a URL's password is never part of a message

        self.path = redact(path)
        self.reason = reason
        self.unreachable = unreachable
        super().__init__(f"store {self.path!r} {reason}")


class JournalChangedError(CheckpointCorruptError):
    """Raised when a run's journal no longer ends where this process last wrote to it.

    Checked before every append: the file at the journal's path must still be the one this
    process opened (not deleted, moved or replaced) and exactly as long as it left it. If it is
    not, another writer got in (its lock was bypassed) or the file was edited, and appending
    would fork or lose the chain: the append is refused, and so is every later one, and the run
    stops. ``where`` is the journal; ``reason`` says what changed.
    """


class LeaseLostError(JournalChangedError):
    """Raised when a writer appends to a run whose lease it no longer holds (a database store).

    Its session with the server ended (a server restart, a network cut, a killed connection)
    or another process took the run over. Nothing was written; as for
    :class:`JournalChangedError`, every later append of this writer is refused and the run
    stops. Its records are intact: the message says so rather than calling them corrupt.
    """

    def __init__(self, where: str, reason: str) -> None:
        super().__init__(where, reason)
        self.args = (f"{reason} (store {where})",)


class UnencodableValueError(WfctlError, TypeError):
    """Raised when a value cannot be stored in a checkpoint.

    Raised at the step (or at the run's input) before anything is written, naming the step key
    and the offending type, with ``path`` locating it inside the value.
    """

    def __init__(self, type_name: str, path: str = "$", key: str | None = None) -> None:
        self.type_name = type_name
        self.path = path
        self.key = key
        super().__init__(self._message())

    def _message(self) -> str:
        where = f" (step {self.key})" if self.key else ""
        return (
            f"cannot encode a value of type {self.type_name} at {self.path}{where}; "
            "register dataclasses, pydantic models and classes with to_dict and from_dict "
            "with wfctl.register_type"
        )

    def for_key(self, key: str) -> UnencodableValueError:
        """Return a copy of this error that names the step ``key``."""
        return UnencodableValueError(self.type_name, self.path, key)


class ReplayDivergenceError(WfctlError):
    """Raised when a call finds no recorded result although its step recorded other calls.

    The call's argument digest differs from every unconsumed record of that step in its scope,
    so serving any of them would hand a result to a different logical call. Nothing is served
    and nothing recorded is overwritten. Unlike :class:`WorkflowChangedError` (raised before the
    body runs), this is raised at the diverging call.

    ``call_args`` is what the diverging call received now and ``recorded_args`` what each recorded
    call received then (one line each, as ``wfctl log -v`` shows them; "not recorded ..." when
    the step opted out or the record predates stored arguments).
    """

    def __init__(
        self,
        key: str,
        digest: str | None,
        recorded: list[str | None],
        reason: str = "",
        *,
        call_args: str | None = None,
        recorded_args: list[str] | None = None,
    ) -> None:
        self.key = key
        self.digest = digest
        self.recorded = recorded
        self.reason = reason
        self.call_args = call_args
        self.recorded_args = recorded_args or []
        shown = ", ".join(str(d) for d in recorded) or "none"
        text = f"replay diverged at {key}: call digest {digest}, recorded digest(s) {shown}"
        if reason:
            text += f"; {reason}"
        if call_args is not None:
            text += f"; the call received {call_args}"
        if self.recorded_args:
            text += "; recorded call(s) received " + ", ".join(self.recorded_args)
        super().__init__(text)


class WorkflowChangedError(WfctlError, ValueError):
    """Raised when restoring a checkpoint written by different workflow code.

    The code signature (over the workflow and its steps) recorded in the run's root differs from
    the current one. Pass ``allow_changed=True`` (CLI: ``--allow-changed``) to replay anyway.
    A ``ValueError``, as agent-framework raises when a checkpoint's signature does not match.
    """

    def __init__(
        self, workflow_name: str, recorded: str, current: str, command: str | None = None
    ) -> None:
        self.workflow_name = workflow_name
        self.recorded = recorded
        self.current = current
        self.command = command
        how = (
            f"to go ahead with the new code: {command}"
            if command
            else "use --allow-changed / allow_changed=True"
        )
        super().__init__(
            f"workflow {workflow_name!r} changed since the checkpoint was written "
            f"(signature {recorded} -> {current}), which is not compatible with the current "
            f"version; {how}"
        )

    def with_command(self, command: str) -> WorkflowChangedError:
        """Return a copy of this error whose message ends with the exact ``command`` to run."""
        return WorkflowChangedError(self.workflow_name, self.recorded, self.current, command)


class RunLockedError(WfctlError):
    """Raised when a run is being executed by another process (or task) that holds its lock."""

    def __init__(self, run_id: str, holder: str, remedy: str | None = None) -> None:
        self.run_id = run_id
        self.holder = holder
        self.remedy = remedy
        then = f": it is running; {remedy}" if remedy else ""
        super().__init__(f"run {run_id!r} is locked by {holder}{then}")

    def with_remedy(self, remedy: str) -> RunLockedError:
        """Return this error, its message ending with what the user can do (``remedy``)."""
        return RunLockedError(self.run_id, self.holder, remedy)


class RunCancelledError(WfctlError):
    """Raised by ``run()`` and ``resume()`` when the run was cancelled while it ran.

    Someone asked (``wfctl cancel``, from this machine or another) while this call drove the
    run; it stopped at the next step boundary, as a pause does, and committed the ``cancelled``
    record that ends the run for good. Unlike a failure, nothing can continue it. ``by`` names
    who asked (``user@host (pid N)``), ``asked_at`` when, ``reason`` why (if they said).
    """

    def __init__(self, run_id: str, by: str, asked_at: str, reason: str | None) -> None:
        self.run_id = run_id
        self.by = by
        self.asked_at = asked_at
        self.reason = reason
        why = f": {reason}" if reason else ""
        super().__init__(f"run {run_id!r} was cancelled by {by} at {asked_at}{why}")


class RunStateError(WfctlError, ValueError):
    """Raised when a run cannot do what was asked in its current state.

    For example answering a request that is not pending, contradicting an answer the run
    recorded, or resuming a completed run. A ``ValueError``, as agent-framework raises when
    responses answer no pending request.
    """

    def __init__(self, run_id: str, message: str) -> None:
        self.run_id = run_id
        super().__init__(f"run {run_id!r}: {message}")


class DuplicateStepKeyError(WfctlError, ValueError):
    """Raised when an explicit step key (``keyed``/``replay_key``) repeats within one scope.

    A ``ValueError``, as agent-framework raises for a repeated ``replay_key``.
    """

    def __init__(self, key: str) -> None:
        self.key = key
        super().__init__(f"duplicate explicit step key {key!r} in one run")


class WorkflowDefinitionError(WfctlError, TypeError, ValueError):
    """Raised at decoration when a workflow or step is declared in a way wfctl cannot run.

    Both a ``TypeError`` (as agent-framework raises for a step that is not ``async``) and a
    ``ValueError`` (as it raises for a workflow with more than one message parameter), so
    ported ``except`` clauses of either kind keep working.
    """


class ReplayInterrupted(WfctlError):
    """Raised when Ctrl-C paused or aborted a replay, so there is no report to show.

    The replay run itself stays in the store, resumable like any interrupted run.
    """


class WorkflowExitError(WfctlError):
    """Raised in place of a ``SystemExit`` that workflow code raised (``sys.exit()``, ``exit()``).

    Workflow code cannot end the process that runs it: the run fails with this error (recorded
    in its ``failed`` checkpoint, like any exception of a step or of the body) and the caller
    goes on. ``code`` is the exit status the code asked for; ``where`` is the step key, or
    ``the workflow body``.
    """

    def __init__(self, code: object, where: str) -> None:
        self.code = code
        self.where = where
        super().__init__(
            f"SystemExit({code!r}) raised in {where}: workflow code cannot exit the process; "
            "raise an exception to fail the run"
        )


class AttemptsExhaustedError(WfctlError):
    """Raised by a step call whose retries were used up before the run was resumed.

    A step with ``Retry(attempts=n)`` makes at most ``n`` attempts in a run, counting those
    made before a crash or a stop: an attempt that was started and never ended (the process was
    killed in it) counts as failed. When a resumed run reaches such a call with no attempt
    left, the call is not executed again: it raises this error instead of the step's own
    exception (which ended with the process that raised it). ``key`` is the call's key,
    ``attempts`` how many were made, ``last`` what the last one ended with (``Type: message``).
    """

    def __init__(self, key: str, attempts: int, last: str) -> None:
        self.key = key
        self.attempts = attempts
        self.last = last
        super().__init__(
            f"step {key}: all {attempts} attempts were made before this resume (the last: "
            f"{last}); resume the failed run to give it its attempts again"
        )


class WorkflowLoadError(WfctlError):
    """Raised when a workflow target (``file.py:name``, ``module:name``) cannot be loaded."""


class UntrustedTargetError(WorkflowLoadError):
    """Raised when ``resume`` or ``replay`` refuses to import the target a store recorded.

    Two causes, both before any code is imported: the target's code lies inside the store
    itself (a store is data; it never supplies code), or the store or the run's directory is
    owned by another user who has not been trusted (``--trust-store``, ``trusted_stores`` in
    ``wfctl.toml``). Unlike its parent :class:`WorkflowLoadError`, nothing was wrong with the
    code: wfctl declined to run it. ``--target`` names the code yourself and avoids both.
    """

    def __init__(self, target: str, run_id: str, reason: str, remedy: str) -> None:
        self.target = target
        self.run_id = run_id
        self.reason = reason
        super().__init__(
            f"refusing to import {target!r}, the target run {run_id!r} recorded: {reason}; {remedy}"
        )


class RunArgumentError(WfctlError, ValueError):
    """Raised when ``Workflow.run`` gets arguments that contradict each other or the workflow.

    For example a message together with ``checkpoint_id`` or ``responses`` (a restore runs on
    the message its root recorded), no message for a workflow whose parameter has no default,
    or a message for a workflow that takes none. Raised before anything is stored. A
    ``ValueError``, as agent-framework raises for the same mistakes.
    """


class AnswerTypeError(WfctlError, ValueError):
    """Raised when an answer does not fit the ``response_type`` its request declared.

    Raised before the answer is recorded: the run stays paused on the same request. (If the
    code changed since the pause and a recorded answer no longer fits the type the request
    declares now, it is raised inside the run, at the request, and the run fails.) Unlike
    :class:`RunStateError`, which refuses answers to requests that are not pending, the request
    is right and the value is wrong.
    """

    def __init__(self, key: str, expected: str, value: object, reason: str = "") -> None:
        self.key = key
        self.expected = expected
        self.value = value
        self.reason = reason
        shown = repr(value)
        if len(shown) > 80:
            shown = shown[:77] + "..."
        text = f"answer to {key!r} must be {expected}, got {shown}"
        super().__init__(f"{text} ({reason})" if reason else text)
