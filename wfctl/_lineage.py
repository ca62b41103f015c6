"""Lineage verification: prove that every run's checkpoint history is one unbroken chain.

Each run is judged from one read of everything its storage holds for it
(:func:`~wfctl._storage._capabilities.read_run`), duplicates, gaps and unreadable records
included, so a fork is reported rather than hidden. Problems name the checkpoint and where it is
stored (``<journal>:<line>`` for the file storage) and say what is wrong; notes are findings
that break nothing (a torn tail that was never committed, a signature changed on purpose).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ._checkpoint import Checkpoint, checkpoint_id_for, split_checkpoint_id, validate_run_id
from ._errors import CheckpointCorruptError, InvalidIdError, RunNotFoundError, WfctlError
from ._storage._capabilities import read_run
from ._storage._protocol import RunJournal

__all__ = ["LineageReport", "RunVerdict", "listed", "verify_lineage"]

#: Ids named in full in one problem; the rest are counted.
_MAX_LISTED = 10


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

    def to_json(self) -> dict[str, Any]:
        """Return the verdict as a JSON object with stable keys."""
        return {
            "run_id": self.run_id,
            "workflow_name": self.workflow_name,
            "ok": self.ok,
            "checkpoints": self.checkpoints,
            "head": self.head,
            "problems": list(self.problems),
            "notes": list(self.notes),
        }


@dataclass(frozen=True, slots=True)
class LineageReport:
    """The verdicts of one verification, one per run, in the order they were checked."""

    runs: tuple[RunVerdict, ...] = ()

    @property
    def ok(self) -> bool:
        """Whether no run has a problem (True for an empty report)."""
        return all(verdict.ok for verdict in self.runs)

    def to_json(self) -> dict[str, Any]:
        """Return the report as one JSON document with stable keys."""
        return {"ok": self.ok, "runs": [verdict.to_json() for verdict in self.runs]}


def listed(labels: Sequence[str]) -> str:
    """Return ``labels`` joined for a message, the first ten in full and the rest counted."""
    shown = ", ".join(labels[:_MAX_LISTED])
    rest = len(labels) - _MAX_LISTED
    return f"{shown} and {rest} more" if rest > 0 else shown


async def verify_lineage(
    storage: Any, run_ids: Sequence[str] = (), *, workflow_name: str | None = None
) -> LineageReport:
    """Verify the checkpoint lineage of the given runs, or of every run in ``storage``.

    Each run must have exactly one root (seq 0, no parent), seqs ``0..n`` without gaps or
    duplicates, each parent the previous seq of the same run, no checkpoint with two children,
    every record reachable from the head (its last record, which the storage's ``get_latest``
    must agree on), one workflow name, a code signature changed only by a ``resume`` record,
    valid checksums, sensible kinds (nothing after ``completed``; only ``resume`` after
    ``failed`` or ``pause``) and, for a restored run, the same origin on every record, naming a
    checkpoint that still exists. Each journal is read once.

    Args:
        storage: any checkpoint storage.
        run_ids: the runs to verify; empty means every run in the storage.
        workflow_name: keep only runs of this workflow.

    Returns:
        One verdict per run; an unknown run id gets a verdict with the problem
        ``run not found``.

    Raises:
        InvalidIdError: a run id is malformed (checked before anything is read).
    """
    if isinstance(run_ids, str):
        run_ids = (run_ids,)
    wanted = [validate_run_id(run_id) for run_id in run_ids]
    if not wanted:
        wanted = [s.run_id for s in await storage.list_runs(workflow_name=workflow_name)]
    journals: dict[str, RunJournal | None] = {}
    verdicts: list[RunVerdict] = []
    for run_id in dict.fromkeys(wanted):
        journal = await _journal(storage, run_id, journals)
        if journal is None:
            verdicts.append(RunVerdict(run_id, None, 0, None, ("run not found",)))
            continue
        verdict = await _verify_run(storage, journal, journals)
        if workflow_name is None or verdict.workflow_name in (workflow_name, None):
            verdicts.append(verdict)
    return LineageReport(tuple(verdicts))


async def _journal(
    storage: Any, run_id: str, cache: dict[str, RunJournal | None]
) -> RunJournal | None:
    """Read a run once (None if it does not exist); later calls reuse the read."""
    if run_id not in cache:
        try:
            cache[run_id] = await read_run(storage, run_id)
        except RunNotFoundError:
            cache[run_id] = None
        except CheckpointCorruptError as exc:
            cache[run_id] = RunJournal(run_id, (), (f"{exc.where}: {exc.reason}",))
    return cache[run_id]


def _locations(journal: RunJournal) -> list[str]:
    """Return where each readable record is stored, skipping the lines the read rejected."""
    source, rejected = journal.source, set()
    for problem in journal.problems:
        line = problem[len(source) + 1 :].partition(":")[0]
        if source and problem.startswith(source + ":") and line.isdigit():
            rejected.add(int(line))
    locations, line_no = [], 0
    for _ in journal.checkpoints:
        line_no += 1
        while line_no in rejected:
            line_no += 1
        locations.append(f"{source}:{line_no}" if source else f"record {line_no}")
    return locations


async def _verify_run(
    storage: Any, journal: RunJournal, journals: dict[str, RunJournal | None]
) -> RunVerdict:
    """Judge one run's journal."""
    run_id, records = journal.run_id, list(journal.checkpoints)
    problems, notes = list(journal.problems), []
    if journal.torn_tail:
        notes.append(
            f"torn tail: {journal.torn_tail} byte(s) after the last committed record of "
            f"{journal.source or run_id} (a write cut short by a crash, never acknowledged)"
        )
    if not records:
        problems.append("the run holds no readable checkpoint")
        return RunVerdict(run_id, None, 0, None, tuple(problems), tuple(notes))
    check = _RunCheck(run_id, records, _locations(journal), problems, notes)
    check.structure()
    check.reachability()
    check.contents()
    await check.head_pointer(storage)
    await check.origin(storage, journals)
    return RunVerdict(
        run_id, check.name, len(records), records[-1].checkpoint_id, tuple(problems), tuple(notes)
    )


class _RunCheck:
    """The lineage rules over one run's records (in storage order), appending problems."""

    def __init__(
        self,
        run_id: str,
        records: list[Checkpoint],
        locations: list[str],
        problems: list[str],
        notes: list[str],
    ) -> None:
        self.run_id, self.records, self.locations = run_id, records, locations
        self.problems, self.notes = problems, notes
        first = records[0]
        self.root = first if first.seq == 0 and first.kind == "root" else None
        self.name = (self.root or first).workflow_name

    def label(self, index: int) -> str:
        return f"{self.records[index].checkpoint_id} ({self.locations[index]})"

    def structure(self) -> None:
        """Check roots, seqs, parents and children."""
        add, records = self.problems.append, self.records
        roots = [i for i, c in enumerate(records) if c.previous_checkpoint_id is None]
        if len(roots) != 1:
            named = f": {listed([self.label(i) for i in roots])}" if roots else ""
            add(f"{len(roots)} roots (exactly one expected){named}")
        by_seq: dict[int, list[int]] = defaultdict(list)
        children: dict[str, list[int]] = defaultdict(list)
        for i, c in enumerate(records):
            by_seq[c.seq].append(i)
            parent = c.previous_checkpoint_id
            if parent is not None:
                children[parent].append(i)
            if c.run_id != self.run_id:
                add(f"{self.label(i)}: belongs to run {c.run_id!r}")
            if c.kind == "root" and c.seq != 0:
                add(f"{self.label(i)}: a root record at seq {c.seq} (only seq 0 is the root)")
            elif c.seq == 0 and c.kind != "root":
                add(f"{self.label(i)}: seq 0 is a {c.kind} record, not the root")
            if c.seq == 0 and parent is not None:
                add(f"{self.label(i)}: the root names a parent, {parent!r}")
            elif c.seq > 0 and parent is not None:
                self._check_parent(i, parent)
            if i and c.seq < records[i - 1].seq:
                add(f"{self.label(i)}: stored after {self.label(i - 1)} (out of seq order)")
        for seq, indexes in sorted(by_seq.items()):
            if len(indexes) > 1:
                forks = [f"{self.locations[i]} ({self._describe(i)})" for i in indexes]
                add(
                    f"fork at seq {seq}: {len(indexes)} records are "
                    f"{checkpoint_id_for(self.run_id, seq)}: {listed(forks)}"
                )
        missing = [s for s in range(max(by_seq) + 1) if s not in by_seq]
        if missing:
            ids = [checkpoint_id_for(self.run_id, s) for s in missing]
            add(f"seq not contiguous: no record for {listed(ids)}")
        for parent, kids in children.items():
            if len(kids) > 1:
                add(f"{parent} has {len(kids)} children: {listed([self.label(i) for i in kids])}")

    def _describe(self, index: int) -> str:
        c = self.records[index]
        return f"{c.kind}, parent {c.previous_checkpoint_id}, at {c.timestamp}"

    def _check_parent(self, index: int, parent: str) -> None:
        expected = checkpoint_id_for(self.run_id, self.records[index].seq - 1)
        if parent == expected:
            return
        try:
            parent_run, _ = split_checkpoint_id(parent)
        except InvalidIdError:
            parent_run = None
        where = "" if parent_run in (self.run_id, None) else f" (in run {parent_run!r})"
        self.problems.append(
            f"{self.label(index)}: parent is {parent!r}{where}, expected {expected!r}"
        )

    def reachability(self) -> None:
        """Check that every record is reachable from the head by following parents."""
        newest: dict[str, int] = {}
        parent_of: list[int | None] = []
        for i, c in enumerate(self.records):
            # A parent is the newest record with that id stored before the child: the head its
            # writer saw. A record stored later, or a lost twin of a fork, is never a parent.
            parent = c.previous_checkpoint_id
            parent_of.append(newest.get(parent) if parent is not None else None)
            newest[c.checkpoint_id] = i
        reached: set[int] = set()
        index: int | None = len(self.records) - 1
        while index is not None and index not in reached:
            reached.add(index)
            index = parent_of[index]
        lost = [self.label(i) for i in range(len(self.records)) if i not in reached]
        if lost:
            self.problems.append(
                f"{len(lost)} record(s) unreachable from the head "
                f"{self.label(len(self.records) - 1)}: {listed(lost)}"
            )

    def contents(self) -> None:
        """Check workflow names, the code signature and the order of kinds."""
        add, records = self.problems.append, self.records
        signature = self.root.data.get("signature") if self.root else None
        if self.root is not None and not (isinstance(signature, str) and signature):
            add(f"{self.label(0)}: the root records no code signature")
        for i, c in enumerate(records):
            if c.workflow_name != self.name:
                add(f"{self.label(i)}: workflow {c.workflow_name!r}, the run's is {self.name!r}")
            new_signature = c.data.get("signature")
            if i and new_signature is not None:
                if c.kind != "resume" or not isinstance(new_signature, str):
                    add(f"{self.label(i)}: a {c.kind} record changes the code signature "
                        "(only a resume record may)")
                elif new_signature != signature:
                    self.notes.append(
                        f"code signature changed at {c.checkpoint_id}: {signature} -> "
                        f"{new_signature} (resumed with changed code allowed)"
                    )
                    signature = new_signature
            before = records[i - 1].kind if i else None
            if before == "completed":
                add(f"{self.label(i)}: a {c.kind} record after {self.label(i - 1)}, "
                    "which completed the run")
            elif before in ("failed", "pause") and c.kind != "resume":
                add(f"{self.label(i)}: a {c.kind} record after the {before} record "
                    f"{self.label(i - 1)} (only a resume may follow it)")

    async def head_pointer(self, storage: Any) -> None:
        """Check that the head is the highest seq and that the storage names it as the head."""
        head = self.records[-1]
        top = max(range(len(self.records)), key=lambda i: self.records[i].seq)
        if self.records[top].seq > head.seq:
            self.problems.append(
                f"head {self.label(len(self.records) - 1)} is not the highest seq: "
                f"{self.label(top)} is"
            )
        try:
            latest = await storage.get_latest(run_id=self.run_id)
        except (WfctlError, OSError) as exc:
            self.problems.append(f"head pointer: the storage cannot read the head: {exc}")
            return
        found = latest.checkpoint_id if latest is not None else None
        if found != head.checkpoint_id or (latest and latest.timestamp != head.timestamp):
            self.problems.append(
                f"head pointer: the storage's latest checkpoint is {found}, the last stored "
                f"record is {self.label(len(self.records) - 1)}"
            )

    async def origin(self, storage: Any, journals: dict[str, RunJournal | None]) -> None:
        """Check that every record names the root's origin, and that the origin exists."""
        add, base = self.problems.append, self.root or self.records[0]
        origin = (base.origin_run_id, base.origin_checkpoint_id)
        for i, c in enumerate(self.records):
            if (c.origin_run_id, c.origin_checkpoint_id) != origin:
                add(f"{self.label(i)}: origin {c.origin_checkpoint_id} differs from the "
                    f"root's {origin[1]}")
        restored_from = base.data.get("restored_from") if self.root else None
        if restored_from is not None and restored_from != origin[1]:
            add(f"{self.label(0)}: restored from {restored_from!r} but names origin {origin[1]}")
        origin_run, target = origin
        if origin_run is None or target is None:
            return
        try:
            target_run, target_seq = split_checkpoint_id(target)
        except InvalidIdError as exc:
            add(f"origin {target!r} is not a checkpoint id: {exc.reason}")
            return
        if target_run != origin_run or target_run == self.run_id:
            add(f"origin {target} does not belong to origin run {origin_run!r}")
            return
        found = await _journal(storage, target_run, journals)
        if found is None:
            add(f"origin {target} not found (run {target_run!r} no longer exists)")
            return
        match = [c for c in found.checkpoints if c.seq == target_seq]
        if not match:
            add(f"origin {target} not found among the {len(found.checkpoints)} readable "
                f"checkpoint(s) of run {target_run!r}")
        elif match[0].workflow_name != self.name:
            add(f"origin {target} belongs to workflow {match[0].workflow_name!r}, "
                f"this run to {self.name!r}")
