"""The conformance suite (wfctl.storage.testing) against the PostgreSQL store."""

from __future__ import annotations

import psycopg
import pytest

from wfctl._storage._postgres._store import PostgresCheckpointStorage
from wfctl.storage import RunStore
from wfctl.storage.testing import StorageConformance


class TestPostgresStorage(StorageConformance):
    """A PostgreSQL store on the session's private server, its tables emptied per test."""

    @pytest.fixture(autouse=True)
    def _url(self, pg_url: str) -> None:
        self.url = pg_url

    def make_storage(self) -> RunStore:
        return PostgresCheckpointStorage(self.url)

    def make_second_view(self, storage: RunStore) -> RunStore | None:
        return PostgresCheckpointStorage(self.url)  # what another machine would open

    async def corrupt_record(self, storage: RunStore, run_id: str, seq: int) -> None:
        # Valid JSON with a checksum that no longer holds, as a stray UPDATE would leave it.
        async with await psycopg.AsyncConnection.connect(self.url, autocommit=True) as conn:
            await conn.execute(
                "UPDATE wfctl_checkpoints SET record = convert_to(replace("
                "convert_from(record, 'UTF8'), '\"kind\":', '\"kind\": '), 'UTF8') "
                "WHERE run_id = %s AND seq = %s",
                (run_id, seq),
            )
