"""``wfctl du`` of a PostgreSQL store, through the installed executable, against the private
server: each run's bytes are its records' bytes as the table holds them, the store's are its
wfctl relations' as the server counts them, and nothing is written."""

from __future__ import annotations

import asyncio

import psycopg

from tests.cli.conftest import wfctl
from tests.cli.test_json_documents import _check
from tests.sources.stores import fill, table_digest
from wfctl._redact import redact


def test_du_of_a_postgresql_store_counts_its_rows(pg_url: str) -> None:
    runs = asyncio.run(fill(pg_url))
    before = table_digest(pg_url)
    done = wfctl("du", "--store", pg_url, "--json")
    assert done.code == 0, done.stderr
    document = done.json()
    _check(document, "du")
    assert document["source"] == "wfctl-postgresql"
    assert document["store"] == redact(pg_url)  # a password is never shown
    with psycopg.connect(pg_url, autocommit=True) as conn:
        rows = conn.execute(
            "SELECT run_id, count(*), sum(octet_length(record)) FROM wfctl_checkpoints"
            " GROUP BY run_id"
        ).fetchall()
        relations = conn.execute(
            "SELECT sum(pg_total_relation_size(format('%I.%I', schemaname, tablename)))"
            " FROM pg_tables WHERE schemaname = 'public' AND tablename LIKE 'wfctl%'"
        ).fetchone()
    held = {run_id: (count, int(size)) for run_id, count, size in rows}
    assert set(held) == set(runs.values())
    counted = {r["run_id"]: (r["record_count"], r["size_bytes"]) for r in document["runs"]}
    assert counted == held
    sizes = [r["size_bytes"] for r in document["runs"]]
    assert sizes == sorted(sizes, reverse=True) and len(set(sizes)) == 3
    assert document["size_bytes"] == sum(size for _, size in held.values())
    assert relations is not None and document["store_size_bytes"] == int(relations[0])
    statuses = {r["run_id"]: r["status"] for r in document["runs"]}
    assert statuses == {run_id: status for status, run_id in runs.items()}

    failed = wfctl("du", runs["failed"], "--store", pg_url, "--json")
    assert failed.code == 0 and [r["run_id"] for r in failed.json()["runs"]] == [runs["failed"]]
    unknown = wfctl("du", "20991231-000000-deadbeef", "--store", pg_url)
    assert unknown.code == 2 and unknown.stdout == ""
    assert unknown.error_line() == "wfctl: error: run '20991231-000000-deadbeef' not found"
    text = wfctl("du", "--store", pg_url)
    assert text.code == 0 and runs["paused"] in text.stdout and "on disk" in text.stdout
    assert table_digest(pg_url) == before
