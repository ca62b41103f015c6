"""What a replay must know of its source before it starts, read from the journal's lines as
they are verified, without decoding its step records (see :meth:`FileCheckpointStorage.plain_run`).

A *plain* run is one whose records between its root and its head are all step records: it was
never paused and went on, never resumed, never restored from another run. Its history is its
own step records, in order, so a replay from any of its checkpoints can start once the journal
verified (every checksum and link), its root, head and target decoded, and its step keys known:
their order is the step table's, their lengths its key column's, and a key recorded twice (a run
that is not plain after all) sends the replay back to reading the whole run first.

A key is read from a line's bytes where the line is written as ``encode_record`` writes a
record of one step and nothing else: its start up to the step's key read by one expression
(its seq, then ``kind``, ``wf``, ``ts`` and ``data``, whose ``steps`` list begins with the
record, whose ``key`` comes first), ``"key":`` nowhere else, and ``data`` ending with that
list. Any other step line (a failure, an attempt, a group commit, a result holding ``"key":``,
packed data, an escape) is decoded here, as the whole read decodes it; past
:data:`DECODED_AT_MOST` such lines, the run is read whole instead. A line that is not JSON
but reads so is decoded when the replay reads it, which says what is wrong.
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Final

from wfctl._errors import CheckpointCorruptError
from wfctl._records._attempts import StepFailure
from wfctl._records._checkpoint import Checkpoint, Kind
from wfctl._records._payloads import StepPayload

from ._journal import SUFFIX_LEN, decode_checked, later_id_start

__all__ = ["DECODED_AT_MOST", "NotPlainError", "PlainRun", "StepLines"]

#: At most how many lines of a run :class:`StepLines` decodes before it gives up on them.
DECODED_AT_MOST: Final = 1000

_KEY: Final = b'"key":'
_KIND: Final = b'","kind":"'
_STEP_WF: Final = b'step","wf":"'
#: A step record's line from its seq, as encode_record writes it, up to its first step's key
#: (no escape in its workflow name, time or key): its seq, and that key.
_ONE_KEY: Final = (
    rb'(\d+)","kind":"step","wf":"[^"\\]*","ts":"[^"\\]*","data":\{"steps":\[\{"key":"([^"\\]*)"'
)
#: How the data of a record of one step and nothing else ends: the record, its list, itself.
_ONE_RECORD: Final = b"}]}"
_ORIGIN: Final = b'"origin":'


class NotPlainError(Exception):
    """A run's journal said it is not plain (see :class:`StepLines`)."""


class StepLines:
    """A run's step keys and failures, gathered from its journal's lines as :meth:`watch` passes
    them on, each once it verified (the reader asks for the next line only then)."""

    def __init__(self, run_id: str, target: int, path: str) -> None:
        self.run_id, self.target, self.path = run_id, target, path
        #: Whether every line read after the root was a step record, but maybe the last.
        self.plain = True
        #: Every step key, in order, and the length of the longest.
        self.keys: dict[str, None] = {}
        self.widest = 0
        #: The step failures, each with how many records came before the record holding it.
        self.failures: list[tuple[int, StepFailure]] = []
        #: How many of ``failures`` are at or before the target (None: not read yet).
        self.known_failures: int | None = 0 if target == 0 else None
        self._id_start = b""  # how each later record starts, up to its seq
        self._one = re.compile(_ONE_KEY)
        self._other: int | None = None  # the seq of the line read that is not a step record
        self._decoded = 0

    def watch(self, lines: Iterable[bytes]) -> Iterator[bytes]:
        """Yield ``lines``, noting each once the reader asked for the next.

        Raises:
            NotPlainError: (to the reader) a line said the run is not plain: it is read no
                further.
        """
        for seq, line in enumerate(lines):
            yield line
            self._note(seq, line)
            if not self.plain:
                raise NotPlainError

    def is_plain(self, head: Checkpoint) -> bool:
        """Whether the run whose journal was watched, ``head`` its last record, is plain."""
        if self._other is not None and self._other != head.seq:
            return False
        if self.known_failures is None:  # the target is the head, not a step record
            self.known_failures = len(self.failures)
        return self.plain

    def _note(self, seq: int, line: bytes) -> None:
        if seq == 0:
            id_start = later_id_start(line, self.run_id)
            # Restored from another run (or its input says "origin"), or an old format.
            self.plain = id_start is not None and _ORIGIN not in line
            self._id_start = id_start or b""
            self._one = re.compile(re.escape(self._id_start) + _ONE_KEY)
            return
        if self._other is not None:  # a record that is not a step came before this one
            self.plain = False
            return
        one = self._one.match(line)  # the most of a run's lines, read in one go
        if (
            one is not None
            and one[1] == b"%d" % seq
            and line.endswith(_ONE_RECORD, 0, len(line) - SUFFIX_LEN)
            and line.count(_KEY) == 1
        ):
            with contextlib.suppress(UnicodeDecodeError):  # else decoded, which says so
                self._add((one[2].decode(),), seq)
                return
        at = len(self._id_start)
        kind = line.find(_KIND, at)
        if (
            kind < 0
            or not line.startswith(self._id_start)
            or line[at:kind] != b"%d" % seq
            or not line.startswith(_STEP_WF, kind + len(_KIND))
        ):
            self._other = seq  # plain only if it is the last
            return
        keys = self._decode(seq, line)
        if keys is None:
            self.plain = False
            return
        self._add(keys, seq)

    def _add(self, keys: tuple[str, ...], seq: int) -> None:
        seen = self.keys
        for key in keys:
            if key in seen:  # recorded twice: the rows need the whole read
                self.plain = False
                return
            seen[key] = None
            if len(key) > self.widest:
                self.widest = len(key)
        if seq == self.target:
            self.known_failures = len(self.failures)

    def _decode(self, seq: int, line: bytes) -> tuple[str, ...] | None:
        """The keys of a line decoded as the whole read decodes it, its failures noted; None
        if there are too many such lines, or this one cannot be read (the whole read says
        what is wrong with it)."""
        self._decoded += 1
        if self._decoded > DECODED_AT_MOST:
            return None
        try:
            checkpoint = decode_checked(line, f"{self.path}:{seq + 1}")
            if checkpoint.kind != Kind.STEP:
                return None
            payload = StepPayload.of(checkpoint)
        except CheckpointCorruptError:
            return None
        before = len(self.keys)
        self.failures.extend((before, failure) for failure in payload.failures)
        return tuple(record.key for record in payload.steps)


@dataclass(frozen=True, slots=True)
class PlainRun:
    """A plain run, verified whole: its ends, the checkpoint a replay starts from, what
    :class:`StepLines` read of it, and its records, decoded as they are iterated."""

    root: Checkpoint
    target: Checkpoint | None  # None: the run has no record of that seq
    head: Checkpoint
    lines: StepLines
    records: Iterator[Checkpoint]
