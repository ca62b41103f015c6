"""Tools to test a storage: a private PostgreSQL server (and, next to it, the conformance suite).

``private_postgres()`` starts a throwaway server in a temporary directory (as the ``postgres``
user when run as root) and yields its URL; ``PostgresUnavailableError`` says why it could not.
"""

from wfctl._storage._pg_server import (
    PostgresUnavailableError,
    PrivateServer,
    find_bindir,
    private_postgres,
    restart,
)

__all__ = [
    "PostgresUnavailableError",
    "PrivateServer",
    "find_bindir",
    "private_postgres",
    "restart",
]
