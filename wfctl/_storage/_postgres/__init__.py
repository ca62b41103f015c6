"""The PostgreSQL store: the opener's entry point for ``postgresql://`` URLs.

Needs the ``postgres`` extra (psycopg 3 and psycopg-pool); without it, opening a URL says so.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from wfctl._errors import WfctlError

if TYPE_CHECKING:
    from ._store import PostgresCheckpointStorage

__all__ = ["PostgresCheckpointStorage"]


def __getattr__(name: str) -> object:
    if name != "PostgresCheckpointStorage":
        raise AttributeError(name)
    try:
        from ._store import PostgresCheckpointStorage
    except ImportError as exc:
        raise WfctlError(
            f"a postgresql:// store needs the postgres extra: pip install 'wfctl[postgres]' ({exc})"
        ) from None
    return PostgresCheckpointStorage
