"""Lineage verification: prove that every run's checkpoint history is one unbroken chain.

Each run is judged from one read of everything its storage holds for it
(:func:`~wfctl._storage._capabilities.read_run`), duplicates, gaps and unreadable records
included, so a fork is reported rather than hidden. A storage that verifies a run's records as
one chain while it reads them (``verified_records``: the file and PostgreSQL stores) has them
judged as they come, one at a time (:class:`_ChainCheck`), so a long run's verdict takes memory
that does not grow with it; a run that is not such a chain is then read whole, and judged as
above. Problems name the checkpoint and where it is stored (``<journal>:<line>`` for the file
storage) and say what is wrong; notes are findings that break nothing (a torn tail that was
never committed, a signature changed on purpose).
"""

from __future__ import annotations

import contextlib
import inspect
from collections import defaultdict
from collections.abc import AsyncGenerator, Coroutine, Sequence
from dataclasses import dataclass
from typing import Any

from wfctl._errors import CheckpointCorruptError, InvalidIdError, RunNotFoundError, WfctlError
from wfctl._records._checkpoint import (
    Checkpoint,
    Kind,
    checkpoint_id_for,
    split_checkpoint_id,
    validate_run_id,
)
from wfctl._records._payloads import RootPayload, payload_of
from wfctl._storage._base import read_problem
from wfctl._storage._capabilities import read_run
from wfctl._storage._protocol import JournalProblem, RunJournal
from wfctl._storage._spread import spread

from ._documents import document
from ._query import RunQuery

__all__ = ["LineageReport", "RunVerdict", "listed", "verify_lineage"]

#: Ids named in full in one problem; the rest are counted.
_MAX_LISTED = 10


@dataclass(frozen=True, slots=True)
class _Names:
    """What origin checks need of a run already read: the workflow name of each readable seq,
    kept as the seqs, the name most have and the others (not one entry per record)."""

    seqs: range | frozenset[int]
    name: str | None
    others: dict[int, str]

    def get(self, seq: int) -> str | None:
        """The workflow name of the record of ``seq``; None if none was readable."""
        return self.others.get(seq, self.name) if seq in self.seqs else None


#: The runs read so far (None: not found), by id.
_Seen = dict[str, _Names | None]
#: The note of a run that was removed after it was listed or read, before its check ended.
_REMOVED_WHILE_VERIFIED = "removed while it was being verified (by a gc or an rm)"


@dataclass(frozen=True, slots=True)
class RunVerdict:
    """The verdict on one run's lineage.

    ``head`` is the id of the run's last stored record (None if it has none); ``problems``
    break the lineage, ``notes`` do not.
    """

    run_id: str
    workflow_name: str | None
    checkpoints: int
    head: str | None
    problems: tuple[str, ...] = ()
    notes: tuple[str, ...] = ()

    @property
    def ok(self) -> bool:
        """Whether the run's lineage has no problem."""
        return not self.problems

    @property
    def removed(self) -> bool:
        """Whether the run was listed, then removed before its read (nothing was judged)."""
        return not self.problems and self.notes == (_REMOVED_WHILE_VERIFIED,)

    def to_json(self) -> dict[str, Any]:
        """Return the verdict as an item of the ``verify-lineage`` document's ``runs``."""
        return {
            "run_id": self.run_id,
            "workflow": self.workflow_name,
            "ok": self.ok,
            "checkpoint_count": self.checkpoints,
            "head_checkpoint_id": self.head,
            "problems": list(self.problems),
            "notes": list(self.notes),
        }


@dataclass(frozen=True, slots=True)
class LineageReport:
    """The verdicts of one verification, one per run, in the order they were checked."""

    runs: tuple[RunVerdict, ...] = ()

    @property
    def verified_count(self) -> int:
        """How many runs were read and judged (not those removed before their read)."""
        return sum(1 for verdict in self.runs if not verdict.removed)

    @property
    def ok(self) -> bool:
        """Whether at least one run was verified and no run has a problem.

        A report that verified nothing (no run selected, or every one removed before its
        read) is not ok: a check of nothing is not a pass.
        """
        return self.verified_count > 0 and all(verdict.ok for verdict in self.runs)

    def to_json(self) -> dict[str, Any]:
        """Return the ``wfctl/verify-lineage@1`` document (see docs/json.md)."""
        return document(
            "verify-lineage",
            {
                "ok": self.ok,
                "run_count": len(self.runs),
                "broken_run_count": sum(1 for verdict in self.runs if not verdict.ok),
                "runs": [verdict.to_json() for verdict in self.runs],
            },
        )


def listed(labels: Sequence[str]) -> str:
    """Return ``labels`` joined for a message, the first ten in full and the rest counted."""
    shown = ", ".join(labels[:_MAX_LISTED])
    rest = len(labels) - _MAX_LISTED
    return f"{shown} and {rest} more" if rest > 0 else shown


def _same(one: Any, other: Any) -> bool:
    """Whether two checkpoints are the same record (its id and its time)."""
    return bool(one.checkpoint_id == other.checkpoint_id and one.timestamp == other.timestamp)


async def verify_lineage(
    storage: Any,
    run_ids: Sequence[str] = (),
    *,
    workflow_name: str | None = None,
    query: RunQuery | None = None,
) -> LineageReport:
    """Verify the checkpoint lineage of the given runs, or of every run in ``storage``.

    Each run must have exactly one root (seq 0, no parent), seqs ``0..n`` without gaps or
    duplicates, each parent the previous seq of the same run, no checkpoint with two children,
    every record reachable from the head (its last record, which the storage's head must agree
    on: the ``head_seq`` read with the records, else ``get_latest``, which may also name a
    later record of a run that went on since it was read), one workflow name, a code
    signature changed only by a ``resume`` record, valid checksums, each record's data
    readable as its kind's (as ``log`` and a resume read it), sensible kinds (nothing
    after ``completed``; only ``resume`` after ``failed`` or ``pause``) and, for a restored
    run, the same origin on every record, naming a checkpoint that still exists. Each journal
    is read once.

    Args:
        storage: any checkpoint storage.
        run_ids: the runs to verify; empty means every run in the storage.
        workflow_name: keep only runs of this workflow.
        query: keep only the runs it selects (:meth:`~wfctl._inspect._query.RunQuery.select` over
            the storage's summaries, as ``wfctl runs`` lists them; its sort and limit are
            not used). With ``run_ids``, the named runs it does not select are left out; a
            named run that does not exist is still reported.

    Returns:
        One verdict per run; an unknown run id gets a verdict with the problem
        ``run not found`` (a run listed, then removed before its read, a note), and a run that
        cannot be read one with the problem
        ``<journal>: cannot read: <reason>`` (the other runs are verified as usual).

    Raises:
        InvalidIdError: a run id is malformed (checked before anything is read).
    """
    if isinstance(run_ids, str):
        run_ids = (run_ids,)
    wanted = [validate_run_id(run_id) for run_id in run_ids]
    if query is not None and query.narrows:
        return await _verify_selected(storage, wanted, workflow_name, query)
    if not wanted and _reads_without_waiting(storage):
        listed_ids = [s.run_id for s in await storage.list_runs(workflow_name=workflow_name)]
        return _spread_over(storage, listed_ids, workflow_name)
    seen: _Seen = {}
    verdicts: list[RunVerdict] = []
    if wanted:
        for run_id in dict.fromkeys(wanted):
            verdicts.append(await _verdict(storage, run_id, seen, listed=False))
    elif (stream := getattr(storage, "stream_runs", None)) is not None:
        # A storage that reads whole runs a page at a time (the PostgreSQL store: one
        # statement for hundreds of runs, with their heads), and names the long ones.
        async for journal in stream(workflow_name=workflow_name):
            if isinstance(journal, str):  # a long run: read by itself, as it is judged
                verdicts.append(await _verdict(storage, journal, seen, listed=True))
                continue
            _remember(seen, journal.run_id, journal)
            verdicts.append(await _RunCheck(journal).verdict(storage, seen))
    else:
        for summary in await storage.list_runs(workflow_name=workflow_name):
            verdicts.append(await _verdict(storage, summary.run_id, seen, listed=True))
    return LineageReport(tuple(v for v in verdicts if _of_workflow(v, workflow_name)))


async def _verify_selected(
    storage: Any, wanted: Sequence[str], workflow_name: str | None, query: RunQuery
) -> LineageReport:
    """The runs ``query`` selects among the storage's summaries (of ``wanted``, if any named),
    each verified as :func:`verify_lineage` verifies a run it listed.

    The summaries are those ``wfctl runs`` lists, so a filter selects here exactly the runs it
    lists there (a corrupt run whose workflow or time cannot be read included).
    """
    summaries = await storage.list_runs(workflow_name=workflow_name)
    selected = [s.run_id for s in query.select(summaries)]
    if wanted:
        chosen = set(selected)
        seen: _Seen = {}
        verdicts = []
        for run_id in dict.fromkeys(wanted):
            verdict = await _verdict(storage, run_id, seen, listed=False)
            if run_id in chosen or verdict.problems == ("run not found",):
                verdicts.append(verdict)
        return LineageReport(tuple(verdicts))
    if _reads_without_waiting(storage):
        return _spread_over(storage, selected, workflow_name)
    seen = {}
    return LineageReport(
        tuple([await _verdict(storage, run_id, seen, listed=True) for run_id in selected])
    )


def _reads_without_waiting(storage: Any) -> bool:
    return type(storage).__dict__.get("_READS_WITHOUT_WAITING") is True


def _spread_over(
    storage: Any, listed_ids: Sequence[str], workflow_name: str | None
) -> LineageReport:
    """The runs ``listed_ids`` of a storage whose reads never wait, verified as above, spread
    across processes when there are many (:mod:`~wfctl._storage._spread`).

    Each process verifies its part with reads driven in place (no event loop: they never
    wait), with origin checks reading what its part has not read; the verdicts are those one
    process gives, in the listing's order.
    """

    def verdicts_of(run_ids: Sequence[str]) -> list[RunVerdict]:
        seen: _Seen = {}
        return [_driven(_verdict(storage, run_id, seen, listed=True)) for run_id in run_ids]

    verdicts = spread(verdicts_of, listed_ids, _verdict_row, _verdict_of_row)
    return LineageReport(tuple(v for v in verdicts if _of_workflow(v, workflow_name)))


def _removed(run_id: str) -> RunVerdict:
    """The verdict on a run listed, then removed (a gc, an rm) before its read: a note."""
    return RunVerdict(run_id, None, 0, None, (), (_REMOVED_WHILE_VERIFIED,))


def _of_workflow(verdict: RunVerdict, workflow_name: str | None) -> bool:
    """Whether a verdict is kept under the workflow filter (an unreadable run always is)."""
    return workflow_name is None or verdict.workflow_name in (workflow_name, None)


async def _verdict(storage: Any, run_id: str, seen: _Seen, *, listed: bool) -> RunVerdict:
    """The verdict on one run: judged as its records are read if its storage verifies them as
    one chain (:func:`_chain_read`), else read whole. A run that does not exist is a problem,
    one ``listed`` a moment ago a note (a gc or an rm removed it before its read).
    """
    check = await _chain_read(storage, run_id)
    if check is not None:
        seen[run_id] = check.names()
        return await check.verdict(storage, seen)
    journal = await _read(storage, run_id, seen)
    if journal is None and listed:
        return _removed(run_id)
    if journal is None:
        return RunVerdict(run_id, None, 0, None, ("run not found",))
    return await _RunCheck(journal).verdict(storage, seen)


async def _chain_read(storage: Any, run_id: str) -> _ChainCheck | None:
    """The run judged as its storage reads it as one verified chain, holding one record at a
    time; None if the storage cannot, or the run is anything but such a chain (missing,
    empty, torn, corrupt, forked...): the caller reads it whole, which names what is wrong as
    it always has.

    ``verified_records(run_id)`` (the file store's, or awaited: the PostgreSQL store's) gives
    where the records are, the head seq read with them (None: ask ``get_latest``) and the
    records, a generator or an async one (closed here, read to its end or not).
    """
    reader = getattr(storage, "verified_records", None)
    if reader is None:
        return None
    try:
        found = reader(run_id)
        source, head_seq, checkpoints = await found if inspect.isawaitable(found) else found
        check = _ChainCheck(run_id, source, head_seq)
        if isinstance(checkpoints, AsyncGenerator):
            async with contextlib.aclosing(checkpoints):
                async for checkpoint in checkpoints:
                    check.add(checkpoint)
        else:
            with contextlib.closing(checkpoints):
                for checkpoint in checkpoints:
                    check.add(checkpoint)
    except (WfctlError, OSError, _NotAChain):
        return None
    return check if check.count else None


def _driven(coroutine: Coroutine[Any, Any, RunVerdict]) -> RunVerdict:
    """Run a coroutine that never waits to its end, in place.

    Raises:
        RuntimeError: it waited (a storage that declared its reads never wait, wrongly).
    """
    try:
        coroutine.send(None)
    except StopIteration as done:
        verdict: RunVerdict = done.value
        return verdict
    coroutine.close()
    raise RuntimeError("a read of a storage that declares it never waits waited")


def _verdict_row(verdict: RunVerdict) -> list[Any]:
    """A verdict as a JSON array: its fields in order (see :func:`_verdict_of_row`)."""
    return [
        verdict.run_id,
        verdict.workflow_name,
        verdict.checkpoints,
        verdict.head,
        list(verdict.problems),
        list(verdict.notes),
    ]


def _verdict_of_row(row: list[Any]) -> RunVerdict:
    run_id, workflow_name, checkpoints, head, problems, notes = row
    return RunVerdict(run_id, workflow_name, checkpoints, head, tuple(problems), tuple(notes))


async def _learn(storage: Any, run_id: str, seen: _Seen) -> None:
    """Learn the workflow name of each readable seq of a run (an origin), as it is read."""
    check = await _chain_read(storage, run_id)
    if check is not None:
        seen[run_id] = check.names()
    else:
        await _read(storage, run_id, seen)


async def _read(storage: Any, run_id: str, seen: _Seen) -> RunJournal | None:
    """Read a run (None if it does not exist), remembering its seqs for origin checks."""
    try:
        journal: RunJournal | None = await read_run(storage, run_id)
    except RunNotFoundError:
        journal = None
    except CheckpointCorruptError as exc:
        journal = RunJournal(run_id, (), (JournalProblem.from_error(exc),))
    except OSError as exc:  # one unreadable run is a finding; the others are still verified
        journal = RunJournal(run_id, (), (read_problem(exc),))
    _remember(seen, run_id, journal)
    return journal


def _remember(seen: _Seen, run_id: str, journal: RunJournal | None) -> None:
    if journal is None:
        seen[run_id] = None
        return
    names = {c.seq: c.workflow_name for c in journal.checkpoints}
    first = next(iter(names.values()), None)
    others = {seq: name for seq, name in names.items() if name != first}
    seen[run_id] = _Names(frozenset(names), first, others)


def _locations(journal: RunJournal) -> list[str]:
    """Return where each readable record is stored, skipping the lines the read rejected."""
    source = journal.source
    rejected = {p.line for p in journal.problems if p.line is not None} if source else set()
    locations, line_no = [], 0
    for _ in journal.checkpoints:
        line_no += 1
        while line_no in rejected:
            line_no += 1
        locations.append(f"{source}:{line_no}" if source else f"record {line_no}")
    return locations


class _Rules:
    """The lineage rules that judge records one at a time, in storage order: shared by
    :class:`_RunCheck` (a run read whole) and :class:`_ChainCheck` (a chain as it is read).

    A subclass names records (:meth:`label`) and sets ``name``, the run's workflow name.
    """

    def __init__(self, run_id: str) -> None:
        self.run_id = run_id
        self.problems: list[str] = []
        self.notes: list[str] = []
        self.name: str | None = None
        #: The code signature in force at the record being judged (see :meth:`content`).
        self.signature: str | None = None
        #: The head the storage named with the records (None: ask ``get_latest``).
        self.reported_head: int | None = None

    def label(self, index: int) -> str:
        raise NotImplementedError

    def fail(self, index: int | None, text: str) -> None:
        self.problems.append(text if index is None else f"{self.label(index)}: {text}")

    def start_contents(self, root: Checkpoint | None) -> None:
        """Take the root's code signature (a root without one is a problem)."""
        self.signature = RootPayload.of(root).signature if root else None
        if root is not None and not self.signature:
            self.fail(0, "the root records no code signature")

    def content(self, i: int, c: Checkpoint, before: Checkpoint | None) -> None:
        """Check record ``i``'s payload, workflow name, code signature and kind (``before``:
        record ``i - 1``, None for the first).

        The payload is read as its kind's class, as every command that uses the record reads
        it: a record whose checksum holds but whose data does not read (edited, checksum and
        all, or written by a faulty writer) is a problem here, not only when ``log`` or a
        resume reaches it.
        """
        try:
            payload_of(c)
        except CheckpointCorruptError as exc:
            self.fail(i, f"its {c.kind} data does not read: {exc.reason}")
        if c.workflow_name != self.name:
            self.fail(i, f"workflow {c.workflow_name!r}, the run's is {self.name!r}")
        # Judged on the stored JSON, not on a payload: a record of any kind may carry the
        # field, and only a resume record's string changes the signature.
        changed = c.data.get("signature") if i else None
        if changed is not None and (c.kind != Kind.RESUME or not isinstance(changed, str)):
            self.fail(i, f"a {c.kind} record changes the code signature (only resume may)")
        elif changed is not None and changed != self.signature:
            self.notes.append(
                f"code signature changed at {c.checkpoint_id}: {self.signature} -> "
                f"{changed} (resumed with changed code allowed)"
            )
            self.signature = changed
        if before is None:
            return
        previous = self.label(i - 1)
        if before.kind in (Kind.COMPLETED, Kind.CANCELLED):
            ended = "completed" if before.kind == Kind.COMPLETED else "cancelled"
            self.fail(i, f"a {c.kind} record after {previous}, which {ended} the run")
        elif before.kind in (Kind.FAILED, Kind.PAUSE) and c.kind not in (
            Kind.RESUME,
            Kind.CANCELLED,
        ):
            self.fail(i, f"a {c.kind} record after the {before.kind} record {previous}")

    def origin_of(self, i: int, c: Checkpoint, base: Checkpoint) -> str | None:
        """The problem of record ``i`` if it does not name ``base``'s origin."""
        if (c.origin_run_id, c.origin_checkpoint_id) == (
            base.origin_run_id,
            base.origin_checkpoint_id,
        ):
            return None
        return (
            f"{self.label(i)}: origin {c.origin_checkpoint_id} differs from the root's "
            f"{base.origin_checkpoint_id}"
        )

    async def head_pointer(self, storage: Any, head: Checkpoint, last: int) -> None:
        """Check that the storage names ``head`` (record ``last``) as the run's head."""
        if self.reported_head is not None:  # read with the records: no other look, no race
            if self.reported_head != head.seq:
                self.fail(last, f"head pointer: the storage's head is seq {self.reported_head}")
            return None
        try:
            latest = await storage.get_latest(run_id=self.run_id)
        except (WfctlError, OSError) as exc:
            return self.fail(None, f"head pointer: the storage cannot read the head: {exc}")
        if latest is not None and _same(latest, head):
            return None
        # The head is asked for after the records were read: a run driven meanwhile has a later
        # one, a run removed meanwhile none. Read it again to tell that from a storage whose
        # head pointer disagrees with its records.
        moved = await self._moved_on(storage, head)
        if moved is not None:
            self.notes.append(moved)
            return None
        found = latest.checkpoint_id if latest is not None else None
        self.fail(last, f"head pointer: the storage's latest checkpoint is {found}")

    async def _moved_on(self, storage: Any, head: Any) -> str | None:
        """Why the storage's head differs from the records read, if the run moved on since.

        The run, read again, is gone (removed since), or still holds the head read before at
        its seq and more records after it (its driver went on): a note. Anything else (the
        head read before is not there, or nothing came after it): None, a problem.
        """
        try:
            again = await read_run(storage, self.run_id)
        except RunNotFoundError:
            return _REMOVED_WHILE_VERIFIED
        except (WfctlError, OSError):
            return None
        same = [c for c in again.checkpoints if c.seq == head.seq and _same(c, head)]
        later = max((c.seq for c in again.checkpoints), default=-1)
        if not same or later <= head.seq:
            return None
        return (
            f"went on while it was being verified (its head is now seq {later}); its records "
            f"up to {head.checkpoint_id} were verified"
        )

    async def origin_target(
        self, storage: Any, base: Checkpoint, root: Checkpoint | None, seen: _Seen
    ) -> None:
        """Check that the run's origin (``base``'s) is a checkpoint that exists."""
        origin_run, target = base.origin_run_id, base.origin_checkpoint_id
        # The stored JSON again: a restored_from of the wrong type is a finding, not an absence.
        restored_from = base.data.get("restored_from") if root else None
        if restored_from is not None and restored_from != target:
            self.fail(0, f"restored from {restored_from!r} but its origin is {target}")
        if origin_run is None or target is None:
            return None
        try:
            target_run, target_seq = split_checkpoint_id(target)
        except InvalidIdError as exc:
            return self.fail(None, f"origin {target!r} is not a checkpoint id: {exc.reason}")
        if target_run != origin_run or target_run == self.run_id:
            return self.fail(None, f"origin {target} is not in origin run {origin_run!r}")
        if target_run not in seen:
            await _learn(storage, target_run, seen)
        index = seen[target_run]
        name = None if index is None else index.get(target_seq)
        if index is None:
            self.fail(None, f"origin {target} not found (run {target_run!r} is gone)")
        elif name is None:
            self.fail(
                None, f"origin {target} not found among run {target_run!r}'s readable records"
            )
        elif name != self.name:
            self.fail(None, f"origin {target} is of workflow {name!r}, not {self.name!r}")


class _RunCheck(_Rules):
    """The lineage rules over one run's records, read whole, in storage order."""

    def __init__(self, journal: RunJournal) -> None:
        super().__init__(journal.run_id)
        self.records = list(journal.checkpoints)
        self.locations = _locations(journal)
        self.problems.extend(str(p) for p in journal.problems)
        if journal.torn_tail:
            self.notes.append(
                f"torn tail: {journal.torn_tail} byte(s) after the last committed record of "
                f"{journal.source or self.run_id} (a write cut short by a crash, never committed)"
            )
        first = self.records[0] if self.records else None
        self.reported_head = journal.head_seq
        self.root = first if first and first.seq == 0 and first.kind == Kind.ROOT else None
        self.name = (self.root or first).workflow_name if first else None
        self.last = len(self.records) - 1

    async def verdict(self, storage: Any, seen: _Seen) -> RunVerdict:
        """Apply every rule and return the run's verdict."""
        if not self.records:
            self.fail(None, "the run holds no readable checkpoint")
        else:
            self.structure()
            self.reachability()
            self.contents()
            await self.head(storage)
            await self.origin(storage, seen)
        head = self.records[-1].checkpoint_id if self.records else None
        problems, notes = tuple(self.problems), tuple(self.notes)
        return RunVerdict(self.run_id, self.name, len(self.records), head, problems, notes)

    def label(self, index: int) -> str:
        return f"{self.records[index].checkpoint_id} ({self.locations[index]})"

    def structure(self) -> None:
        """Check roots, seqs, parents and children."""
        roots = [i for i, c in enumerate(self.records) if c.previous_checkpoint_id is None]
        if len(roots) != 1:
            named = f": {listed([self.label(i) for i in roots])}" if roots else ""
            self.fail(None, f"{len(roots)} roots (exactly one expected){named}")
        by_seq: dict[int, list[int]] = defaultdict(list)
        children: dict[str, list[int]] = defaultdict(list)
        for i, c in enumerate(self.records):
            by_seq[c.seq].append(i)
            parent, expected = c.previous_checkpoint_id, checkpoint_id_for(self.run_id, c.seq - 1)
            if parent is not None:
                children[parent].append(i)
            if c.run_id != self.run_id:
                self.fail(i, f"belongs to run {c.run_id!r}")
            if c.kind == Kind.ROOT and c.seq != 0:
                self.fail(i, f"a root record at seq {c.seq} (only seq 0 is the root)")
            elif c.seq == 0 and c.kind != Kind.ROOT:
                self.fail(i, f"seq 0 is a {c.kind} record, not the root")
            if c.seq == 0 and parent is not None:
                self.fail(i, f"the root names a parent, {parent!r}")
            elif c.seq and parent is not None and parent != expected:
                self.fail(i, f"parent is {parent!r}{self._elsewhere(parent)}, not {expected!r}")
            if i and c.seq < self.records[i - 1].seq:
                self.fail(i, f"stored after {self.label(i - 1)} (out of seq order)")
        for seq, twins in sorted(by_seq.items()):
            if len(twins) > 1:
                shown = listed([f"{self.locations[i]} ({self._describe(i)})" for i in twins])
                cid = checkpoint_id_for(self.run_id, seq)
                self.fail(None, f"fork at seq {seq}: {len(twins)} records are {cid}: {shown}")
        missing = [checkpoint_id_for(self.run_id, s) for s in range(max(by_seq)) if s not in by_seq]
        if missing:
            self.fail(None, f"seq not contiguous: no record for {listed(missing)}")
        for parent, kids in children.items():
            if len(kids) > 1:
                named = listed([self.label(i) for i in kids])
                self.fail(None, f"{parent} has {len(kids)} children: {named}")

    def _describe(self, index: int) -> str:
        c = self.records[index]
        return f"{c.kind}, parent {c.previous_checkpoint_id}, at {c.timestamp}"

    def _elsewhere(self, parent: str) -> str:
        try:
            parent_run = split_checkpoint_id(parent)[0]
        except InvalidIdError:
            return " (not a checkpoint id)"
        return "" if parent_run == self.run_id else f" (in run {parent_run!r})"

    def reachability(self) -> None:
        """Check that every record is reachable from the head by following parents."""
        newest: dict[str, int] = {}
        parent_of: list[int | None] = []
        for i, c in enumerate(self.records):
            # A parent is the newest record with that id stored before the child: the head its
            # writer saw. A record stored later, or the lost twin of a fork, is nobody's parent.
            parent = c.previous_checkpoint_id
            parent_of.append(newest.get(parent) if parent is not None else None)
            newest[c.checkpoint_id] = i
        reached: set[int] = set()
        index: int | None = self.last
        while index is not None and index not in reached:
            reached.add(index)
            index = parent_of[index]
        lost = listed([self.label(i) for i in range(len(self.records)) if i not in reached])
        if lost:
            count = len(self.records) - len(reached)
            head = self.label(self.last)
            self.fail(None, f"{count} record(s) unreachable from the head {head}: {lost}")

    def contents(self) -> None:
        """Check workflow names, the code signature and the order of kinds."""
        self.start_contents(self.root)
        for i, c in enumerate(self.records):
            self.content(i, c, self.records[i - 1] if i else None)

    async def head(self, storage: Any) -> None:
        """Check that the head is the highest seq and that the storage names it as the head."""
        head = self.records[-1]
        top = max(range(len(self.records)), key=lambda i: self.records[i].seq)
        if self.records[top].seq > head.seq:
            self.fail(self.last, f"the head is not the highest seq: {self.label(top)} is")
        await self.head_pointer(storage, head, self.last)

    async def origin(self, storage: Any, seen: _Seen) -> None:
        """Check that every record names the root's origin, and that the origin exists."""
        base = self.root or self.records[0]
        for i, c in enumerate(self.records):
            problem = self.origin_of(i, c, base)
            if problem is not None:
                self.problems.append(problem)
        await self.origin_target(storage, base, self.root, seen)


class _NotAChain(Exception):
    """A record read by :class:`_ChainCheck` is not the next link: read the run whole."""


class _ChainCheck(_Rules):
    """The lineage rules over a run whose records its storage verified as one chain (each
    record's checksum, and its link: seq ``i`` at place ``i``, naming seq ``i - 1``, seq 0 the
    only root), applied as they are read: the root, the last record and the problems are kept,
    not the records, so a long run is judged in memory that does not grow with its length.

    On such a chain the rules that need every record at once (roots, forks, gaps, children,
    reachability, the highest seq) find nothing; each record is checked to be the next link
    anyway (:class:`_NotAChain` otherwise), so a verdict is the one :class:`_RunCheck` gives.
    """

    def __init__(self, run_id: str, source: str, head_seq: int | None) -> None:
        super().__init__(run_id)
        self.source = source
        self.reported_head = head_seq
        self.count = 0
        self.root: Checkpoint | None = None
        self.last: Checkpoint | None = None
        #: Problems of records that do not name the root's origin (listed after the head's).
        self.origins: list[str] = []
        #: Seqs whose workflow name is not the run's (the others are all the run's).
        self.other_names: dict[int, str] = {}

    def label(self, index: int) -> str:
        return f"{checkpoint_id_for(self.run_id, index)} ({self.source}:{index + 1})"

    def add(self, c: Checkpoint) -> None:
        """Judge the next record.

        Raises:
            _NotAChain: it is not the next link of the run's chain.
        """
        i = self.count
        parent = checkpoint_id_for(self.run_id, i - 1) if i else None
        if (
            c.seq != i
            or c.run_id != self.run_id
            or c.previous_checkpoint_id != parent
            or (c.kind == Kind.ROOT) != (i == 0)
        ):
            raise _NotAChain
        if self.root is None:
            self.root, self.name = c, c.workflow_name
            self.start_contents(c)
        self.content(i, c, self.last)
        problem = self.origin_of(i, c, self.root)
        if problem is not None:
            self.origins.append(problem)
        if c.workflow_name != self.name:
            self.other_names[i] = c.workflow_name
        self.last, self.count = c, i + 1

    def names(self) -> _Names:
        """The workflow name of each seq read (what origin checks need of this run)."""
        return _Names(range(self.count), self.name, self.other_names)

    async def verdict(self, storage: Any, seen: _Seen) -> RunVerdict:
        """Apply the rules that need the whole run and return its verdict."""
        root, last = self.root, self.last
        assert root is not None, "only a chain of one record or more is judged"
        assert last is not None, "only a chain of one record or more is judged"
        await self.head_pointer(storage, last, self.count - 1)
        self.problems.extend(self.origins)
        await self.origin_target(storage, root, root, seen)
        problems, notes = tuple(self.problems), tuple(self.notes)
        return RunVerdict(self.run_id, self.name, self.count, last.checkpoint_id, problems, notes)
