"""Checkpoint storages: the protocol, the durable file storage and the in-memory one."""

from ._file import FileCheckpointStorage, open_store
from ._memory import InMemoryCheckpointStorage
from ._protocol import (
    CheckpointStorage,
    JournalProblem,
    RunJournal,
    RunLock,
    RunStatus,
    RunSummary,
)

__all__ = [
    "CheckpointStorage",
    "FileCheckpointStorage",
    "InMemoryCheckpointStorage",
    "JournalProblem",
    "RunJournal",
    "RunLock",
    "RunStatus",
    "RunSummary",
    "open_store",
]
