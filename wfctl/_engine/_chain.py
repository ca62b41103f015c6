"""The checkpoint chain of one run: the single serialized path every save goes through.

Every commit reads the head, writes the next checkpoint (``seq = head + 1``, parent = head) and
advances the head inside one lock, so a run's checkpoints form one linear chain whatever the
order in which steps finish or saves return. Step results queue up and a committer task writes
everything queued in one checkpoint (group commit): when many steps finish while a save is in
flight, or in the same loop iteration, one record covers them all. Saves run in their own task
and callers wait through :func:`asyncio.shield`, so cancelling a caller never loses a save;
:meth:`CheckpointChain.drain` waits for everything in flight before a run returns.

A step that no other task of the run could join in a group commit (``solo``: the run's body
alone, sequential code) starts its commit at once, in the caller, instead of in a new task.
This is done only for a storage whose ``save`` declares it never waits (the file and memory
stores: ``_SAVES_WITHOUT_WAITING``), or that up to its first wait it enters nothing bound to
the current task and waits only on plain futures (PostgreSQL: ``_SAVE_STARTS_ANYWHERE``); any
other (a user's) always commits in the committer task, since its save might enter a context
bound to the current task (``asyncio.timeout``) before its first wait. A save that never waits
runs to its end in the caller, with no task and no turn of the event loop; the caller then lets
the loop turn if ``TURN_EVERY`` has passed since it last did. When a save started in the caller
waits (a PostgreSQL save always does, for its reply), the rest of it is resumed by the futures
it waits on, with no task (``_SoloSave``); meanwhile the chain's committer is a future that ends
with it, which callers wait for as for a committer task (shielded, drained), and the steps that
finish while it waits queue for a committer task started when it ends.
Nothing can cancel the first part: a cancellation only lands where a coroutine waits.
"""

from __future__ import annotations

import asyncio
import contextvars
import time
from collections.abc import Callable, Coroutine, Generator, Sequence
from datetime import UTC, datetime
from typing import Any

from wfctl._errors import JournalChangedError
from wfctl._records._attempts import AttemptRecord, AttemptStart, StepFailure
from wfctl._records._checkpoint import (
    DELTA_VERSION,
    FORMAT_VERSION,
    LEAN_VERSION,
    Checkpoint,
    Kind,
    checkpoint_id_for,
    checkpoint_of,
)
from wfctl._records._payloads import Payload, StepPayload
from wfctl._records._recorded import StepRecord
from wfctl._records._refs import Referrer
from wfctl._storage._protocol import CheckpointStorage

__all__ = ["CheckpointChain", "utc_now"]


#: The second ``utc_now`` last formatted, and its text up to the seconds: a run commits many
#: checkpoints a second, and formatting a whole datetime each time was a tenth of a step's CPU.
_second: tuple[int, str] = (-1, "")


def utc_now() -> str:
    """Return the current UTC time as an ISO 8601 string (microseconds).

    The text ``datetime.now(UTC).isoformat(timespec="microseconds")`` gives.
    """
    global _second  # one cache for the process: a tuple, replaced whole
    seconds, micros = divmod(time.time_ns() // 1000, 1_000_000)
    second, text = _second
    if second != seconds:
        text = datetime.fromtimestamp(seconds, UTC).strftime("%Y-%m-%dT%H:%M:%S")
        _second = (seconds, text)
    return f"{text}.{micros:06d}+00:00"


#: Seconds a run may go on committing steps in their caller before it lets the event loop
#: turn (signal handlers, the supervisor's pause watch, a stream's reader, other runs).
TURN_EVERY = 0.001
_monotonic = time.monotonic


class CheckpointChain:
    """Appends checkpoints to one run's chain, one at a time, in seq order."""

    def __init__(
        self,
        storage: CheckpointStorage,
        run_id: str,
        workflow_name: str,
        *,
        head: Checkpoint | None = None,
        origin: tuple[str, str] | None = None,
        on_commit: Callable[[Checkpoint], None] | None = None,
        clock: Callable[[], str] = utc_now,
        version: int = FORMAT_VERSION,
    ) -> None:
        self._storage = storage
        #: Whether a commit may start in its caller (see the module docstring): only for the
        #: stores that declare their saves never wait. Another storage's save might enter a
        #: context bound to the current task (``asyncio.timeout``) before its first wait,
        #: which must then be the committer task, not the caller.
        self._inline = _saves_without_waiting(storage)
        self.run_id = run_id
        self.workflow_name = workflow_name
        self.head = head
        #: The record format version of every checkpoint this chain commits: the run's root's
        #: (it says which hash the step records' argument digests are; see ``FORMAT_VERSION``).
        self.version = version
        #: Which results a later step argument may refer to (format version 3 on).
        self._referrer = (
            Referrer(deltas=version >= DELTA_VERSION) if version >= LEAN_VERSION else None
        )
        self._origin = origin
        self.on_commit = on_commit
        self._clock = clock
        self._lock = asyncio.Lock()
        self._queued: list[tuple[StepRecord, asyncio.Future[None]]] = []
        self._attempts: list[tuple[AttemptRecord | AttemptStart, asyncio.Future[None]]] = []
        #: Step calls that failed for good, each with its error, written with the next commit
        #: (nobody waits for them: see :meth:`note_failure`).
        self._failures: list[tuple[StepFailure, BaseException]] = []
        #: Calls served from the cache since the last checkpoint: a count, so no record grows
        #: with the number of cached steps (a resume of 100,000 would list them all).
        self._served = 0
        #: The commit going on (a task, or a solo save's end: see :class:`_SoloSave`).
        self._committer: asyncio.Future[None] | None = None
        #: Whether the caller of a commit is the only task of the run that could queue a
        #: step result now (see the module docstring); None: never assumed.
        self.solo: Callable[[], bool] | None = None
        #: When a commit made in its caller last let the loop turn (``time.monotonic``).
        self._turned = 0.0
        self._saves: set[asyncio.Task[Checkpoint]] = set()
        #: The step records committed through this chain, in commit order, when kept
        #: (``keep_committed``: replay compares them; a plain run lets them go).
        self.keep_committed = False
        self.committed: list[StepRecord] = []
        #: The step failures committed through this chain, when kept (as ``committed``).
        self.committed_failures: list[StepFailure] = []
        #: Set when the storage found the run's journal changed under this writer: nothing
        #: more can be committed, so the run executes no further step (and fails with it).
        self.lost: JournalChangedError | None = None

    @property
    def head_id(self) -> str | None:
        """The id of the newest committed checkpoint (None before the root)."""
        return self.head.checkpoint_id if self.head else None

    def hold_read(self, held: Sequence[tuple[int, int, list[Any]]]) -> None:
        """Let the next step records refer to the results of records read back from the store
        before this chain goes on after them (a resume: see ``Referrer.hold_read``)."""
        if self._referrer is not None:
            self._referrer.hold_read(held)

    def note_served(self) -> None:
        """Count a call served from the cache; the next checkpoint records how many there were."""
        self._served += 1

    async def commit_step(self, record: StepRecord) -> None:
        """Queue a step's result and return once a checkpoint holding it is durable.

        Raises:
            Exception: whatever the storage raised while saving that checkpoint.
        """
        if (
            self._committer is None
            and self._inline
            and not (self._queued or self._attempts or self._failures or self._saves)
        ):
            solo = self.solo
            if solo is not None and solo():
                await self._commit_solo(record)
                return
        await self._enqueue(self._queued, record)

    async def _commit_solo(self, record: StepRecord) -> None:
        """Commit ``record`` alone, in the caller (see the module docstring).

        Nothing is queued, no committer runs and no run-level save is in flight, so no other
        save holds the lock or waits for it, and none can start before this one waits: the
        save is made without the lock, with no queue and no future. Should it wait, the rest
        of it is driven by the futures it waits on (:class:`_SoloSave`), the chain's committer
        is a future that ends with it, and a run-level save waits for that (``flush``) before
        it takes the lock; what was queued meanwhile then goes to a committer task.
        """
        checkpoint = self._next(Kind.STEP, {"steps": [record.to_json()]})
        context = contextvars.Context()  # empty: a commit takes no scope of the run
        save = self._storage.save(checkpoint)
        try:
            waiting = context.run(save.send, None)
        except StopIteration:
            self._saved(checkpoint, record)
            now = _monotonic()
            if now - self._turned >= TURN_EVERY:  # let the loop turn now and then
                self._turned = now
                await asyncio.sleep(0)
            return
        except JournalChangedError as exc:
            self.lost = exc
            raise
        loop = asyncio.get_running_loop()
        future: asyncio.Future[None] = loop.create_future()
        _SoloSave(self, checkpoint, record, save, context, future).wait_on(waiting)
        # Cancelling this caller cancels the future only, never the save (see _enqueue).
        await future

    def _solo_saved(
        self, checkpoint: Checkpoint, record: StepRecord, error: BaseException | None
    ) -> None:
        """End a solo commit whose save waited: advance the head (or record the loss), then
        let the committer go on with what was queued meanwhile (see :class:`_SoloSave`)."""
        if error is None:
            self._saved(checkpoint, record)
        elif isinstance(error, JournalChangedError):
            self.lost = error
        ended = self._committer
        self._committer = None
        if self._queued or self._attempts or self._failures:
            self._committer = asyncio.Task(self._commit_queued(), context=contextvars.Context())
        if ended is not None and not ended.done():
            ended.set_result(None)

    async def commit_attempt(self, attempt: AttemptRecord | AttemptStart) -> None:
        """Queue a failed attempt of a step call, or the start of one; return once a
        checkpoint holding it is durable.

        It goes into the same group commit as step results (a ``step`` record's ``attempts``,
        or ``started``).
        """
        await self._enqueue(self._attempts, attempt)

    def note_withdrawn(self, start: AttemptStart) -> None:
        """Keep an attempt the run paused in (``start``, withdrawn) to write with the next
        commit, the pause's: nobody waits for it, as for :meth:`note_failure`."""
        future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        future.add_done_callback(_retrieved)
        self._attempts.append((start, future))

    def note_failure(self, failure: StepFailure, error: BaseException) -> None:
        """Keep a step call's failure (its ``error``) to write with the next commit.

        Nothing waits for it: the error goes on to the workflow at once. If the workflow
        catches it, the next step commit carries it, or a step record of its own is written
        before the run's next run-level checkpoint (:meth:`commit`); if the run fails with
        ``error`` itself, the ``failed`` record says it and it is dropped (:meth:`drop_failure`).
        """
        self._failures.append((failure, error))

    def drop_failure(self, error: BaseException) -> None:
        """Forget the failure kept with ``error``: the run's ``failed`` record names it."""
        self._failures = [(f, e) for f, e in self._failures if e is not error]

    async def _enqueue(self, queue: list[tuple[Any, asyncio.Future[None]]], entry: Any) -> None:
        future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        queue.append((entry, future))
        if self._committer is None:
            # In an empty context: a commit must not take a scope of the run (a task it starts
            # would be keyed as the run's).
            context = contextvars.Context()
            solo = self.solo
            if self._inline and solo is not None and solo():
                self._commit_now(context)
            else:
                self._committer = asyncio.Task(self._commit_queued(), context=context)
            if future.done():  # committed without waiting: let the loop turn now and then
                now = _monotonic()
                if now - self._turned >= TURN_EVERY:  # (signals, the supervisor, a stream)
                    self._turned = now
                    await asyncio.sleep(0)
        # The future only reports the outcome: cancelling this caller cancels the future, not
        # the committer's save, which goes on and is drained before the run returns.
        await future

    def _commit_now(self, context: contextvars.Context) -> None:
        """Commit what is queued in the caller, up to the commit's first wait.

        If the storage has to wait, the rest of the commit becomes the committer task.
        """
        commit = self._commit_queued()
        try:
            waiting = context.run(commit.send, None)
        except StopIteration:
            return
        self._committer = asyncio.Task(_resume(commit, waiting), context=context)

    async def commit(self, payload: Payload) -> Checkpoint:
        """Commit a run-level checkpoint (root, resume, pause, completed, failed) of ``payload``.

        Step results already queued are committed first, so this checkpoint becomes the head,
        and so are step failures kept since the last commit (:meth:`note_failure`).
        """
        await self.flush()
        if self._failures or self._attempts:
            self._committer = asyncio.Task(self._commit_queued(), context=contextvars.Context())
            await self.flush()
        save = asyncio.Task(
            self._save(payload.KIND, payload.to_json()), context=contextvars.Context()
        )
        self._saves.add(save)
        save.add_done_callback(self._saves.discard)
        return await asyncio.shield(save)

    async def flush(self) -> None:
        """Wait until every queued step result has been committed (or has failed to be)."""
        while self._committer is not None:
            await asyncio.shield(self._committer)

    async def drain(self) -> None:
        """Wait for every save in flight, even if the caller is being cancelled."""
        while self._committer is not None or self._saves:
            pending = [t for t in (self._committer, *self._saves) if t is not None]
            try:
                await asyncio.wait(pending)
            except asyncio.CancelledError:
                # The saves keep going in their own tasks; a run never returns before they end.
                continue

    async def _commit_queued(self) -> None:
        try:
            while self._queued or self._attempts or self._failures:
                batch, self._queued = self._queued, []
                attempts, self._attempts = self._attempts, []
                failures, self._failures = self._failures, []
                futures = [f for _, f in batch] + [f for _, f in attempts]
                payload = StepPayload(
                    [r for r, _ in batch],
                    [a for a, _ in attempts if isinstance(a, AttemptRecord)],
                    [f for f, _ in failures],
                    [a for a, _ in attempts if isinstance(a, AttemptStart)],
                )
                try:
                    await self._save(Kind.STEP, payload.to_json())
                except Exception as exc:
                    for future in futures:
                        if not future.done():
                            future.set_exception(exc)
                else:
                    if self.keep_committed:
                        self.committed.extend([record for record, _ in batch])
                        self.committed_failures.extend([failure for failure, _ in failures])
                    for future in futures:
                        if not future.done():
                            future.set_result(None)
        finally:
            self._committer = None

    async def _save(self, kind: Kind, data: dict[str, Any]) -> Checkpoint:
        async with self._lock:
            checkpoint = self._next(kind, data)
            try:
                await self._storage.save(checkpoint)
            except JournalChangedError as exc:
                self.lost = exc
                raise
            self.head = checkpoint
            if self._referrer is not None:
                self._referrer.note(checkpoint)
        if self.on_commit is not None:
            self.on_commit(checkpoint)
        return checkpoint

    def _next(self, kind: Kind, data: dict[str, Any]) -> Checkpoint:
        """Return the checkpoint of ``data`` that extends the head (saved under the lock).

        A step argument equal to the result of a step in a durable record before is stored as
        a reference to it (format version 3, see ``wfctl._records._refs``).
        """
        if self._served:
            data["served"], self._served = self._served, 0
        head = self.head
        referrer = self._referrer
        if referrer is not None and referrer.holding and kind == Kind.STEP:
            referrer.refer(data, head.seq + 1 if head is not None else 0)
        origin_run, origin_ckpt = self._origin or (None, None)
        return checkpoint_of(
            self.run_id,
            head.seq + 1 if head is not None else 0,
            kind,
            self.workflow_name,
            self._clock(),
            checkpoint_id_for(self.run_id, head.seq) if head is not None else None,
            origin_run,
            origin_ckpt,
            data,
            self.version,
        )

    def _saved(self, checkpoint: Checkpoint, record: StepRecord) -> None:
        """Advance the head to a solo commit's ``checkpoint``, as :meth:`_save` and
        ``_commit_queued`` do after a save."""
        self.head = checkpoint
        if self._referrer is not None:
            self._referrer.note(checkpoint)
        if self.on_commit is not None:
            self.on_commit(checkpoint)
        if self.keep_committed:
            self.committed.append(record)


def _retrieved(future: asyncio.Future[None]) -> None:
    """Read the outcome of a commit nobody waits for (asyncio would log a lost error)."""
    if not future.cancelled():
        future.exception()


def _saves_without_waiting(storage: CheckpointStorage) -> bool:
    """Whether the class that defines ``storage.save`` declares its save may start in a caller.

    It does by declaring that it never waits (``_SAVES_WITHOUT_WAITING``), or that up to its
    first wait it enters nothing bound to the current task and waits only on plain futures
    (``_SAVE_STARTS_ANYWHERE``). A subclass that overrides ``save`` inherits neither.
    """
    owner = next((c for c in type(storage).__mro__ if "save" in vars(c)), None)
    if owner is None:
        return False
    declared = vars(owner)
    return (
        declared.get("_SAVES_WITHOUT_WAITING") is True
        or declared.get("_SAVE_STARTS_ANYWHERE") is True
    )


class _SoloSave:
    """The rest of a solo commit whose save waited, driven by the futures it waits on.

    Each future the save waits on resumes it when done (a callback in the commit's empty
    context), as a task would, until the save returns; no task is made and the event loop
    turns once less per commit. Meanwhile the chain's committer is a plain future that ends
    with the save, which ``flush`` and ``drain`` wait for as for a task. Nothing can cancel
    the save: no task waits on the futures it waits on (its caller waits on ``future``).
    Should it wait on anything but a future (a bare ``yield``), a task goes on from there.
    """

    __slots__ = ("chain", "checkpoint", "context", "future", "record", "save")

    def __init__(
        self,
        chain: CheckpointChain,
        checkpoint: Checkpoint,
        record: StepRecord,
        save: Coroutine[Any, Any, None],
        context: contextvars.Context,
        future: asyncio.Future[None],
    ) -> None:
        self.chain = chain
        self.checkpoint = checkpoint
        self.record = record
        self.save = save
        self.context = context
        self.future = future
        chain._committer = future.get_loop().create_future()

    def wait_on(self, waiting: Any) -> None:
        """Resume the save once ``waiting`` (what it yielded) is done."""
        if getattr(waiting, "_asyncio_future_blocking", None) is True:
            waiting._asyncio_future_blocking = False
            waiting.add_done_callback(self._resume, context=self.context)
        else:
            asyncio.Task(self._in_task(waiting), context=self.context)

    def _resume(self, _: object) -> None:
        try:
            waiting = self.save.send(None)  # the future's outcome is raised in the save
        except StopIteration:
            self._end(None)
        except BaseException as exc:
            self._end(exc)
            if isinstance(exc, (KeyboardInterrupt, SystemExit)):
                raise
        else:
            self.wait_on(waiting)

    async def _in_task(self, waiting: Any) -> None:
        try:
            await _Resumed(self.save, waiting)
        except BaseException as exc:
            self._end(exc)
            if isinstance(exc, (KeyboardInterrupt, SystemExit)):
                raise
        else:
            self._end(None)

    def _end(self, error: BaseException | None) -> None:
        self.chain._solo_saved(self.checkpoint, self.record, error)
        future = self.future
        if future.done():  # its caller was cancelled
            return
        if error is None:
            future.set_result(None)
        elif isinstance(error, asyncio.CancelledError):
            future.cancel()
        else:
            future.set_exception(error)


async def _resume(coro: Coroutine[Any, Any, Any], waiting: Any) -> None:
    """Go on with ``coro``, started by hand and now waiting on ``waiting`` (a task's body)."""
    await _Resumed(coro, waiting)


class _Resumed:
    """Awaits the rest of a coroutine that was stepped by hand until it yielded ``waiting``.

    What the task running this sends or throws goes on to the coroutine (as ``yield from``
    would), so the coroutine waits on its future, is woken and can be cancelled as in a task.
    """

    __slots__ = ("coro", "waiting")

    def __init__(self, coro: Coroutine[Any, Any, Any], waiting: Any) -> None:
        self.coro = coro
        self.waiting = waiting

    def __await__(self) -> Generator[Any, Any, None]:
        coro, waiting = self.coro, self.waiting
        while True:
            try:
                sent = yield waiting
            except GeneratorExit:
                coro.close()
                raise
            except BaseException as exc:  # each goes on to the coroutine, as yield from would
                try:
                    waiting = coro.throw(exc)
                except StopIteration:
                    return
            else:
                try:
                    waiting = coro.send(sent)
                except StopIteration:
                    return
