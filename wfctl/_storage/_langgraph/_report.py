"""What a change to a LangGraph store removes: per thread, and for the whole store."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

__all__ = ["Action", "ChangeReport", "ThreadChange"]

#: ``prune``: each thread keeps its head and what the head needs; ``remove``: whole threads.
Action = Literal["prune", "remove"]


@dataclass(frozen=True, slots=True)
class ThreadChange:
    """What one thread loses (or would lose): rows counted, and the bytes of their values.

    ``declined`` says why the thread was left as it is (its DeltaChannel chain cannot be
    proven, a row cannot be read, another writer changed it meanwhile); its counts are then 0.
    """

    thread_id: str
    checkpoints: int = 0
    writes: int = 0
    blobs: int = 0
    bytes: int = 0
    kept_checkpoints: int = 0
    declined: str | None = None

    def to_json(self) -> dict[str, Any]:
        """The thread's entry of the ``--json`` document."""
        return {
            "run_id": self.thread_id,
            "checkpoint_count": self.checkpoints,
            "write_count": self.writes,
            "blob_count": self.blobs,
            "bytes": self.bytes,
            "kept_checkpoint_count": self.kept_checkpoints,
            "declined": self.declined,
        }


@dataclass(frozen=True, slots=True)
class ChangeReport:
    """What a prune or a removal removed (``applied``) or would remove (report only)."""

    kind: str
    location: str
    action: Action
    applied: bool
    threads: tuple[ThreadChange, ...]

    @property
    def bytes(self) -> int:
        """The bytes freed (or that would be) over every thread."""
        return sum(thread.bytes for thread in self.threads)

    def to_json(self) -> dict[str, Any]:
        """The one ``--json`` document (``wfctl/langgraph-change@1``)."""
        return {
            "schema": "wfctl/langgraph-change@1",
            "kind": self.kind,
            "store": self.location,
            "action": self.action,
            "applied": self.applied,
            "bytes": self.bytes,
            "threads": [thread.to_json() for thread in self.threads],
        }
