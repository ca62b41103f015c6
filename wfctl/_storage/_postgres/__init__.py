"""The PostgreSQL store (being built): the opener's entry point for ``postgresql://`` URLs."""

from __future__ import annotations

from typing import NoReturn

from wfctl._errors import StoreLocationError

__all__ = ["PostgresCheckpointStorage"]


def PostgresCheckpointStorage(url: str) -> NoReturn:
    """Refuse: this build has no PostgreSQL store yet.

    Raises:
        StoreLocationError: always.
    """
    raise StoreLocationError(url, "is a PostgreSQL URL; this build of wfctl cannot open one yet")
