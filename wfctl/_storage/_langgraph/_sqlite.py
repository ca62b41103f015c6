"""Changing a LangGraph SQLite store (``SqliteSaver``'s ``checkpoints`` and ``writes``).

Each thread is changed in one ``BEGIN IMMEDIATE`` transaction: it takes the database's write
lock before reading the thread, so a LangGraph writer waits (its own busy timeout) until the
thread is changed and committed, and what the transaction read cannot change under it. A report
only opens the file read-only (``mode=ro``) and writes nothing.
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from urllib.parse import quote

from ._facts import facts_of, grouped, removed_ids
from ._keep import UnprovenThreadError, kept_checkpoints
from ._report import Action, ThreadChange

__all__ = ["SqliteChanger"]

_IN_IDS = "checkpoint_id IN (SELECT value FROM json_each(?))"


class SqliteChanger:
    """One connection to a LangGraph SQLite file, read-only unless ``write``."""

    kind = "langgraph-sqlite"

    def __init__(self, path: str, *, write: bool, busy_timeout: float = 30.0) -> None:
        mode = "rw" if write else "ro"
        uri = f"file:{quote(str(Path(path).absolute()))}?mode={mode}"
        self._conn = sqlite3.connect(uri, uri=True, isolation_level=None, timeout=busy_timeout)
        self._write = write
        tables = {row[0] for row in self._conn.execute("SELECT name FROM sqlite_master")}
        self._has_writes = "writes" in tables

    def close(self) -> None:
        """Close the connection."""
        self._conn.close()

    def threads(self) -> list[str]:
        """Every thread id, sorted."""
        rows = self._conn.execute("SELECT DISTINCT thread_id FROM checkpoints ORDER BY 1")
        return [str(row[0]) for row in rows]

    def change(self, thread: str, action: Action) -> ThreadChange:
        """Prune or remove ``thread`` in one transaction (rolled back when only reporting)."""
        try:
            self._conn.execute("BEGIN IMMEDIATE" if self._write else "BEGIN")
        except sqlite3.OperationalError as exc:
            if "locked" not in str(exc):
                raise
            return ThreadChange(
                thread,
                declined="another writer held the database throughout: left whole, run again",
            )
        try:
            change = self._remove(thread) if action == "remove" else self._prune(thread)
        except BaseException:
            self._conn.execute("ROLLBACK")
            raise
        self._conn.execute("COMMIT" if self._write and change.declined is None else "ROLLBACK")
        return change

    def _remove(self, thread: str) -> ThreadChange:
        count, size = self._conn.execute(
            "SELECT count(*), coalesce(sum(length(checkpoint) + length(metadata)), 0)"
            " FROM checkpoints WHERE thread_id = ?",
            (thread,),
        ).fetchone()
        writes, write_bytes = self._writes_where("thread_id = ?", (thread,))
        if self._write:
            self._conn.execute("DELETE FROM checkpoints WHERE thread_id = ?", (thread,))
            if self._has_writes:
                self._conn.execute("DELETE FROM writes WHERE thread_id = ?", (thread,))
        return ThreadChange(thread, count, writes, 0, size + write_bytes)

    def _prune(self, thread: str) -> ThreadChange:
        rows = self._conn.execute(
            "SELECT checkpoint_ns, checkpoint_id, parent_checkpoint_id, type, checkpoint, metadata"
            " FROM checkpoints WHERE thread_id = ?",
            (thread,),
        )
        try:
            namespaces = grouped(
                (ns, cid, facts_of(cid, parent, kind, body, meta))
                for ns, cid, parent, kind, body, meta in rows
            )
            decision = kept_checkpoints(namespaces)
        except UnprovenThreadError as exc:
            return ThreadChange(thread, declined=exc.reason)
        count = size = writes = write_bytes = 0
        for ns, ids in removed_ids(namespaces, decision.kept).items():
            if not ids:
                continue
            where = f"thread_id = ? AND checkpoint_ns = ? AND {_IN_IDS}"
            params = (thread, ns, json.dumps(ids))
            n, b = self._conn.execute(
                "SELECT count(*), coalesce(sum(length(checkpoint) + length(metadata)), 0)"
                f" FROM checkpoints WHERE {where}",
                params,
            ).fetchone()
            w, wb = self._writes_where(where, params)
            count, size, writes, write_bytes = count + n, size + b, writes + w, write_bytes + wb
            if self._write:
                self._conn.execute(f"DELETE FROM checkpoints WHERE {where}", params)
                if self._has_writes:
                    self._conn.execute(f"DELETE FROM writes WHERE {where}", params)
        if self._write:
            for ns, orphans in decision.orphans.items():
                self._conn.execute(
                    "UPDATE checkpoints SET parent_checkpoint_id = NULL"
                    f" WHERE thread_id = ? AND checkpoint_ns = ? AND {_IN_IDS}",
                    (thread, ns, json.dumps(sorted(orphans))),
                )
        kept = sum(len(ids) for ids in decision.kept.values())
        return ThreadChange(thread, count, writes, 0, size + write_bytes, kept)

    def _writes_where(self, where: str, params: tuple[str, ...]) -> tuple[int, int]:
        if not self._has_writes:
            return 0, 0
        count, size = self._conn.execute(
            f"SELECT count(*), coalesce(sum(length(value)), 0) FROM writes WHERE {where}", params
        ).fetchone()
        return int(count), int(size)
