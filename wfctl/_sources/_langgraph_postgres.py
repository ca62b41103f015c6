"""The SQL of LangGraph's PostgreSQL checkpointer (``PostgresSaver``), read-only.

One connection, every statement in one read-only repeatable-read transaction (one snapshot
for the source's life); streams are server-side cursors. ``checkpoints`` holds the checkpoint
and metadata as JSONB with primitive channel values inline; other values live in
``checkpoint_blobs`` by (thread, namespace, channel, version), shared by every checkpoint that
names that version; ``checkpoint_writes`` the pending writes. The variant is told by columns:
the deprecated shallow saver (same table names, no ``checkpoint_id``: one checkpoint per
thread, no history) is refused by name.
"""

from __future__ import annotations

import contextlib
import itertools
from collections.abc import Iterator
from typing import Any

import psycopg
from psycopg import sql

from wfctl._errors import StoreLocationError
from wfctl._redact import redact

from ._langgraph_model import Checkpoint, Link, Listing, Summary, link, signals_of
from ._langgraph_sql import SqlStatements, add_totals
from ._msgpack import decode_typed
from ._server import connect_snapshot, failed

__all__ = ["PostgresBackend", "langgraph_tables", "wfctl_tables"]

_TABLES = ("checkpoints", "checkpoint_blobs", "checkpoint_writes")
_CHECKPOINT_BYTES = "pg_column_size(checkpoint) + coalesce(pg_column_size(metadata), 0)"
_COLUMNS = "thread_id, checkpoint_ns, checkpoint_id, parent_checkpoint_id, checkpoint, metadata"
_cursors = itertools.count()
#: Rows a fetch of a stream: aggregates are small rows; checkpoints may be big (their inline
#: values), so fewer of them are held at once.
_PAGE, _CHECKPOINT_PAGE = 1000, 32


def _columns(conn: psycopg.Connection[Any]) -> dict[str, set[str]]:
    found: dict[str, set[str]] = {}
    for table, column in conn.execute(
        "SELECT table_name, column_name FROM information_schema.columns"
        " WHERE table_schema = current_schema()"
    ):
        found.setdefault(str(table), set()).add(str(column))
    return found


def langgraph_tables(conn: psycopg.Connection[Any]) -> bool:
    """Whether the connection's database holds LangGraph's ``checkpoints`` table (of either
    saver)."""
    return {"thread_id", "checkpoint_ns"} <= _columns(conn).get("checkpoints", set())


def wfctl_tables(conn: psycopg.Connection[Any]) -> bool:
    """Whether the connection's database holds wfctl's store."""
    return "wfctl_runs" in _columns(conn)


class PostgresBackend(SqlStatements):
    """Statements over one database of LangGraph's (see :class:`~._langgraph_model.Backend`).

    Raises:
        StoreLocationError: (from the constructor) the server cannot be reached, or the
            database holds no LangGraph tables, or the shallow saver's.
    """

    kind = "langgraph-postgresql"
    _P = "%s"
    _WRITES = "checkpoint_writes"
    _VALUE = "blob"
    _CHECKPOINT_SELECT = f"{_COLUMNS}, {_CHECKPOINT_BYTES}"

    def __init__(self, url: str) -> None:
        self.location = redact(url)
        self._conn = connect_snapshot(url, self.location)
        columns = _columns(self._conn)
        problem = None
        if "checkpoints" in columns and "checkpoint_id" not in columns["checkpoints"]:
            problem = (
                "holds LangGraph's shallow checkpointer (one checkpoint per thread, no "
                "history): not read"
            )
        elif missing := [t for t in _TABLES if t not in columns]:
            problem = f"has no {' or '.join(missing)} table: not a LangGraph checkpoint database"
        if problem is not None:
            self._conn.close()
            raise StoreLocationError(self.location, problem)

    def close(self) -> None:
        self._conn.close()

    def _stream(self, query: str, args: tuple[Any, ...], page: int = _PAGE) -> Iterator[Any]:
        """Rows of ``query`` from a server-side cursor, ``page`` rows a fetch; a server that
        fails is one line naming the store."""
        cursor = self._conn.cursor(name=f"wfctl_lg_{next(_cursors)}")
        try:
            cursor.itersize = page
            cursor.execute(sql.SQL(query), args)
            for row in cursor:  # noqa: UP028 (see _rows)
                yield row
        except psycopg.Error as exc:
            raise failed(self.location, exc) from None
        finally:  # a stream left unfinished may be closed after its connection
            with contextlib.suppress(psycopg.Error):
                cursor.close()

    def summaries(self, thread_id: str | None = None) -> Iterator[Summary]:
        where = "" if thread_id is None else "WHERE thread_id = %s"
        args = () if thread_id is None else (thread_id,)
        query = f"""
            SELECT c.thread_id, c.n, c.subgraphs, c.head, c.first,
                   c.bytes + coalesce(w.bytes, 0) + coalesce(b.bytes, 0)
            FROM (SELECT thread_id, count(*) AS n,
                         count(DISTINCT NULLIF(checkpoint_ns, '')) AS subgraphs,
                         max(checkpoint_id) FILTER (WHERE checkpoint_ns = '') AS head,
                         min(checkpoint_id) FILTER (WHERE checkpoint_ns = '') AS first,
                         sum({_CHECKPOINT_BYTES}) AS bytes
                  FROM checkpoints {where} GROUP BY thread_id) AS c
            LEFT JOIN (SELECT thread_id, sum(coalesce(octet_length(blob), 0)) AS bytes
                       FROM checkpoint_writes {where} GROUP BY thread_id) AS w USING (thread_id)
            LEFT JOIN (SELECT thread_id, sum(coalesce(octet_length(blob), 0)) AS bytes
                       FROM checkpoint_blobs {where} GROUP BY thread_id) AS b USING (thread_id)
            ORDER BY c.thread_id"""
        for row in self._stream(query, args * 3):
            yield Summary(str(row[0]), row[1], row[2], row[3], row[4], int(row[5] or 0))

    def listing(self, thread_id: str | None = None) -> Iterator[Listing]:
        where = "" if thread_id is None else "WHERE thread_id = %s"
        args = () if thread_id is None else (thread_id,)
        query = f"""
            SELECT c.thread_id, c.n, c.subgraphs, c.head, c.first,
                   c.bytes + coalesce(w.bytes, 0) + coalesce(b.bytes, 0),
                   h.parent_checkpoint_id, h.checkpoint, h.metadata,
                   pg_column_size(h.checkpoint) + coalesce(pg_column_size(h.metadata), 0),
                   f.checkpoint->>'ts',
                   (SELECT string_agg(s.channel || chr(9) || s.task_id, chr(10))
                    FROM checkpoint_writes AS s WHERE s.thread_id = c.thread_id
                    AND s.checkpoint_ns = '' AND s.checkpoint_id = c.head AND s.idx < 0)
            FROM (SELECT thread_id, count(*) AS n,
                         count(DISTINCT NULLIF(checkpoint_ns, '')) AS subgraphs,
                         max(checkpoint_id) FILTER (WHERE checkpoint_ns = '') AS head,
                         min(checkpoint_id) FILTER (WHERE checkpoint_ns = '') AS first,
                         sum({_CHECKPOINT_BYTES}) AS bytes
                  FROM checkpoints {where} GROUP BY thread_id) AS c
            LEFT JOIN (SELECT thread_id, sum(coalesce(octet_length(blob), 0)) AS bytes
                       FROM checkpoint_writes {where} GROUP BY thread_id) AS w USING (thread_id)
            LEFT JOIN (SELECT thread_id, sum(coalesce(octet_length(blob), 0)) AS bytes
                       FROM checkpoint_blobs {where} GROUP BY thread_id) AS b USING (thread_id)
            LEFT JOIN checkpoints AS h ON h.thread_id = c.thread_id AND h.checkpoint_ns = ''
                 AND h.checkpoint_id = c.head
            LEFT JOIN checkpoints AS f ON f.thread_id = c.thread_id AND f.checkpoint_ns = ''
                 AND f.checkpoint_id = c.first
            ORDER BY c.thread_id"""
        for row in self._stream(query, args * 3):
            thread, count, subgraphs, head, first, size = row[:6]
            parent, checkpoint, metadata, head_size, first_time, signals = row[6:]
            summary = Summary(str(thread), count, subgraphs, head, first, int(size or 0))
            outlined = None
            if head is not None:
                outlined = Checkpoint(
                    str(thread), "", head, parent, checkpoint, metadata or {}, int(head_size)
                )
            yield Listing(summary, outlined, first_time or "", signals_of(signals))

    def _rows(self, query: str, args: tuple[Any, ...] = ()) -> Iterator[Any]:
        """The rows of ``query``; a server that fails is one line naming the store."""
        try:
            # not ``yield from``: it would close the cursor of a stream left unfinished, which
            # may be after its connection was closed (an error printed at exit)
            for row in self._conn.execute(sql.SQL(query), args):  # noqa: UP028
                yield row
        except psycopg.Error as exc:
            raise failed(self.location, exc) from None

    def _checkpoint(self, row: Any) -> Checkpoint:
        thread, ns, cid, parent, checkpoint, metadata, size = row
        return Checkpoint(str(thread), ns, cid, parent, checkpoint, metadata or {}, int(size))

    def checkpoints(self, thread_id: str, ns: str) -> Iterator[Checkpoint]:
        for row in self._stream(
            f"SELECT {_COLUMNS}, {_CHECKPOINT_BYTES} FROM checkpoints"
            " WHERE thread_id = %s AND checkpoint_ns = %s ORDER BY checkpoint_id",
            (thread_id, ns),
            _CHECKPOINT_PAGE,
        ):
            yield self._checkpoint(row)

    def values(self, checkpoint: Checkpoint) -> dict[str, Any]:
        stored = checkpoint.checkpoint
        inline = stored.get("channel_values")
        values: dict[str, Any] = dict(inline) if isinstance(inline, dict) else {}
        versions = stored.get("channel_versions")
        if not isinstance(versions, dict):
            return values
        apart = [(str(c), str(v)) for c, v in versions.items() if c not in values]
        if not apart:
            return values
        rows = self._rows(
            "SELECT b.channel, b.type, b.blob FROM checkpoint_blobs AS b"
            " JOIN unnest(%s::text[], %s::text[]) AS v(channel, version)"
            " ON b.channel = v.channel AND b.version = v.version"
            " WHERE b.thread_id = %s AND b.checkpoint_ns = %s",
            ([c for c, _ in apart], [v for _, v in apart], checkpoint.thread_id, checkpoint.ns),
        )
        for channel, kind, blob in rows:
            if kind != "empty":
                values[channel] = decode_typed(kind, blob)
        return values

    def links(self, thread_id: str) -> Iterator[Link]:
        for ns, cid, parent, metadata in self._stream(
            "SELECT checkpoint_ns, checkpoint_id, parent_checkpoint_id, metadata"
            " FROM checkpoints WHERE thread_id = %s ORDER BY checkpoint_ns, checkpoint_id",
            (thread_id,),
        ):
            yield link(ns, cid, parent, metadata)

    def missing_blobs(self, thread_id: str) -> list[tuple[str, str, str, str]]:
        """A channel a checkpoint updated, not inline and not a DeltaChannel (whose metadata's
        ``counters_since_delta_snapshot`` names it), whose version no blob holds."""
        return [
            (row[0], row[1], row[2], row[3])
            for row in self._rows(
                """
                SELECT c.checkpoint_ns, c.checkpoint_id, u.channel,
                       c.checkpoint->'channel_versions'->>u.channel
                FROM checkpoints AS c
                CROSS JOIN LATERAL jsonb_array_elements_text(
                    CASE WHEN jsonb_typeof(c.checkpoint->'updated_channels') = 'array'
                         THEN c.checkpoint->'updated_channels' ELSE '[]'::jsonb END
                ) AS u(channel)
                WHERE c.thread_id = %s
                  AND c.checkpoint->'channel_versions' ? u.channel
                  AND NOT coalesce(c.checkpoint->'channel_values' ? u.channel, false)
                  -- a DeltaChannel stores no blob between its snapshots: its value is
                  -- rebuilt from the writes of the checkpoints before
                  AND NOT coalesce(
                      c.metadata->'counters_since_delta_snapshot' ? u.channel, false)
                  AND NOT EXISTS (
                      SELECT 1 FROM checkpoint_blobs AS b
                      WHERE b.thread_id = c.thread_id AND b.checkpoint_ns = c.checkpoint_ns
                        AND b.channel = u.channel
                        AND b.version = c.checkpoint->'channel_versions'->>u.channel)
                ORDER BY 1, 2, 3""",
                (thread_id,),
            )
        ]

    def kind_sizes(self, thread_id: str | None) -> Iterator[tuple[str, str, int, int]]:
        where = "" if thread_id is None else "WHERE thread_id = %s"
        args = () if thread_id is None else (thread_id,)
        query = f"""
            SELECT thread_id, 'blobs', count(*), sum(coalesce(octet_length(blob), 0))
            FROM checkpoint_blobs {where} GROUP BY thread_id
            UNION ALL
            SELECT thread_id, 'checkpoints', count(*), sum({_CHECKPOINT_BYTES})
            FROM checkpoints {where} GROUP BY thread_id
            UNION ALL
            SELECT thread_id, 'writes', count(*), sum(coalesce(octet_length(blob), 0))
            FROM checkpoint_writes {where} GROUP BY thread_id
            ORDER BY 1, 2"""
        for thread, kind, rows, size in self._stream(query, args * 3):
            yield str(thread), kind, int(rows), int(size or 0)

    def channel_sizes(self, thread_id: str) -> Iterator[tuple[str, int, int]]:
        totals: dict[str, list[int]] = {}
        add_totals(
            totals,
            self._rows(
                """
            SELECT channel, count(*), sum(coalesce(octet_length(blob), 0))
            FROM checkpoint_blobs WHERE thread_id = %s GROUP BY channel
            UNION ALL
            SELECT v.key, count(*), sum(octet_length(v.value::text))
            FROM checkpoints AS c, jsonb_each(
                CASE WHEN jsonb_typeof(c.checkpoint->'channel_values') = 'object'
                     THEN c.checkpoint->'channel_values' ELSE '{}'::jsonb END) AS v
            WHERE c.thread_id = %s GROUP BY v.key
            UNION ALL
            SELECT channel, count(*), sum(coalesce(octet_length(blob), 0))
            FROM checkpoint_writes WHERE thread_id = %s GROUP BY channel""",
                (thread_id, thread_id, thread_id),
            ),
        )
        for channel, (rows, size) in totals.items():
            yield channel, rows, size
