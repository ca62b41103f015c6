"""A replay's source run read as the replay asks for its records, when the run is plain.

A plain run (see :mod:`wfctl._storage._step_lines`) is verified whole before the replay starts,
as every source is: every checksum and link, its root, head and target decoded, its step keys
and failures read. Its step records are then decoded as the replay's calls need them
(:meth:`~wfctl._records._recorded.RecordedCalls.feed_from`), each as the whole read decodes it,
so a long run's first rows come while most of it is still unread. What no call asks for is
read once the replay ended (:meth:`SourceFeed.finish`).

Nothing runs on records that are not read yet: a call is served from its own record once that
is read, and any other call (one that would run, or diverge) waits until every record is. So a
step of the replay runs only once the whole source was read, as before; a record that cannot
be read is found before any step runs, or once the replay ended, and refuses the replay as the
whole read would have (the caller withdraws the replay's run).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Final

from wfctl._errors import (
    CheckpointCorruptError,
    CheckpointNotFoundError,
    RunNotFoundError,
    WfctlError,
)
from wfctl._records._checkpoint import Checkpoint, Kind, split_checkpoint_id
from wfctl._records._payloads import StepPayload
from wfctl._records._recorded import RecordedCalls
from wfctl._storage._protocol import CheckpointStorage
from wfctl._storage._step_lines import PlainRun

from ._restore import History

__all__ = ["PlainSource", "SourceFeed", "read_plain_source"]


#: How many records :meth:`SourceFeed.read` reads at once: a call served from the record
#: after the last one read waits for a few more, and reading them together costs less.
_AT_ONCE: Final = 16


class SourceFeed:
    """The records of a plain source run, read as its replay asks: those up to the target
    are added to the calls the replay may be served; those after it are only read.

    Each record's step keys must be the ones read from its line before the replay started;
    any other record, or one that cannot be read, is kept in :attr:`error` and raised by this
    and every later read.
    """

    def __init__(
        self, run: PlainRun, target: Checkpoint, keys: Iterator[str], calls: RecordedCalls
    ) -> None:
        self._records = run.records
        self._keys = keys
        self._calls = calls
        self._target = target.seq
        self._head = run.head.seq
        self._run_id = run.root.run_id
        self.error: WfctlError | OSError | None = None
        self.done = False

    def read(self) -> bool:
        """Read the next records (:data:`_AT_ONCE`); False once every record was read.

        Raises:
            CheckpointCorruptError, RunNotFoundError, OSError: a record cannot be read or is
                not what its line said, or the run is gone.
        """
        if self.error is not None:
            raise self.error
        if self.done:
            return False
        try:
            for _ in range(_AT_ONCE):
                checkpoint = next(self._records, None)
                if checkpoint is None:
                    self._end()
                    return False
                self._add(checkpoint)
        except (WfctlError, OSError) as exc:
            self.error = exc
            self.close()
            raise
        return True

    def finish(self) -> None:
        """Read every record not read yet (once the replay ended).

        Raises:
            CheckpointCorruptError, RunNotFoundError: as :meth:`read`.
        """
        while self.read():
            pass

    def close(self) -> None:
        """Read no more (the journal is closed)."""
        self.done = True
        close = getattr(self._records, "close", None)
        if close is not None:
            close()

    def _add(self, checkpoint: Checkpoint) -> None:
        if checkpoint.kind != Kind.STEP:
            if checkpoint.seq in (0, self._head):
                return  # the root, and an ending or a pause: read before the replay
            raise _changed(checkpoint)
        add = self._calls.add if checkpoint.seq <= self._target else None
        for record in StepPayload.of(checkpoint).steps:
            if next(self._keys, None) != record.key:
                raise _changed(checkpoint)
            if add is not None:
                add(record)

    def _end(self) -> None:
        self.close()
        if next(self._keys, None) is not None:
            raise CheckpointCorruptError(self._run_id, "records went missing while it was read")


def _changed(checkpoint: Checkpoint) -> CheckpointCorruptError:
    return CheckpointCorruptError(
        checkpoint.checkpoint_id, "it is not the record read before the replay started"
    )


class PlainSource:
    """What :func:`read_plain_source` read: what the whole read returns (see
    :func:`~._restore.load_source`), the source's step keys and failures, and its feed."""

    def __init__(self, run: PlainRun) -> None:
        root, head, lines = run.root, run.head, run.lines
        assert run.target is not None
        assert lines.known_failures is not None
        target = run.target
        self.target = target
        self.outline = [root]
        if target.kind == Kind.STEP and target.seq != head.seq:
            self.outline.append(target)
        if head.seq != 0:
            self.outline.append(head)
        self.whole = History(failures=lines.failures, last_kind=head.kind)
        self.known = History(failures=lines.failures[: lines.known_failures], last_kind=target.kind)
        #: Every step key, in order, and the length of the longest.
        self.keys, self.widest = lines.keys, lines.widest
        self.feed = SourceFeed(run, target, iter(lines.keys), self.known.calls)
        self.known.calls.feed_from(self.feed.read)


async def read_plain_source(storage: CheckpointStorage, checkpoint_id: str) -> PlainSource | None:
    """Read the run holding ``checkpoint_id`` for a replay as :class:`PlainSource`, if its store
    can tell whether it is plain and it is; None otherwise (nothing read is kept).

    Raises:
        InvalidIdError: the id is malformed.
        CheckpointNotFoundError: no such run or no such seq in it.
        CheckpointCorruptError: a record is corrupt or the chain is broken.
    """
    read = getattr(storage, "plain_run", None)
    if read is None:
        return None
    run_id, seq = split_checkpoint_id(checkpoint_id)
    try:
        run: PlainRun | None = read(run_id, seq)
    except RunNotFoundError:
        raise CheckpointNotFoundError(checkpoint_id) from None
    if run is None:
        return None
    if run.target is None:
        raise CheckpointNotFoundError(checkpoint_id)
    return PlainSource(run)
