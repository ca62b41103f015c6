"""Changing a LangGraph PostgreSQL store (``PostgresSaver``'s ``checkpoints``,
``checkpoint_blobs`` and ``checkpoint_writes``).

Each thread is changed in one ``REPEATABLE READ`` transaction holding a transaction advisory
lock on the thread (two wfctl changes of one thread run one after the other). What it reads is
one snapshot, and it deletes only rows of that snapshot, by id: a checkpoint, write or blob a
LangGraph run commits meanwhile is neither seen nor deleted. A blob goes only when a removed
checkpoint named its version and no kept one does, so the blob of a checkpoint being saved
meanwhile (written before its checkpoint row) stays. A row the run changes that the
transaction deletes makes PostgreSQL refuse it (a serialization failure): the thread is then
left whole and reported as declined, and the command can be run again.
"""

from __future__ import annotations

from typing import Any

from ._facts import grouped, is_delta_snapshot, metadata_facts, removed_ids
from ._keep import Facts, UnprovenThreadError, kept_checkpoints
from ._report import Action, ThreadChange

__all__ = ["PostgresChanger"]

_ROWS = """
SELECT checkpoint_ns, checkpoint_id, parent_checkpoint_id,
       checkpoint -> 'channel_versions',
       ARRAY(SELECT key FROM jsonb_each(checkpoint -> 'channel_values')
             WHERE value <> 'null'::jsonb),
       checkpoint ->> 'v', metadata, pg_column_size(checkpoint) + pg_column_size(metadata)
FROM checkpoints WHERE thread_id = %s
"""
_BLOBS = """
SELECT checkpoint_ns, channel, version, type, coalesce(octet_length(blob), 0),
       coalesce(substring(blob from 1 for 6), ''::bytea)
FROM checkpoint_blobs WHERE thread_id = %s
"""
_WRITES = """
SELECT count(*), coalesce(sum(octet_length(blob)), 0) FROM checkpoint_writes
WHERE thread_id = %s AND checkpoint_ns = %s AND checkpoint_id = ANY(%s)
"""
_LOCK = "SELECT pg_advisory_xact_lock(hashtext('wfctl langgraph change'), hashtext(%s))"


class PostgresChanger:
    """One connection to a LangGraph PostgreSQL database, read-only unless ``write``."""

    kind = "langgraph-postgresql"

    def __init__(self, url: str, *, write: bool) -> None:
        import psycopg

        self._psycopg = psycopg
        self._conn = psycopg.connect(url, autocommit=True)
        self._conn.isolation_level = psycopg.IsolationLevel.REPEATABLE_READ
        self._conn.read_only = not write
        self._write = write

    def close(self) -> None:
        """Close the connection."""
        self._conn.close()

    def threads(self) -> list[str]:
        """Every thread id, sorted."""
        with self._conn.transaction():
            rows = self._conn.execute("SELECT DISTINCT thread_id FROM checkpoints ORDER BY 1")
            return [str(row[0]) for row in rows]

    def change(self, thread: str, action: Action) -> ThreadChange:
        """Prune or remove ``thread`` in one transaction (rolled back when only reporting)."""
        errors = self._psycopg.errors
        try:
            with self._conn.transaction() as transaction:
                if self._write:
                    self._conn.execute(_LOCK, (thread,))
                change = self._remove(thread) if action == "remove" else self._prune(thread)
                if not self._write or change.declined is not None:
                    raise self._psycopg.Rollback(transaction)
        except (errors.SerializationFailure, errors.DeadlockDetected):
            return ThreadChange(
                thread, declined="another writer changed it meanwhile: left whole, run again"
            )
        return change

    def _one(self, sql: str, params: tuple[Any, ...]) -> tuple[int, int]:
        row = self._conn.execute(sql, params).fetchone()
        assert row is not None  # an aggregate always answers one row
        return int(row[0]), int(row[1])

    def _remove(self, thread: str) -> ThreadChange:
        count, size = self._one(
            "SELECT count(*), coalesce(sum(pg_column_size(checkpoint) + pg_column_size(metadata)),"
            " 0) FROM checkpoints WHERE thread_id = %s",
            (thread,),
        )
        writes, write_bytes = self._one(
            "SELECT count(*), coalesce(sum(octet_length(blob)), 0) FROM checkpoint_writes"
            " WHERE thread_id = %s",
            (thread,),
        )
        blobs, blob_bytes = self._one(
            "SELECT count(*), coalesce(sum(octet_length(blob)), 0) FROM checkpoint_blobs"
            " WHERE thread_id = %s",
            (thread,),
        )
        if self._write:
            for table in ("checkpoints", "checkpoint_writes", "checkpoint_blobs"):
                self._conn.execute(f"DELETE FROM {table} WHERE thread_id = %s", (thread,))
        return ThreadChange(thread, count, writes, blobs, size + write_bytes + blob_bytes)

    def _prune(self, thread: str) -> ThreadChange:
        blobs = {
            (ns, channel, version): (kind, size, bytes(head))
            for ns, channel, version, kind, size, head in self._conn.execute(_BLOBS, (thread,))
        }
        versions: dict[tuple[str, str], dict[str, str]] = {}
        sizes: dict[tuple[str, str], int] = {}

        def facts(ns: str, cid: str, row: tuple[Any, ...]) -> Facts:
            parent, channel_versions, inline, v, metadata, size = row
            channel_versions = channel_versions or {}
            versions[ns, cid], sizes[ns, cid] = channel_versions, int(size)
            stored = {
                ch: blobs[ns, ch, ver]
                for ch, ver in channel_versions.items()
                if (ns, ch, ver) in blobs and blobs[ns, ch, ver][0] != "empty"
            }
            delta, root, versioned = metadata_facts(metadata)
            if versioned:
                raise UnprovenThreadError(f"checkpoint {cid} has versioned DeltaChannel writes")
            snapshots = {ch for ch, (_, _, head) in stored.items() if is_delta_snapshot(head)}
            return Facts(
                parent=parent,
                seeds=frozenset(inline) | frozenset(stored),
                delta=delta | frozenset(snapshots),
                root=root,
                version=int(v) if v and v.isdigit() else 0,
            )

        rows = self._conn.execute(_ROWS, (thread,)).fetchall()
        try:
            namespaces = grouped((r[0], r[1], facts(r[0], r[1], r[2:])) for r in rows)
            decision = kept_checkpoints(namespaces)
        except UnprovenThreadError as exc:
            return ThreadChange(thread, declined=exc.reason)
        count = size = writes = blob_count = 0
        for ns, ids in removed_ids(namespaces, decision.kept).items():
            if not ids:
                continue
            n, b = self._one(_WRITES, (thread, ns, ids))
            count, writes = count + len(ids), writes + n
            size += b + sum(sizes[ns, cid] for cid in ids)
            freed = {(ch, ver) for cid in ids for ch, ver in versions[ns, cid].items()}
            referenced = {
                (ch, ver) for cid in decision.kept[ns] for ch, ver in versions[ns, cid].items()
            }
            garbage = sorted(key for key in freed - referenced if (ns, *key) in blobs)
            blob_count += len(garbage)
            size += sum(blobs[ns, ch, ver][1] for ch, ver in garbage)
            if self._write:
                self._delete(thread, ns, ids, garbage)
        if self._write:
            for ns, orphans in decision.orphans.items():
                self._conn.execute(
                    "UPDATE checkpoints SET parent_checkpoint_id = NULL"
                    " WHERE thread_id = %s AND checkpoint_ns = %s AND checkpoint_id = ANY(%s)",
                    (thread, ns, sorted(orphans)),
                )
        kept = sum(len(ids) for ids in decision.kept.values())
        return ThreadChange(thread, count, writes, blob_count, size, kept)

    def _delete(self, thread: str, ns: str, ids: list[str], garbage: list[tuple[str, str]]) -> None:
        where = "thread_id = %s AND checkpoint_ns = %s AND checkpoint_id = ANY(%s)"
        self._conn.execute(f"DELETE FROM checkpoint_writes WHERE {where}", (thread, ns, ids))
        self._conn.execute(f"DELETE FROM checkpoints WHERE {where}", (thread, ns, ids))
        for channel, version in garbage:
            self._conn.execute(
                "DELETE FROM checkpoint_blobs WHERE thread_id = %s AND checkpoint_ns = %s"
                " AND channel = %s AND version = %s",
                (thread, ns, channel, version),
            )
