"""The private PostgreSQL server of tests/postgres, for the sources' tests on that store."""

from tests.postgres.conftest import pg_server, pg_url

__all__ = ["pg_server", "pg_url"]
