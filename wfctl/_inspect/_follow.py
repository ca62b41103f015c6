"""``wfctl log --follow``: a run's checkpoints as they are committed, until the run ends.

:func:`follow_run` yields a :class:`~wfctl._inspect._entries.LogEntry` for every checkpoint the run has,
then for each one it commits, and last a :class:`FollowEnd` saying how the run ended. It
watches the journal with one ``stat`` per look, and reads only when the journal moved; looks
start 50 ms apart and back off (doubling, to 1 s) while nothing happens, and come back to
50 ms after every commit. The run has ended when its head is an ending record (``completed``,
``failed``, ``pause``, ``cancelled``), or when nobody holds its lock and the head is not one
(it was killed: ``interrupted``). A queued run (``wfctl submit``) is followed until a worker
has driven it to its end, and so is a run a stopping worker handed over (its ``handoff`` pause
is not an end: the next worker's records follow it).

On PostgreSQL each look is one statement (the run's new records, its head and whether its
lease is held, from one snapshot), on the same schedule.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Generator, Iterator
from dataclasses import dataclass
from typing import Any, Final, Protocol

from wfctl._config import StoreRef
from wfctl._errors import RunNotFoundError, WfctlError
from wfctl._records._checkpoint import ENDING_STATUS, Checkpoint, Kind, validate_run_id
from wfctl._records._payloads import RootPayload, ended_as, handed_over
from wfctl._storage import FileCheckpointStorage
from wfctl._storage._capabilities import load_chain
from wfctl._storage._follow import RecordsFollower
from wfctl._storage._open import open_storage
from wfctl._storage._pages import PagedRun, PagedStore

from ._documents import document
from ._entries import WHOLE_CHAIN, LogEntry, LogPage, log_entry

__all__ = ["FIRST_INTERVAL", "LONGEST_INTERVAL", "FollowEnd", "follow_run", "followed_json"]

#: Seconds between looks right after a commit, and the longest wait while the run is idle.
FIRST_INTERVAL: Final = 0.05
LONGEST_INTERVAL: Final = 1.0


@dataclass(frozen=True, slots=True)
class FollowEnd:
    """How a followed run ended: its status, and its head checkpoint."""

    run_id: str
    #: ``completed``, ``failed``, ``cancelled``, ``paused`` (waiting for answers) or
    #: ``interrupted`` (stopped with nothing to answer, or killed), as ``runs`` names them.
    status: str
    head_checkpoint_id: str

    def to_json(self) -> dict[str, Any]:
        """Return the ``wfctl/log-end@1`` document: the last line of ``log --follow --json``."""
        return document(
            "log-end",
            {
                "run_id": self.run_id,
                "status": self.status,
                "head_checkpoint_id": self.head_checkpoint_id,
            },
        )


def followed_json(run_id: str, item: LogEntry | FollowEnd) -> dict[str, Any]:
    """Return one line of ``log --follow --json`` (see docs/json.md).

    A checkpoint is a ``wfctl/log-entry@1`` document: the run, then the fields of an item of
    ``wfctl log --json``'s ``checkpoints``. The end is :meth:`FollowEnd.to_json`.
    """
    if isinstance(item, FollowEnd):
        return item.to_json()
    return document("log-entry", {"run_id": run_id, **item.to_json()})


def follow_run(
    store: StoreRef,
    run_id: str,
    *,
    must_exist: bool = True,
    sleep: Callable[[float], None] = time.sleep,
    page: LogPage = WHOLE_CHAIN,
) -> Iterator[LogEntry | FollowEnd]:
    """Yield the run's checkpoints as timeline entries as they are committed, then its end.

    A file store's run is verified whole (every checksum and link) before the first entry; a
    PostgreSQL store's root and head are, and every other record as it is read, a page at a
    time (a record that fails raises after the entries before it). Records before the page's
    start are verified but not decoded.

    Args:
        sleep: how to wait between looks (tests pass a recorder).
        page: where the entries start (its ``from_seq`` or ``last``, counted on the chain as
            it is when following starts); it cannot have a ``limit``.

    Raises:
        StoreLocationError: the store is missing (with ``must_exist``) or is not one.
        InvalidIdError, RunNotFoundError: no such run.
        CheckpointCorruptError: a record fails verification, the chain is broken, or the
            journal was replaced or cut while followed.
        WfctlError: the run was removed while followed.
    """
    if page.limit is not None:
        raise ValueError("a followed log has no limit: it goes on until the run ends")
    storage = open_storage(store, must_exist=must_exist)
    run_id = validate_run_id(run_id)
    if isinstance(storage, FileCheckpointStorage):
        # exists, and verifies whole (every checksum and link, in flat memory); the follower
        # then reads every record again, a chunk at a time, each checked as it is decoded
        ends = asyncio.run(storage.verified_ends(run_id))
        if ends is None:
            raise RunNotFoundError(run_id)
        first = page.seqs(ends[1].seq).start
        follower = storage.follow(run_id)
        follower.skip_to(first)
        yield from _follow(follower, sleep, first)
        return
    look = getattr(storage, "follow_records", None)
    if look is None or not isinstance(storage, PagedStore):
        raise WfctlError(
            f"log --follow cannot watch {storage.location} (run wfctl log again to see new "
            "checkpoints)"
        )
    reader = PagedRun(storage, run_id)  # one loop: the store's connections kept between looks
    try:
        found = reader.ends()  # the root and head, verified; the rest as it is read
        # No run, or its ends do not verify: read whole, which says which.
        head = found[2] if found is not None else reader.run(load_chain(storage, run_id))[-1]
        first = page.seqs(head.seq).start
        looks = RecordsFollower(look, reader.run, run_id, f"{storage.location} run {run_id}")
        looks.skip_to(first, reader.page)
        yield from _follow(looks, sleep, first)
    finally:
        reader.close()


class _Follower(Protocol):
    """What following needs of a store's follower (:mod:`wfctl._storage._follow`)."""

    head: Checkpoint | None
    more: bool

    def changed(self) -> bool: ...

    def running(self) -> bool: ...

    def read_new(self) -> list[Checkpoint]: ...


def _follow(
    follower: _Follower, sleep: Callable[[float], None], first: int
) -> Iterator[LogEntry | FollowEnd]:
    """Look until the run ends: read when it moved, back off while it is idle. Entries of
    seqs below ``first`` are not yielded."""
    wait = FIRST_INTERVAL
    while True:
        committed = follower.read_new() if follower.changed() else []
        yield from _entries(committed, first)
        if follower.more:
            continue  # a backlog read a chunk at a time: the next chunk at once
        head = follower.head
        assert head is not None  # the root was verified above
        if head.kind in ENDING_STATUS and not handed_over(head):
            yield _end(head)
            return
        if committed:
            wait = FIRST_INTERVAL
        elif not follower.running() and not _waits_for_worker(head):
            ended = yield from _last_look(follower, first)
            if ended:
                return
            wait = FIRST_INTERVAL  # handed over as it let go: follow it on
        else:
            wait = min(wait * 2, LONGEST_INTERVAL)
        sleep(wait)


def _waits_for_worker(head: Checkpoint) -> bool:
    """Whether the run waits for a worker: queued (``wfctl submit``) or handed over by a
    stopping worker. Either is followed until a worker drives it to its end."""
    return handed_over(head) or (head.kind == Kind.ROOT and RootPayload.of(head).submitted)


def _entries(records: list[Checkpoint], first: int) -> Iterator[LogEntry]:
    """The entries of ``records`` (consecutive seqs) from seq ``first`` on."""
    skip = first - records[0].seq if records else 0
    return map(log_entry, records[skip:] if skip > 0 else records)


def _last_look(follower: _Follower, first: int) -> Generator[LogEntry | FollowEnd, None, bool]:
    """The run holds no lock: read what it committed before letting go, then say how it ended
    (True), unless that was a hand-over to another worker (False: it is followed on)."""
    yield from _entries(follower.read_new(), first)
    head = follower.head
    assert head is not None
    if handed_over(head):
        return False
    yield (
        _end(head)
        if head.kind in ENDING_STATUS
        else FollowEnd(head.run_id, "interrupted", head.checkpoint_id)
    )
    return True


def _end(head: Checkpoint) -> FollowEnd:
    status = ended_as(head)
    assert status is not None  # an ending record's
    return FollowEnd(head.run_id, status.value, head.checkpoint_id)
