"""The SQL of LangGraph's SQLite checkpointer (``SqliteSaver``), read-only.

The file is opened ``mode=ro`` (and ``immutable`` when no ``-wal`` or ``-journal`` holds rows
beside it, so that SQLite creates no file; otherwise SQLite reads the ``-wal`` itself): a
missing file is refused, never created. Its ``checkpoints`` rows hold the whole checkpoint
(msgpack, channel values inline) and JSON metadata; ``writes`` the pending writes. A file of an
older saver without ``writes.task_path`` is read with empty task paths.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from wfctl._errors import StoreLocationError

from ._langgraph_model import Checkpoint, Link, Listing, Summary, link, signals_of
from ._langgraph_sql import SqlStatements, add_totals
from ._msgpack import UNDECODABLE, channel_bytes, decode_typed, outline
from ._sqlite_file import connect_readonly, has_sqlite_header, open_readonly, table_names

__all__ = ["SqliteBackend", "is_langgraph_sqlite"]

#: The bytes of a row's stored blobs (a text column counted as its UTF-8 bytes).
_CHECKPOINT_BYTES = "length(CAST(checkpoint AS BLOB)) + coalesce(length(CAST(metadata AS BLOB)), 0)"
_WRITE_BYTES = "coalesce(length(CAST(value AS BLOB)), 0)"


def is_langgraph_sqlite(path: Path) -> bool:
    """Whether ``path`` is a SQLite file (its 16-byte header) holding LangGraph's
    ``checkpoints`` table (its ``thread_id``, ``checkpoint_ns`` and ``checkpoint_id``); read-only,
    nothing created. A file without ``writes``, or one SQLite cannot read (malformed, cut
    short), is taken all the same, so that opening it says what is wrong with it."""
    if not has_sqlite_header(path):
        return False
    try:
        conn = connect_readonly(path)
    except sqlite3.Error:
        return True
    try:
        columns = {row[1] for row in conn.execute("PRAGMA table_info(checkpoints)")}
        return {"thread_id", "checkpoint_ns", "checkpoint_id"} <= columns
    except sqlite3.Error:
        return True
    finally:
        conn.close()


def _outline(kind: str | None, blob: Any) -> Any:
    """A checkpoint outlined for a listing (:func:`~._msgpack.outline`), or decoded when it is
    not msgpack (a pickle is opaque)."""
    return outline(bytes(blob or b"")) if kind == "msgpack" else decode_typed(kind, blob)


def _metadata(raw: Any) -> Any:
    if raw is None:
        return {}
    text = raw if isinstance(raw, str) else bytes(raw)
    try:
        return json.loads(text)
    except (ValueError, RecursionError) as exc:
        return {UNDECODABLE: "json", "bytes": len(text), "problem": f"metadata is not JSON: {exc}"}


class SqliteBackend(SqlStatements):
    """Statements over one SQLite file of LangGraph's (see :class:`~._langgraph.Backend`).

    Raises:
        StoreLocationError: (from the constructor) no such file, not SQLite, or without
            LangGraph's tables.
    """

    kind = "langgraph-sqlite"

    def __init__(self, path: str) -> None:
        self.location = path
        self._conn = open_readonly(path)
        try:
            tables = table_names(self._conn)
            missing = sorted({"checkpoints", "writes"} - tables)
            columns = {row[1] for row in self._conn.execute("PRAGMA table_info(writes)")}
        except sqlite3.Error as exc:
            raise StoreLocationError(path, f"cannot be read: {exc}") from None
        if missing:
            self._conn.close()
            raise StoreLocationError(
                path, f"has no {' or '.join(missing)} table: not a LangGraph checkpoint database"
            )
        self._TASK_PATH = "task_path" if "task_path" in columns else "''"

    def close(self) -> None:
        self._conn.close()

    def summaries(self, thread_id: str | None = None) -> Iterator[Summary]:
        where = "" if thread_id is None else "WHERE thread_id = ?"
        args = () if thread_id is None else (thread_id,)
        sql = f"""
            SELECT c.thread_id, c.n, c.subgraphs, c.head, c.first, c.bytes + coalesce(w.bytes, 0)
            FROM (SELECT thread_id, count(*) AS n, count(DISTINCT NULLIF(checkpoint_ns, ''))
                         AS subgraphs,
                         max(CASE WHEN checkpoint_ns = '' THEN checkpoint_id END) AS head,
                         min(CASE WHEN checkpoint_ns = '' THEN checkpoint_id END) AS first,
                         sum({_CHECKPOINT_BYTES}) AS bytes
                  FROM checkpoints {where} GROUP BY thread_id) AS c
            LEFT JOIN (SELECT thread_id, sum({_WRITE_BYTES}) AS bytes
                       FROM writes {where} GROUP BY thread_id) AS w USING (thread_id)
            ORDER BY c.thread_id"""
        for row in self._rows(sql, args * 2):
            yield Summary(str(row[0]), row[1], row[2], row[3], row[4], row[5] or 0)

    def listing(self, thread_id: str | None = None) -> Iterator[Listing]:
        where = "" if thread_id is None else "WHERE thread_id = ?"
        args = () if thread_id is None else (thread_id,)
        sql = f"""
            SELECT c.thread_id, c.n, c.subgraphs, c.head, c.first, c.bytes + coalesce(w.bytes, 0),
                   h.parent_checkpoint_id, h.type, h.checkpoint, h.metadata, f.type, f.checkpoint,
                   (SELECT group_concat(s.channel || char(9) || s.task_id, char(10))
                    FROM writes AS s WHERE s.thread_id = c.thread_id AND s.checkpoint_ns = ''
                    AND s.checkpoint_id = c.head AND s.idx < 0)
            FROM (SELECT thread_id, count(*) AS n, count(DISTINCT NULLIF(checkpoint_ns, ''))
                         AS subgraphs,
                         max(CASE WHEN checkpoint_ns = '' THEN checkpoint_id END) AS head,
                         min(CASE WHEN checkpoint_ns = '' THEN checkpoint_id END) AS first,
                         sum({_CHECKPOINT_BYTES}) AS bytes
                  FROM checkpoints {where} GROUP BY thread_id) AS c
            LEFT JOIN (SELECT thread_id, sum({_WRITE_BYTES}) AS bytes
                       FROM writes {where} GROUP BY thread_id) AS w USING (thread_id)
            LEFT JOIN checkpoints AS h ON h.thread_id = c.thread_id AND h.checkpoint_ns = ''
                 AND h.checkpoint_id = c.head
            LEFT JOIN checkpoints AS f ON f.thread_id = c.thread_id AND f.checkpoint_ns = ''
                 AND f.checkpoint_id = c.first
            ORDER BY c.thread_id"""
        for row in self._rows(sql, args * 2):
            thread, count, subgraphs, head, first, size = row[:6]
            parent, kind, blob, metadata, first_kind, first_blob, signals = row[6:]
            summary = Summary(str(thread), count, subgraphs, head, first, size or 0)
            outlined = None
            if head is not None:
                size = len(blob or b"") + len(metadata or b"")
                outlined = Checkpoint(
                    str(thread), "", head, parent, _outline(kind, blob), _metadata(metadata), size
                )
            start = _outline(first_kind, first_blob) if first is not None else None
            when = start.get("ts") if isinstance(start, dict) else None
            yield Listing(
                summary, outlined, when if isinstance(when, str) else "", signals_of(signals)
            )

    def _checkpoint(self, row: Any) -> Checkpoint:
        thread, ns, cid, parent, kind, blob, metadata = row
        size = len(blob or b"") + len(metadata or b"")
        return Checkpoint(
            str(thread), ns, cid, parent, decode_typed(kind, blob), _metadata(metadata), size
        )

    _COLUMNS = (
        "thread_id, checkpoint_ns, checkpoint_id, parent_checkpoint_id, type, checkpoint, metadata"
    )
    _CHECKPOINT_SELECT = _COLUMNS

    def _rows(self, query: str, args: tuple[Any, ...] = ()) -> Iterator[Any]:
        """The rows of ``query``, streamed; a file SQLite cannot read (malformed, cut short)
        is one line naming it, whenever SQLite finds out."""
        try:
            # not ``yield from``: it would close the cursor of a stream left unfinished, which
            # may be after its connection was closed (an error printed at exit)
            for row in self._conn.execute(query, args):  # noqa: UP028
                yield row
        except sqlite3.DatabaseError as exc:
            raise StoreLocationError(self.location, f"cannot be read: {exc}") from None

    def checkpoints(self, thread_id: str, ns: str) -> Iterator[Checkpoint]:
        cursor = self._rows(
            f"SELECT {self._COLUMNS} FROM checkpoints"
            " WHERE thread_id = ? AND checkpoint_ns = ? ORDER BY checkpoint_id",
            (thread_id, ns),
        )
        for row in cursor:
            yield self._checkpoint(row)

    def values(self, checkpoint: Checkpoint) -> dict[str, Any]:
        values = checkpoint.checkpoint.get("channel_values")
        return values if isinstance(values, dict) else {}

    def links(self, thread_id: str) -> Iterator[Link]:
        cursor = self._rows(
            "SELECT checkpoint_ns, checkpoint_id, parent_checkpoint_id, metadata"
            " FROM checkpoints WHERE thread_id = ? ORDER BY checkpoint_ns, checkpoint_id",
            (thread_id,),
        )
        for ns, cid, parent, metadata in cursor:
            yield link(ns, cid, parent, _metadata(metadata))

    def missing_blobs(self, thread_id: str) -> list[tuple[str, str, str, str]]:
        return []  # the checkpoint holds its values: nothing is stored apart

    def kind_sizes(self, thread_id: str | None) -> Iterator[tuple[str, str, int, int]]:
        where = "" if thread_id is None else "WHERE thread_id = ?"
        args = () if thread_id is None else (thread_id,)
        sql = f"""
            SELECT thread_id, 'checkpoints', count(*), sum({_CHECKPOINT_BYTES})
            FROM checkpoints {where} GROUP BY thread_id
            UNION ALL
            SELECT thread_id, 'writes', count(*), sum({_WRITE_BYTES})
            FROM writes {where} GROUP BY thread_id
            ORDER BY 1, 2"""
        for thread, kind, rows, size in self._rows(sql, args * 2):
            yield str(thread), kind, rows, size or 0

    def channel_sizes(self, thread_id: str) -> Iterator[tuple[str, int, int]]:
        totals: dict[str, list[int]] = {}
        for (blob,) in self._rows(
            "SELECT checkpoint FROM checkpoints WHERE thread_id = ? AND type = 'msgpack'",
            (thread_id,),
        ):
            add_totals(totals, ((c, 1, n) for c, n in channel_bytes(bytes(blob)).items()))
        add_totals(
            totals,
            self._rows(
                f"SELECT channel, count(*), sum({_WRITE_BYTES}) FROM writes WHERE thread_id = ?"
                " GROUP BY channel",
                (thread_id,),
            ),
        )
        for channel, (rows, size) in totals.items():
            yield channel, rows, size
