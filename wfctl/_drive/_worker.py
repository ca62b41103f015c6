"""``wfctl worker``: take runs from a store and drive each to its end or a pause.

A worker loops: it claims runs (:meth:`~wfctl.storage.RunStore.claim_run`, up to
``concurrency`` at a time), loads each run's workflow from the target its root recorded -- only
if that code lies under one of the worker's ``workflows`` directories -- and continues the run
under the lease it claimed, as ``wfctl resume`` continues an interrupted run. Queued runs
(``wfctl submit``) start; runs whose driver died are recovered. Several workers, in as many
processes and on as many machines as share the store, share its runs: each is driven by one
of them at a time (the store's lease says which).

A run the worker will not drive (its code lies elsewhere, cannot be loaded, or changed since
the run was written) is given back, left alone for the rest of this worker's life and reported
once. A run the store failed under (its lease lost with its connection to the server, in a
server restart or a network cut; the server unreachable) is not: it ends with ``error`` and is
claimed again, by this worker or another, once the server answers (a new lease, under a new
fence). A worker that reached its store once waits for it through an outage, looking again
every ``poll`` seconds.

SIGTERM, SIGHUP and the first Ctrl-C stop the claiming and ask every run being driven to pause
at its next step boundary, as Ctrl-C does for ``wfctl run``; the worker waits for them and ends.
A second Ctrl-C cancels the runs (each stays resumable from its last checkpoint).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from wfctl._engine._admission import continue_run
from wfctl._engine._events import error_message
from wfctl._engine._restore import load_folded
from wfctl._engine._run import RunOptions
from wfctl._engine._trust import CodeRule, recorded_code_check
from wfctl._engine._workflow import Workflow
from wfctl._errors import LeaseLostError, StoreLocationError, WfctlError
from wfctl._inspect._documents import document, epoch_time
from wfctl._records._payloads import HANDOFF, RootPayload
from wfctl._storage._open import is_url, open_storage
from wfctl._storage._protocol import RunLease, RunStore

from ._interrupts import PAUSE_SIGNALS
from ._loader import load_workflow

__all__ = ["WorkerEvent", "WorkerReport", "run_worker"]


@dataclass(frozen=True, slots=True)
class WorkerEvent:
    """One thing a worker did, as it happened.

    ``kind`` is ``taken`` (a run claimed, about to be driven), ``ended`` (``status`` says how:
    ``completed``, ``failed``, ``paused`` for answers, ``interrupted`` when it paused for the
    worker's stop or a ``wfctl pause``, ``cancelled`` by ``wfctl cancel`` (``reason`` names who
    asked), ``aborted`` by a second Ctrl-C, ``error`` when the
    store failed under it: it is claimed again once the store answers), ``refused`` (a run
    left alone; ``reason`` says why), ``unreachable`` (the store stopped answering; ``reason``
    says how: the worker looks again every ``poll`` seconds), ``stopping`` (``reason`` names
    the signal) or ``idle`` (no run left to claim and nothing driven: an ``--exit-when-idle``
    worker ends).
    """

    kind: str
    run_id: str | None = None
    workflow: str | None = None
    status: str | None = None
    reason: str | None = None
    head_checkpoint_id: str | None = None
    at: float = field(default_factory=time.time)

    def to_json(self) -> dict[str, Any]:
        """Return the ``wfctl/worker-event@1`` document (one JSON line; see docs/json.md)."""
        return document(
            "worker-event",
            {
                "event": self.kind,
                "run_id": self.run_id,
                "workflow": self.workflow,
                "status": self.status,
                "reason": self.reason,
                "head_checkpoint_id": self.head_checkpoint_id,
                "happened_at": epoch_time(self.at),
            },
        )


@dataclass(frozen=True, slots=True)
class WorkerReport:
    """How a worker ended: how many runs it took, how each ended, and whether it was aborted."""

    store: str
    taken: int
    ended: dict[str, int]
    refused: tuple[str, ...]
    stopped_by: str | None
    aborted: bool


WorkerListener = Callable[[WorkerEvent], None]


class _DrainingLease:
    """A claimed run's lease that also answers "pause" once the worker is stopping.

    The pause it asks for hands the run over (:data:`~wfctl._records._payloads.HANDOFF`): any worker
    may take it next. A pause someone asked for (``wfctl pause``) stays a plain interrupt.
    """

    def __init__(self, lease: RunLease, stopping: asyncio.Event) -> None:
        self._lease = lease
        self._stopping = stopping
        #: The reason :meth:`pause_reason` last gave (what the pause record says).
        self.given: str | None = None

    @property
    def run_id(self) -> str:
        return self._lease.run_id

    def pause_requested(self) -> bool:
        return self._stopping.is_set() or self._lease.pause_requested()

    def pause_reason(self) -> str:
        """The reason the engine records for a pause without requests."""
        handoff = self._stopping.is_set() and not self._lease.pause_requested()
        self.given = HANDOFF if handoff else "interrupt"
        return self.given

    async def release(self) -> None:
        await self._lease.release()


class _Worker:
    """One worker's state on its event loop (see :func:`run_worker`)."""

    def __init__(
        self,
        storage: RunStore,
        workflows: Sequence[Path],
        drain_timeout: float,
        emit: WorkerListener,
        poll: float,
        *,
        named: bool,
    ) -> None:
        self.storage = storage
        self.poll = poll
        self.roots = [Path(os.path.realpath(path)) for path in workflows]
        #: Whether the user named them (--workflows), not the default current directory.
        self.named = named
        self.options = RunOptions(drain_timeout=drain_timeout, event_history=0)
        self.emit = emit
        self.stopping = asyncio.Event()
        self.refused: dict[str, str] = {}
        #: Runs the store failed under, and when they may be claimed again (monotonic time).
        self.resting: dict[str, float] = {}
        #: The store's failure while claiming, until a claim succeeds again (an outage).
        self.outage: str | None = None
        #: The runs being driven (never claimed again meanwhile).
        self.driven: set[str] = set()
        #: Whether a claim has succeeded (a store never reached is refused, not waited for).
        self.reached = False
        self.loaded: dict[tuple[str, str | None], Workflow] = {}
        self.taken = 0
        self.ended: dict[str, int] = {}

    def _refuse(self, run_id: str, workflow: str | None, reason: str) -> None:
        self.refused[run_id] = reason
        self.emit(WorkerEvent("refused", run_id, workflow, reason=reason))

    def _load(self, target: str, run_id: str, started_in: str | None) -> Workflow:
        """Load ``target``, once per worker, if the one rule for recorded code allows it
        (:func:`wfctl._engine._trust.recorded_code_check`): its code lies under the worker's
        directories, outside a file store, is not Python's own, and is not found only through
        the current directory where the run was not started, unless --workflows named it.

        Raises:
            UntrustedTargetError: the code is refused.
            WorkflowLoadError: it cannot be loaded.
        """
        key = (target, started_in)  # the rule reads both
        workflow = self.loaded.get(key)
        if workflow is not None:
            return workflow
        store = self.storage.location
        rule = CodeRule(
            None if is_url(store) else Path(store),
            tuple(self.roots),
            "--workflows",
            named=self.named,
            remedy="start the worker with --workflows naming its directory",
        )
        workflow = load_workflow(
            target, before_import=recorded_code_check(target, run_id, started_in, rule)
        )
        self.loaded[key] = workflow
        return workflow

    async def drive(self, lease: RunLease) -> None:
        """Drive one claimed run to its end or a pause, or give it back and refuse it."""
        run_id = lease.run_id
        name: str | None = None
        try:
            # Read once, under the claimed lease: the root names the code, and the run goes on
            # from what was read (continue_run does not read it again).
            loaded = await load_folded(self.storage, run_id)
            root = loaded[0][0]
            name = root.workflow_name
            payload = RootPayload.of(root)
            target = payload.target or payload.workflow
            if not target:
                raise WfctlError(f"run {run_id!r} records no workflow target")
            bound = self._load(target, run_id, payload.started_in).build(
                checkpoint_storage=self.storage
            )
        except Exception as exc:  # its code cannot be imported: leave the run alone
            await lease.release()
            if _store_failed(exc):  # not the run's fault: it is claimed again later
                self._rest(WorkerEvent("ended", run_id, name, "error", _describe(exc)))
                return
            self._refuse(run_id, name, _describe(exc))
            return
        self.taken += 1
        self.emit(WorkerEvent("taken", run_id, name))
        held = _DrainingLease(lease, self.stopping)
        try:
            driven = await continue_run(bound, run_id, None, {}, self.options, None, held, loaded)
        except asyncio.CancelledError:  # a second Ctrl-C: it stays at its last checkpoint
            self._end(WorkerEvent("ended", run_id, name, "aborted"))
            raise
        except Exception as exc:
            if _store_failed(exc):  # its lease lost, the server gone: claimed again later
                self._rest(WorkerEvent("ended", run_id, name, "error", _describe(exc)))
                return
            if isinstance(exc, WfctlError):  # refused before the body ran (its code changed)
                self._refuse(run_id, name, str(exc))
                return
            # Anything else failed under it: leave it as it is.
            self.refused[run_id] = str(exc)
            self._end(WorkerEvent("ended", run_id, name, "error", _describe(exc)))
            return
        result = driven.result
        status: str = result.status
        reason = _describe(result.error) if result.error is not None else None
        if status == "paused" and not result.get_request_info_events():
            status = "interrupted"
            if held.given == HANDOFF:
                reason = HANDOFF
        head = result.checkpoint_id or None
        self._end(WorkerEvent("ended", run_id, name, status, reason, head))

    def _rest(self, event: WorkerEvent) -> None:
        """End a run the store failed under; it is not claimed again for ``poll`` seconds (a
        store that keeps failing it is not asked again at once)."""
        assert event.run_id is not None
        self.resting[event.run_id] = time.monotonic() + self.poll
        self._end(event)

    def _end(self, event: WorkerEvent) -> None:
        status = event.status or ""
        self.ended[status] = self.ended.get(status, 0) + 1
        self.emit(event)

    async def claim(self) -> RunLease | None:
        """Claim a run not refused, resting or being driven; None if there is none, or if the
        store that answered before does not answer now (``unreachable`` is reported once an
        outage).

        Raises:
            StoreLocationError: the store cannot be used, or cannot be reached and never could
                be by this worker.
        """
        now = time.monotonic()
        for run_id in [r for r, until in self.resting.items() if until <= now]:
            del self.resting[run_id]
        try:
            # Nor a run this worker drives: after a server restart its lease is gone (the run
            # looks free) while its step still runs here, until its next save finds it out.
            skip = [*self.refused, *self.resting, *self.driven]
            lease = await self.storage.claim_run(exclude=skip)
        except StoreLocationError as exc:
            if not (self.reached and exc.unreachable):
                raise
            if self.outage is None:
                self.outage = str(exc)
                self.emit(WorkerEvent("unreachable", reason=str(exc)))
            return None
        self.reached, self.outage = True, None
        return lease

    async def work(self, concurrency: int, exit_when_idle: bool) -> None:
        """Claim and drive runs until stopped (or idle, with ``exit_when_idle``)."""
        #: Each run being driven, by the task driving it.
        driving: dict[asyncio.Task[None], str] = {}
        changed = asyncio.Event()

        def done(task: asyncio.Task[None]) -> None:
            self.driven.discard(driving.pop(task))
            changed.set()

        try:
            while not self.stopping.is_set():
                changed.clear()
                while len(driving) < concurrency and not self.stopping.is_set():
                    lease = await self.claim()
                    if lease is None:
                        break
                    task = asyncio.create_task(self.drive(lease))
                    driving[task] = lease.run_id
                    self.driven.add(lease.run_id)
                    task.add_done_callback(done)
                idle = not driving and not self.resting and self.outage is None
                if idle and exit_when_idle and not self.stopping.is_set():
                    self.emit(WorkerEvent("idle"))
                    return
                waits = [asyncio.ensure_future(e.wait()) for e in (changed, self.stopping)]
                try:
                    await asyncio.wait(
                        waits, timeout=self.poll, return_when=asyncio.FIRST_COMPLETED
                    )
                finally:
                    for wait in waits:
                        wait.cancel()
        except asyncio.CancelledError:  # a second Ctrl-C: abort the runs too
            for task in driving:
                task.cancel()
            raise
        finally:
            if driving:  # stopping: the runs pause at their next step (aborted: cancelled)
                await asyncio.gather(*driving, return_exceptions=True)


def _store_failed(error: BaseException) -> bool:
    """Whether ``error`` is the store's failure, not the run's: its lease lost (its session
    with the server ended), or the server unreachable. Such a run is claimed again later."""
    return isinstance(error, LeaseLostError) or _unreachable(error)


def _unreachable(error: BaseException) -> bool:
    """Whether ``error`` says the store's server could not be reached (it may answer later)."""
    return isinstance(error, StoreLocationError) and error.unreachable


def _describe(error: BaseException) -> str:
    """Return a wfctl error's own message, any other as ``Type: message``."""
    if isinstance(error, WfctlError):
        return str(error)
    return f"{type(error).__name__}: {error_message(error)}"


def run_worker(
    store: str | os.PathLike[str],
    *,
    concurrency: int = 1,
    workflows: Sequence[str | os.PathLike[str]] = (),
    exit_when_idle: bool = False,
    poll: float = 1.0,
    drain_timeout: float = 30.0,
    must_exist: bool = True,
    on_event: WorkerListener | None = None,
) -> WorkerReport:
    """Take runs from ``store`` and drive them until a signal stops the worker.

    Args:
        concurrency: how many runs are driven at once.
        workflows: the directories whose code the worker may import (default: the current
            directory); a run whose recorded target lies elsewhere is left alone.
        exit_when_idle: end once no run can be claimed and none is being driven.
        poll: seconds between looks for new runs while there is nothing to claim; also how
            long a run the store failed under rests before it is claimed again, and how often
            a store that stopped answering is tried again.
        drain_timeout: on a stop, how long running steps may take before they are cancelled.
        must_exist: refuse a store that does not exist (see :func:`open_storage`).
        on_event: told each :class:`WorkerEvent` as it happens. If it raises, the worker
            stops as a signal stops it (no run taken after; the runs being driven pause at
            their next step, for any worker to take over), tells it nothing more, and raises
            that error once the runs have paused.

    Raises:
        StoreLocationError: the store cannot be opened.
        Exception: what ``on_event`` raised.
    """
    if concurrency < 1:
        raise WfctlError(f"concurrency must be at least 1, not {concurrency}")
    storage = open_storage(store, must_exist=must_exist)
    roots = [Path(path) for path in workflows] or [Path.cwd()]
    stopped_by: list[str] = []
    interrupts = 0
    #: What ``on_event`` raised, once it did (its output went away, say): nobody can be told
    #: any more what the worker does, so it stops as a signal would stop it, then raises it.
    unheard: list[Exception] = []

    def emit(event: WorkerEvent) -> None:
        if on_event is None or unheard:
            return
        try:
            on_event(event)
        except Exception as exc:
            unheard.append(exc)
            worker.stopping.set()  # the runs being driven pause at their next step, handed over

    worker = _Worker(storage, roots, drain_timeout, emit, poll, named=bool(workflows))

    def report(aborted: bool) -> WorkerReport:
        stopped = stopped_by[0] if stopped_by else ("SIGINT" if aborted else None)
        ended = dict(worker.ended)
        return WorkerReport(
            storage.location, worker.taken, ended, tuple(worker.refused), stopped, aborted
        )

    async def main() -> None:
        loop = asyncio.get_running_loop()
        task = asyncio.current_task()
        assert task is not None

        def stop(name: str) -> None:
            nonlocal interrupts
            if name == "SIGINT":
                interrupts += 1
                if interrupts > 1:
                    task.cancel()  # the second Ctrl-C: abort
                    return
            if worker.stopping.is_set():
                return
            stopped_by.append(name)
            worker.stopping.set()
            emit(WorkerEvent("stopping", reason=name))

        installed = []
        with contextlib.suppress(NotImplementedError, RuntimeError, ValueError):
            for signum in (signal.SIGINT, *PAUSE_SIGNALS):
                loop.add_signal_handler(signum, stop, signum.name)
                installed.append(signum)
        try:
            await worker.work(concurrency, exit_when_idle)
        finally:
            for signum in installed:
                loop.remove_signal_handler(signum)
            await storage.aclose()

    try:
        asyncio.run(main())
    except (asyncio.CancelledError, KeyboardInterrupt):
        return report(aborted=True)
    if unheard:
        raise unheard[0]
    return report(aborted=False)
