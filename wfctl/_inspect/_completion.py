"""Shell completion of run ids and checkpoint ids, read from the store quietly and cheaply.

Completion runs on every Tab press, so it reads only directory names and, for a few runs, each
run's head record (never whole journals), and it never fails loudly: a missing or unreadable
store, a bad configuration file or a corrupt head completes to nothing (or to what could be
read), with no message and no warning on the terminal.
"""

from __future__ import annotations

import asyncio
import os
import warnings
from collections.abc import Callable

from wfctl._config import locate_store
from wfctl._errors import StoreLocationError
from wfctl._storage import FileCheckpointStorage, open_store

__all__ = ["EXPANDED_RUNS", "checkpoint_ids", "run_ids"]

#: Up to this many matching runs, checkpoint completion lists every checkpoint of each; beyond
#: it, the run ids (type more of one to narrow it down).
EXPANDED_RUNS = 20


def run_ids(store: str | os.PathLike[str] | None, incomplete: str) -> list[str]:
    """Return the ids of the runs in the store (as ``--store`` would select it) that start
    with ``incomplete``, sorted; empty if the store cannot be read."""
    return _quietly(lambda: _matching_runs(_open(store), incomplete))


def checkpoint_ids(store: str | os.PathLike[str] | None, incomplete: str) -> list[str]:
    """Return checkpoint ids (``RUN.SEQ``) that start with ``incomplete``.

    Every checkpoint of the matching runs when there are at most :data:`EXPANDED_RUNS` of
    them (read from each run's head), else the matching run ids.
    """

    def complete() -> list[str]:
        storage = _open(store)
        run_part = incomplete.rpartition(".")[0] if "." in incomplete else incomplete
        runs = _matching_runs(storage, run_part)
        if "." in incomplete and run_part in runs:
            runs = [run_part]
        if len(runs) > EXPANDED_RUNS:
            return runs
        return [c for r in runs for c in _run_checkpoints(storage, r) if c.startswith(incomplete)]

    return _quietly(complete)


def _open(store: str | os.PathLike[str] | None) -> FileCheckpointStorage:
    # must_exist: completion never creates a store, and a missing one has nothing to offer.
    location = locate_store(store)
    if location.url is not None:  # a Tab press does not connect to a server: nothing offered
        raise StoreLocationError(location.url, "is not completed from")
    return open_store(location.path.absolute(), must_exist=True)


def _matching_runs(storage: FileCheckpointStorage, prefix: str) -> list[str]:
    # The storage's own listing of run directories (names only, no journal is opened).
    return sorted(r for r in storage._run_ids() if r.startswith(prefix))


def _run_checkpoints(storage: FileCheckpointStorage, run_id: str) -> list[str]:
    try:
        head = asyncio.run(storage.get_latest(run_id=run_id))
    except Exception:  # a corrupt or unreadable head: offer nothing for this run
        return []
    return [] if head is None else [f"{run_id}.{seq}" for seq in range(head.seq + 1)]


def _quietly(complete: Callable[[], list[str]]) -> list[str]:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # e.g. StoreSecurityWarning: not on every Tab press
        try:
            return complete()
        except Exception:
            return []
