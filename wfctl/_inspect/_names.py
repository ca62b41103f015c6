"""How a person names a run: its id, a unique start of it, or ``@latest``.

Every command that takes a run id (or a checkpoint id ``RUN.SEQ``, by its run part) resolves
what was typed here, over any store: the id itself; else the one run whose id starts with it
(several: :class:`~wfctl._errors.AmbiguousRunError`, naming them); else ``@latest``, the run
created last (the first ``wfctl runs`` lists). A name that matches nothing is
:class:`~wfctl._errors.RunNotFoundError` with the stored ids closest to it ("did you mean").
"""

from __future__ import annotations

import difflib
from typing import Any, Final

from wfctl._config import StoreRef
from wfctl._errors import (
    AmbiguousRunError,
    CheckpointNotFoundError,
    InvalidIdError,
    RunNotFoundError,
)
from wfctl._records._checkpoint import split_checkpoint_id, validate_run_id
from wfctl._storage._capabilities import all_run_ids, has_run, newest_run_id, run_ids_starting
from wfctl._storage._open import on_store

__all__ = ["LATEST", "checkpoint_named", "resolve_checkpoint_id", "resolve_run_id", "run_named"]

#: The name of the run created last (``wfctl log @latest``, ``wfctl show @latest.0``).
LATEST: Final = "@latest"
#: How many runs an ambiguous start of an id is looked up for (the message names a few).
_CANDIDATES: Final = 20
#: How many close ids a name that matches nothing suggests.
_SUGGESTIONS: Final = 3


async def resolve_run_id(storage: Any, name: str) -> str:
    """Return the id of the run ``name`` names in ``storage``.

    Raises:
        InvalidIdError: ``name`` cannot be (the start of) a run id.
        RunNotFoundError: no run is named so (with the closest ids as suggestions).
        AmbiguousRunError: ``name`` starts the ids of several runs, and is none of them.
    """
    if name == LATEST:
        newest = await newest_run_id(storage)
        if newest is None:
            raise RunNotFoundError(LATEST)
        return newest
    validate_run_id(name)
    if await has_run(storage, name):  # a whole id: no other run is looked at
        return name
    found, count = await run_ids_starting(storage, name, _CANDIDATES)
    if name in found:
        return name
    if count == 1:
        return found[0]
    if count > 1:
        raise AmbiguousRunError(name, found, count)
    close = difflib.get_close_matches(name, await all_run_ids(storage), n=_SUGGESTIONS)
    raise RunNotFoundError(name, close)


async def resolve_checkpoint_id(storage: Any, name: str) -> str:
    """Return the checkpoint id ``name`` (``RUN.SEQ``) names, its run part resolved as
    :func:`resolve_run_id` resolves a run's name (whether the run has that seq is left to
    the read that follows).

    Raises:
        InvalidIdError: ``name`` is not ``RUN.SEQ``.
        CheckpointNotFoundError: no run is named so (with the closest as suggestions).
        AmbiguousRunError: as :func:`resolve_run_id`.
    """
    run_part, _, seq = name.rpartition(".")
    try:  # the form and the seq as any checkpoint id's (the run part may be @latest)
        split_checkpoint_id(name if run_part != LATEST else f"r.{seq}")
    except InvalidIdError as exc:
        raise InvalidIdError("checkpoint", name, exc.reason) from None
    try:
        run_id = await resolve_run_id(storage, run_part)
    except RunNotFoundError as exc:
        close = [f"{s}.{seq}" for s in exc.suggestions]
        raise CheckpointNotFoundError(name, close) from None
    return f"{run_id}.{seq}"


def run_named(store: StoreRef, name: str, *, must_exist: bool = True) -> str:
    """Return the id of the run ``name`` names in ``store`` (see :func:`resolve_run_id`).

    Raises:
        StoreLocationError: the store is missing (with ``must_exist``) or is not one.
        InvalidIdError, RunNotFoundError, AmbiguousRunError: see :func:`resolve_run_id`.
    """
    return on_store(store, lambda storage: resolve_run_id(storage, name), must_exist=must_exist)


def checkpoint_named(store: StoreRef, name: str, *, must_exist: bool = True) -> str:
    """Return the checkpoint id ``name`` names in ``store`` (see :func:`resolve_checkpoint_id`)."""
    return on_store(
        store, lambda storage: resolve_checkpoint_id(storage, name), must_exist=must_exist
    )
