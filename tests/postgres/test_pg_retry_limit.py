"""A step's retry limit holds across kills on the PostgreSQL store (the scenario of
``tests/engine/test_retry_limit.py``: kills in attempts and in backoffs, then resumes)."""

from __future__ import annotations

import pytest

from tests.conftest import arun
from tests.engine.test_retry_limit import (
    CrashLoop,
    Where,
    check_chain,
    crash_loop,
    during_attempts,
    during_backoffs,
)
from wfctl.storage import open_storage


@pytest.mark.parametrize("where", ["attempt", "backoff"])
def test_kills_never_add_attempts_on_postgres(pg_url: str, where: Where) -> None:
    async def main() -> CrashLoop:
        storage = open_storage(pg_url)
        try:
            seen = await crash_loop(storage, where)
            await check_chain(storage)
            return seen
        finally:
            await storage.aclose()

    seen = arun(main())
    (during_attempts if where == "attempt" else during_backoffs)(seen)
