"""The storage contract: what a checkpoint storage must do, and the storages wfctl ships.

A storage is anything with :class:`CheckpointStorage`'s seven methods; one that can be shared
between processes and machines is a :class:`RunStore` (every duty wfctl's engine and commands
use, leases and pause requests included; a :class:`CancelRequest` is a pause request that
names who asked, for a store that overrides ``RunStoreBase.request_cancel`` and
``cancel_request``). :class:`RunStoreBase` is the base class a storage
author subclasses: it builds every read on a few coroutines and says in its docstring what a
storage implements; :func:`check_append`, :func:`strict_chain`, :func:`validate_run_id` and
:func:`split_checkpoint_id` are the rules it needs. :func:`open_storage` opens a store from a
path or a URL. :mod:`wfctl.storage.testing` holds the conformance suite any storage can run.
"""

from wfctl._records._checkpoint import split_checkpoint_id, validate_run_id
from wfctl._records._payloads import CancelRequest
from wfctl._storage._base import RunStoreBase, check_append, strict_chain
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
    "CancelRequest",
    "CheckpointStorage",
    "FileCheckpointStorage",
    "InMemoryCheckpointStorage",
    "JournalProblem",
    "RunJournal",
    "RunLease",
    "RunStatus",
    "RunStore",
    "RunStoreBase",
    "RunSummary",
    "check_append",
    "open_storage",
    "split_checkpoint_id",
    "strict_chain",
    "validate_run_id",
]
