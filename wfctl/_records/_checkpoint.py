"""The checkpoint record: one link of a run's chain, and the ids that name it.

A run is a chain of checkpoints ``seq 0, 1, 2, ...``. Each checkpoint holds only what happened
since its parent (a delta), so total bytes grow linearly with the number of steps; the state at
any checkpoint is the fold of the chain from the root up to it.

``kind`` is a :class:`Kind`. ``data`` is plain JSON (values inside it are already encoded by the
codec), exactly as stored; its shape depends on the kind: :mod:`wfctl._records._payloads` has one typed
payload class per kind, which the engine, the inspectors and the storages read and write it with.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from functools import lru_cache
from types import MappingProxyType
from typing import Any, Final

from wfctl._errors import CheckpointCorruptError, InvalidIdError
from wfctl._frozen import slot_setters

__all__ = [
    "DELTA_VERSION",
    "ENDING_STATUS",
    "FORMAT_VERSION",
    "KINDS",
    "LEAN_VERSION",
    "Checkpoint",
    "Kind",
    "RunStatus",
    "check_format_version",
    "checkpoint_id_for",
    "checkpoint_of",
    "split_checkpoint_id",
    "validate_run_id",
]

#: Version of the record format that new runs write; a record with a higher version is refused.
#: Version 2 differs from 1 in one thing: its step records' argument digests are BLAKE3, not
#: blake2b. A run writes every record in its root's version (a resume, a restore from it), so a
#: run recorded in version 1 goes on matching its calls by blake2b. Version 3 stores a record
#: without what its id already says (``seq``, and ``prev``, always the seq before), may store its
#: ``data`` compressed (``z``), and may store a step's argument as a reference to an earlier
#: step's result (see ``_refs``); its document (:meth:`Checkpoint.to_dict`) is version 2's.
#: Version 4 is version 3 whose step results may be stored as their change from the earlier
#: results their call took (``_refs``): a wfctl that reads only 3 refuses its runs whole.
FORMAT_VERSION: Final = 4
#: The first format version whose records are stored lean (no ``seq``, no ``prev``), packed and
#: with references.
LEAN_VERSION: Final = 3
#: The first format version whose step results may be stored as changes (``_refs``).
DELTA_VERSION: Final = 4


def check_format_version(version: int, where: str) -> None:
    """Refuse a record format version this wfctl cannot read (newer than it, or below 1).

    Raises:
        CheckpointCorruptError: naming ``where``.
    """
    if version > FORMAT_VERSION:
        raise CheckpointCorruptError(
            where, f"format version {version} is newer than this wfctl ({FORMAT_VERSION})"
        )
    if version < 1:
        raise CheckpointCorruptError(where, f"unknown format version {version}")


class Kind(StrEnum):
    """What a checkpoint record records; each kind's ``data`` has one shape (``_payloads``).

    Members are strings (``Kind.PAUSE == "pause"``), written to disk as their value, so the
    on-disk format is the same whether a kind is named by its member or by its text.
    """

    #: The run's start: its input and the code that runs it (always seq 0, and only seq 0).
    ROOT = "root"
    #: Step results committed together.
    STEP = "step"
    #: A paused, failed or interrupted run going on: its answers, or a retry.
    RESUME = "resume"
    #: The run stopped for answers, or was interrupted, and can be resumed.
    PAUSE = "pause"
    #: The run returned; nothing may follow.
    COMPLETED = "completed"
    #: The run raised; only a ``resume`` (a retry) may follow.
    FAILED = "failed"
    #: The run was ended for good by ``wfctl cancel`` (``cancel_run``); nothing may follow.
    CANCELLED = "cancelled"


KINDS: Final[frozenset[str]] = frozenset(Kind)
_KIND_OF: Final[Mapping[str, Kind]] = {kind.value: kind for kind in Kind}


#: The kinds that end a ``Workflow.run`` call, and the status a run whose head is one has (but
#: a pause with nothing to answer is ``interrupted``: see ``_payloads.ended_as``). A head of any
#: other kind belongs to a run still going (``running``) or cut short (``interrupted``): which
#: one, only its lock can tell.
class RunStatus(StrEnum):
    """What state a stored run is in, as every command names it (see ``RunSummary``).

    ``paused`` waits for answers to its pending requests; ``interrupted`` stopped before its
    end with nothing to answer (Ctrl-C, a signal, ``wfctl pause``, a stopping worker's
    hand-over, or its driver died): ``wfctl resume`` continues either.
    """

    COMPLETED = "completed"
    FAILED = "failed"
    PAUSED = "paused"
    RUNNING = "running"
    INTERRUPTED = "interrupted"
    #: Submitted (``wfctl submit``) and not started yet: only its root, and nobody holds it.
    QUEUED = "queued"
    CANCELLED = "cancelled"
    CORRUPT = "corrupt"
    UNREADABLE = "unreadable"


ENDING_STATUS: Final[Mapping[str, RunStatus]] = MappingProxyType(
    {
        Kind.COMPLETED: RunStatus.COMPLETED,
        Kind.FAILED: RunStatus.FAILED,
        Kind.PAUSE: RunStatus.PAUSED,
        Kind.CANCELLED: RunStatus.CANCELLED,
    }
)

_RUN_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9_-]{0,99}")


@dataclass(frozen=True, slots=True)
class Checkpoint:
    """One committed link of a run's checkpoint chain.

    ``checkpoint_id`` is ``<run_id>.<seq>``; ``previous_checkpoint_id`` is the parent's id (None
    only for the root, ``seq == 0``). ``origin_run_id``/``origin_checkpoint_id`` are set on every
    checkpoint of a run that was restored from another run's checkpoint.
    """

    run_id: str
    seq: int
    kind: Kind
    workflow_name: str
    timestamp: str
    previous_checkpoint_id: str | None = None
    origin_run_id: str | None = None
    origin_checkpoint_id: str | None = None
    data: dict[str, Any] = field(default_factory=dict)
    version: int = FORMAT_VERSION

    @property
    def checkpoint_id(self) -> str:
        """The checkpoint's id, ``<run_id>.<seq>``."""
        return checkpoint_id_for(self.run_id, self.seq)

    def to_dict(self) -> dict[str, Any]:
        """Return the checkpoint as a plain JSON object: what ``show`` and ``export`` give, and
        what records of format version 1 and 2 store (from 3, see :meth:`stored_head`).

        The run id is not repeated: it is the part of ``id`` before the last dot. ``origin``
        is present only on the checkpoints of a restored run.
        """
        out: dict[str, Any] = {
            "v": self.version,
            "id": self.checkpoint_id,
            "seq": self.seq,
            "prev": self.previous_checkpoint_id,
            "kind": self.kind,
            "wf": self.workflow_name,
            "ts": self.timestamp,
        }
        if self.origin_run_id:
            out["origin"] = [self.origin_run_id, self.origin_checkpoint_id]
        out["data"] = self.data
        return out

    def stored_head(self) -> dict[str, Any]:
        """Return what a record of format :data:`LEAN_VERSION` or later stores besides its
        ``data``: :meth:`to_dict` without ``seq`` and ``prev``, which its id says."""
        out: dict[str, Any] = {
            "v": self.version,
            "id": self.checkpoint_id,
            "kind": self.kind,
            "wf": self.workflow_name,
            "ts": self.timestamp,
        }
        if self.origin_run_id:
            out["origin"] = [self.origin_run_id, self.origin_checkpoint_id]
        return out

    @classmethod
    def from_dict(cls, raw: Any, where: str) -> Checkpoint:
        """Build a checkpoint from a decoded JSON object, validating every field.

        Raises:
            CheckpointCorruptError: a field is missing or of the wrong type, the kind is
                unknown, the format version is newer than this wfctl, or the id disagrees with
                its seq.
        """
        if not isinstance(raw, dict):
            raise CheckpointCorruptError(where, "record is not a JSON object")
        version = raw.get("v")
        if type(version) is not int:
            raise CheckpointCorruptError(where, "missing format version")
        check_format_version(version, where)
        seq, kind = raw.get("seq"), raw.get("kind")
        try:
            run_id, id_seq = split_checkpoint_id(raw.get("id"))
        except InvalidIdError as exc:
            raise CheckpointCorruptError(where, f"missing or invalid id: {exc.reason}") from None
        prev = raw.get("prev")
        if version >= LEAN_VERSION:
            # Stored lean: the id says the seq, and the parent is the seq before. Either, if
            # given (a document of the record), must say the same.
            derived = None if id_seq == 0 else checkpoint_id_for(run_id, id_seq - 1)
            if "prev" not in raw:
                prev = derived
            elif prev != derived:
                raise CheckpointCorruptError(
                    where, f"parent {prev!r} is not the seq before id {raw.get('id')!r}"
                )
            if "seq" not in raw:
                seq = id_seq
        if type(seq) is not int or seq != id_seq:
            raise CheckpointCorruptError(where, f"seq {seq!r} does not match id {raw.get('id')!r}")
        if kind not in KINDS:
            raise CheckpointCorruptError(where, f"unknown checkpoint kind {kind!r}")
        wf, ts, data = raw.get("wf"), raw.get("ts"), raw.get("data")
        if prev is not None and not isinstance(prev, str):
            raise CheckpointCorruptError(where, "invalid parent id")
        if not isinstance(wf, str) or not isinstance(ts, str) or not isinstance(data, dict):
            raise CheckpointCorruptError(where, "missing workflow name, timestamp or data")
        origin = raw.get("origin")
        origin_run = origin_ckpt = None
        if origin is not None:
            if (
                not isinstance(origin, list)
                or len(origin) != 2
                or not all(isinstance(o, str) for o in origin)
            ):
                raise CheckpointCorruptError(where, "invalid origin")
            origin_run, origin_ckpt = origin
        return checkpoint_of(
            run_id, seq, _KIND_OF[kind], wf, ts, prev, origin_run, origin_ckpt, data, version
        )


(
    _SET_RUN_ID,
    _SET_SEQ,
    _SET_KIND,
    _SET_WORKFLOW_NAME,
    _SET_TIMESTAMP,
    _SET_PREVIOUS,
    _SET_ORIGIN_RUN,
    _SET_ORIGIN_CHECKPOINT,
    _SET_DATA,
    _SET_VERSION,
) = slot_setters(
    Checkpoint,
    *("run_id", "seq", "kind", "workflow_name", "timestamp", "previous_checkpoint_id"),
    *("origin_run_id", "origin_checkpoint_id", "data", "version"),
)
_new = object.__new__


def checkpoint_of(
    run_id: str,
    seq: int,
    kind: Kind,
    workflow_name: str,
    timestamp: str,
    previous_checkpoint_id: str | None,
    origin_run_id: str | None,
    origin_checkpoint_id: str | None,
    data: dict[str, Any],
    version: int = FORMAT_VERSION,
) -> Checkpoint:
    """Return ``Checkpoint(...)`` of these fields, filled in slot by slot (at half the cost:
    the engine makes one per commit, a read one per record)."""
    checkpoint: Checkpoint = _new(Checkpoint)
    _SET_RUN_ID(checkpoint, run_id)
    _SET_SEQ(checkpoint, seq)
    _SET_KIND(checkpoint, kind)
    _SET_WORKFLOW_NAME(checkpoint, workflow_name)
    _SET_TIMESTAMP(checkpoint, timestamp)
    _SET_PREVIOUS(checkpoint, previous_checkpoint_id)
    _SET_ORIGIN_RUN(checkpoint, origin_run_id)
    _SET_ORIGIN_CHECKPOINT(checkpoint, origin_checkpoint_id)
    _SET_DATA(checkpoint, data)
    _SET_VERSION(checkpoint, version)
    return checkpoint


def validate_run_id(run_id: object) -> str:
    """Return ``run_id`` if it is a safe run id, else raise :class:`InvalidIdError`.

    A run id is 1-100 characters of letters, digits, ``_`` and ``-``, starting with a letter or
    digit: it can never hold a path separator, ``..``, a dot or a NUL byte.
    """
    if not isinstance(run_id, str):
        raise InvalidIdError("run", repr(run_id), "not a string")
    if not _is_run_id(run_id):
        raise InvalidIdError(
            "run", run_id, "use 1-100 letters, digits, '_' or '-', starting with a letter or digit"
        )
    return run_id


@lru_cache(maxsize=1024)
def _is_run_id(text: str) -> bool:
    # Remembered: every record of a journal names its run, and the expression costs 4x the look-up.
    return _RUN_ID.fullmatch(text) is not None


def checkpoint_id_for(run_id: str, seq: int) -> str:
    """Return the id of checkpoint ``seq`` of run ``run_id``."""
    return f"{run_id}.{seq}"


def split_checkpoint_id(checkpoint_id: object) -> tuple[str, int]:
    """Split ``<run_id>.<seq>`` into its parts, validating both.

    The seq is written as :func:`checkpoint_id_for` writes it, without leading zeros, so each
    checkpoint has one id: ``r.01`` is refused, not read as ``r.1`` (a run restored from it
    would record as its origin an id no checkpoint has).

    Raises:
        InvalidIdError: the id is not of that form (this also rejects any path separator,
            traversal or NUL byte), or its seq has a leading zero.
    """
    if not isinstance(checkpoint_id, str):
        raise InvalidIdError("checkpoint", repr(checkpoint_id), "not a string")
    run_id, dot, seq = checkpoint_id.rpartition(".")
    if not dot or not seq.isdigit() or not seq.isascii() or len(seq) > 12:
        raise InvalidIdError("checkpoint", checkpoint_id, "expected <run_id>.<seq>")
    try:
        validate_run_id(run_id)
    except InvalidIdError as exc:
        raise InvalidIdError("checkpoint", checkpoint_id, exc.reason) from None
    if seq[0] == "0" and len(seq) > 1:
        canonical = checkpoint_id_for(run_id, int(seq))
        raise InvalidIdError(
            "checkpoint", checkpoint_id, f"write the seq without leading zeros ({canonical})"
        )
    return run_id, int(seq)
