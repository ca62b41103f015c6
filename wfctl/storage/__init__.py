"""The storage contract: what a checkpoint storage must do, and the storages wfctl ships.

A storage is anything with :class:`CheckpointStorage`'s seven methods; one that can be shared
between processes and machines is a :class:`RunStore` (every duty wfctl's engine and commands
use, leases and pause requests included). :func:`open_storage` opens one from a path or a URL.
:mod:`wfctl.storage.testing` holds the conformance suite any storage can run.
"""

from wfctl._storage._base import check_append, strict_chain
from wfctl._storage._file import FileCheckpointStorage
from wfctl._storage._memory import InMemoryCheckpointStorage
from wfctl._storage._open import open_storage
from wfctl._storage._protocol import (
    CheckpointStorage,
    JournalProblem,
    RunJournal,
    RunLease,
    RunStatus,
    RunStore,
    RunSummary,
)

__all__ = [
    "CheckpointStorage",
    "FileCheckpointStorage",
    "InMemoryCheckpointStorage",
    "JournalProblem",
    "RunJournal",
    "RunLease",
    "RunStatus",
    "RunStore",
    "RunSummary",
    "check_append",
    "open_storage",
    "strict_chain",
]
