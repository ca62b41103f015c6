"""One opener for every store: a path, a ``postgresql://`` URL, or ``memory:``."""

from __future__ import annotations

import os
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, TypeVar

from wfctl._config import is_url
from wfctl._errors import StoreLocationError
from wfctl._redact import redact

from ._durability import Durability, DurabilityMode

if TYPE_CHECKING:
    from ._protocol import RunStore

__all__ = ["is_url", "on_store", "open_storage", "redact", "within_store"]

T = TypeVar("T")

#: URL schemes that name a PostgreSQL server (libpq's two spellings).
POSTGRES_SCHEMES = ("postgresql://", "postgres://")


def within_store(path: str | os.PathLike[str], store: str | os.PathLike[str]) -> bool:
    """Whether ``path`` resolves (links followed) to the directory store ``store`` or anything
    inside it; never for a store named by URL, which has no such place."""
    if is_url(path) or is_url(store):
        return False
    root = os.path.realpath(store)
    target = os.path.realpath(path)
    return target == root or target.startswith(root.rstrip(os.sep) + os.sep)


def open_storage(
    location: str | os.PathLike[str],
    *,
    must_exist: bool = True,
    durability: Durability | DurabilityMode | None = None,
) -> RunStore:
    """Open the store at ``location``: a directory, ``postgresql://...`` or ``memory:``.

    Nothing is read or connected yet beyond checking a directory's shape: a PostgreSQL store
    connects (and creates or checks its schema) on first use, in the event loop that uses it.

    Args:
        must_exist: refuse a directory that does not exist (a path the user named, where a
            typo must not read as "no runs"); with False a missing directory reads as empty.
            A server's database must always exist.
        durability: the file store's sync mode (``full`` when None); PostgreSQL commits every
            checkpoint in its own transaction whatever this says, and ``memory:`` keeps nothing.

    Raises:
        StoreLocationError: the path cannot be a store, or the URL is not one wfctl reads.
        WfctlError: a ``postgresql://`` URL without the ``postgres`` extra installed.
    """
    text = os.fspath(location)
    if text == "memory:":
        from ._memory import InMemoryCheckpointStorage

        return InMemoryCheckpointStorage()
    if text.startswith(POSTGRES_SCHEMES):
        from ._postgres import PostgresCheckpointStorage

        return PostgresCheckpointStorage(text)
    if "://" in text:
        raise StoreLocationError(
            text, "is not a store: use a directory, postgresql://... or memory:"
        )
    if redact(text) != text:  # never made a directory named after a password
        raise StoreLocationError(
            text, "reads as a PostgreSQL connection string: name the database by postgresql://..."
        )
    from ._file import FileCheckpointStorage

    storage = FileCheckpointStorage(text, durability=durability or "full")
    storage.check_location(must_exist=must_exist)
    return storage


def on_store(
    location: str | os.PathLike[str],
    body: Callable[[RunStore], Awaitable[T]],
    *,
    must_exist: bool = True,
    durability: Durability | DurabilityMode | None = None,
) -> T:
    """Open the store at ``location``, await ``body(store)`` on one event loop, close the store.

    What every single-shot command does: a PostgreSQL store's connections belong to the loop
    that opened them, so the whole command runs in one.

    Raises:
        StoreLocationError: see :func:`open_storage`; and whatever ``body`` raises.
    """
    import asyncio  # here, not at import: ``wfctl runs`` on a file store needs no event loop

    async def main() -> T:
        storage = open_storage(location, must_exist=must_exist, durability=durability)
        try:
            return await body(storage)
        finally:
            await storage.aclose()

    return asyncio.run(main())
