"""Tools to test a storage: the conformance suite and a private PostgreSQL server.

:class:`StorageConformance` holds a test of every duty of a run store: subclass it in a pytest
module and implement ``make_storage`` (see :mod:`wfctl._storage._conformance`).
``private_postgres()`` starts a throwaway server in a temporary directory (as the ``postgres``
user when run as root) and yields its URL; ``restart(server)`` restarts it in place and
``stopped(server)`` keeps it down for a ``with`` block; ``PostgresUnavailableError`` says why
it could not.
"""

from wfctl._storage._conformance import StorageConformance
from wfctl._storage._pg_server import (
    PostgresUnavailableError,
    PrivateServer,
    find_bindir,
    private_postgres,
    restart,
    stopped,
)

__all__ = [
    "PostgresUnavailableError",
    "PrivateServer",
    "StorageConformance",
    "find_bindir",
    "private_postgres",
    "restart",
    "stopped",
]
