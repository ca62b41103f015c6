"""The SQL of DBOS's system database, read-only, written once for SQLite and PostgreSQL.

Each backend says its placeholder, how it measures a column's bytes, where DBOS's tables are
(PostgreSQL: schema ``dbos``) and how it runs a statement; the statements are this module's.
A workflow is *nested* in its parent when a step of the parent (not one of DBOS's own
operations, ``DBOS.*``) names it as its ``child_workflow_id`` and the child's
``parent_workflow_id`` is that parent; every other workflow is a run of its own (a *root*).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from wfctl._errors import StoreLocationError

from ._dbos_model import EPOCH_MS_RANGE
from ._sqlite_file import connect_readonly, has_sqlite_header, open_readonly, table_names

__all__ = ["DBOS_TABLES", "DbosStatements", "SqliteBackend", "is_dbos_sqlite"]

#: The tables whose presence says a database is DBOS's system database.
DBOS_TABLES = frozenset({"workflow_status", "operation_outputs", "dbos_migrations"})

#: Step rows a server sends at a time: a step's output may be big, so few are held at once.
STEP_PAGE = 32
_WORKFLOW = (
    "w.workflow_uuid, w.status, w.name, w.created_at, w.updated_at, w.completed_at,"
    " w.recovery_attempts, w.queue_name, w.forked_from, w.was_forked_from,"
    " w.parent_workflow_id, w.serialization"
)


class DbosStatements:
    """The statements over DBOS's tables; a backend fills in the dialect."""

    kind = ""
    location = ""
    _P = "?"
    _T = ""  # the tables' schema, with its dot
    _BYTES = ""  # the collation that orders text by its code points, as Python does

    def _len(self, column: str) -> str:
        raise NotImplementedError

    def _rows(self, query: str, args: tuple[Any, ...] = (), page: int = 1000) -> Iterator[Any]:
        """The rows of ``query``, streamed (a server fetches ``page`` rows at a time)."""
        raise NotImplementedError

    def close(self) -> None:
        raise NotImplementedError

    def _nested(self, o: str, w: str) -> str:
        """The condition that step ``o`` starts workflow ``w`` as its child."""
        return (
            f"{o}.workflow_uuid = {w}.parent_workflow_id AND {o}.child_workflow_id ="
            f" {w}.workflow_uuid AND substr({o}.function_name, 1, 5) <> 'DBOS.'"
        )

    def _tree(self, root: str) -> str:
        """``top(wf)``: the roots (``root`` selects them); ``tree(root, wf)``: each root's
        workflows, itself and the children nested in it (deduplicated: a loop ends)."""
        t = self._T
        return f"""
            WITH RECURSIVE top(wf) AS (SELECT w.workflow_uuid FROM {t}workflow_status AS w
                WHERE {root}),
            tree(root, wf) AS (
                SELECT wf, wf FROM top
                UNION
                SELECT tree.root, c.workflow_uuid FROM tree
                JOIN {t}operation_outputs AS o ON o.workflow_uuid = tree.wf
                JOIN {t}workflow_status AS c ON {self._nested("o", "c")})"""

    def _is_root(self) -> str:
        t = self._T
        return (
            f"w.parent_workflow_id IS NULL OR NOT EXISTS (SELECT 1 FROM {t}operation_outputs"
            f" AS o JOIN {t}workflow_status AS p ON p.workflow_uuid = o.workflow_uuid"
            f" WHERE {self._nested('o', 'w')})"
        )

    def _result(self, workflow: str) -> str:
        """How many results (0 or 1: a ``workflow_output`` row with an output or an error)
        the workflow ``workflow`` names has."""
        return (
            f"(SELECT count(*) FROM {self._T}workflow_output AS r WHERE r.workflow_uuid ="
            f" {workflow} AND (r.output IS NOT NULL OR r.error IS NOT NULL))"
        )

    def result(self, workflow_id: str) -> tuple[Any, Any] | None:
        """The workflow's own output and error (``workflow_output``), None without either."""
        t, p = self._T, self._P
        query = (
            f"SELECT output, error FROM {t}workflow_output WHERE workflow_uuid = {p}"
            " AND (output IS NOT NULL OR error IS NOT NULL)"
        )
        for output, error in self._rows(query, (workflow_id,)):
            return output, error
        return None

    def migration(self) -> int | None:
        """The newest ``dbos_migrations`` version, None when the table holds none."""
        for (version,) in self._rows(f"SELECT max(version) FROM {self._T}dbos_migrations"):
            return None if version is None else int(version)
        return None

    def listing(
        self, newest_first: bool | None = None, workflow_id: str | None = None
    ) -> Iterator[Any]:
        """Each root with its workflow columns, its tree's entry count (steps and results),
        its newest step, whether its parent exists and whether it has its result, oldest
        first: one statement, streamed. With ``newest_first`` (True or False), in the order of
        ``wfctl runs --sort created`` exactly: by creation time, a workflow without one
        oldest, ties by id in code point order, newest first when True. With
        ``workflow_id``, that root only (none when it is no root).

        Steps are counted per workflow in one pass over ``operation_outputs``' key; only the
        workflows with nested children add their descendants' counts (a recursive query over
        the nesting links alone), so a store of many workflows and few children costs one
        scan, not one recursion per workflow."""
        t = self._T
        done = "CASE WHEN r.workflow_uuid IS NULL THEN 0 ELSE 1 END"  # it has its result
        one = "" if workflow_id is None else f" AND w.workflow_uuid = {self._P}"
        query = f"""
            WITH RECURSIVE
            steps AS (SELECT workflow_uuid AS wf, count(*) AS n, max(function_id) AS head
                      FROM {t}operation_outputs GROUP BY workflow_uuid),
            nested(root, wf) AS (
                SELECT o.workflow_uuid, c.workflow_uuid FROM {t}operation_outputs AS o
                JOIN {t}workflow_status AS c ON {self._nested("o", "c")}
                UNION
                SELECT nested.root, c.workflow_uuid FROM nested
                JOIN {t}operation_outputs AS o ON o.workflow_uuid = nested.wf
                JOIN {t}workflow_status AS c ON {self._nested("o", "c")}),
            extra AS (SELECT nested.root,
                             sum(coalesce(steps.n, 0) + {self._result("nested.wf")}) AS n
                      FROM nested LEFT JOIN steps ON steps.wf = nested.wf GROUP BY nested.root)
            SELECT {_WORKFLOW},
                   coalesce(s.n, 0) + coalesce(e.n, 0) + {done}, s.head,
                   (SELECT count(*) FROM {t}workflow_status AS p
                    WHERE p.workflow_uuid = w.parent_workflow_id),
                   {done}
            FROM {t}workflow_status AS w
            LEFT JOIN {t}workflow_output AS r ON r.workflow_uuid = w.workflow_uuid
                 AND (r.output IS NOT NULL OR r.error IS NOT NULL)
            LEFT JOIN steps AS s ON s.wf = w.workflow_uuid
            LEFT JOIN extra AS e ON e.root = w.workflow_uuid
            WHERE ({self._is_root()}){one}
            ORDER BY {self._listing_order(newest_first)}"""
        return self._rows(query, () if workflow_id is None else (workflow_id,))

    def _listing_order(self, newest_first: bool | None) -> str:
        """The listing's ORDER BY: as the reader's key orders its runs (``created_at`` as
        :func:`epoch_ms` reads it, ``""`` when it reads none: the oldest; then the id)."""
        if newest_first is None:
            return "w.created_at, w.workflow_uuid"
        low, high = EPOCH_MS_RANGE
        dated = f"w.created_at BETWEEN {low} AND {high}"  # NULL and text are not
        time = f"CASE WHEN {dated} THEN CAST(w.created_at AS BIGINT) END"  # int() truncates
        if newest_first:
            return (
                f"CASE WHEN {dated} THEN 0 ELSE 1 END, {time} DESC,"
                f" w.workflow_uuid{self._BYTES} DESC"
            )
        return f"CASE WHEN {dated} THEN 1 ELSE 0 END, {time}, w.workflow_uuid{self._BYTES}"

    def workflow(self, workflow_id: str) -> Any | None:
        """The workflow's columns (as :meth:`listing` gives them, without the counts)."""
        t, p = self._T, self._P
        query = f"SELECT {_WORKFLOW} FROM {t}workflow_status AS w WHERE w.workflow_uuid = {p}"
        return next(iter(self._rows(query, (workflow_id,))), None)

    def steps(self, workflow_id: str) -> Iterator[Any]:
        """The workflow's steps by ``function_id``, each with the notification it consumed,
        the event it set, whether its child is nested in it and whether it is a fork's copy
        (the workflow it was forked from has the same step, started at the same time),
        streamed."""
        t, p = self._T, self._P
        query = f"""
            SELECT o.function_id, o.function_name, o.output, o.error, o.child_workflow_id,
                   o.started_at_epoch_ms, o.completed_at_epoch_ms, o.serialization,
                   n.topic, n.message, n.serialization, e.key, e.value, e.serialization,
                   (SELECT count(*) FROM {t}workflow_status AS c
                    WHERE c.workflow_uuid = o.child_workflow_id AND {self._nested("o", "c")}),
                   (SELECT count(*) FROM {t}workflow_status AS w
                    JOIN {t}operation_outputs AS f ON f.workflow_uuid = w.forked_from
                    WHERE w.workflow_uuid = o.workflow_uuid AND f.function_id = o.function_id
                    AND f.started_at_epoch_ms = o.started_at_epoch_ms)
            FROM {t}operation_outputs AS o
            LEFT JOIN {t}notifications AS n ON n.destination_uuid = o.workflow_uuid
                 AND n.consumed_by_function_id = o.function_id
            LEFT JOIN {t}workflow_events_history AS e ON e.workflow_uuid = o.workflow_uuid
                 AND e.function_id = o.function_id
            WHERE o.workflow_uuid = {p} ORDER BY o.function_id"""
        return self._rows(query, (workflow_id,), STEP_PAGE)

    def facts(self, workflow_id: str) -> tuple[bool, bool]:
        """Whether the workflow has its output row (an output or an error), and whether
        another workflow names it as ``forked_from``."""
        t, p = self._T, self._P
        query = f"""
            SELECT (SELECT count(*) FROM {t}workflow_output AS r WHERE r.workflow_uuid = {p}
                    AND (r.output IS NOT NULL OR r.error IS NOT NULL)),
                   (SELECT count(*) FROM {t}workflow_status AS f WHERE f.forked_from = {p})"""
        for output, forks in self._rows(query, (workflow_id, workflow_id)):
            return bool(output), bool(forks)
        return False, False

    def sizes(self, run_id: str | None) -> Iterator[tuple[str, str, int, int]]:
        """``(root, kind, records, bytes)`` per root and kind (``steps`` and ``outputs``, the
        workflows' results, are records; inputs, events, notifications and streams count
        bytes), ordered by root."""
        t = self._T
        root = self._is_root() if run_id is None else f"w.workflow_uuid = {self._P}"
        ln = self._len
        query = f"""{self._tree(root)}
            SELECT tree.root, 'steps', count(*),
                   sum(coalesce({ln("o.output")}, 0) + coalesce({ln("o.error")}, 0))
            FROM tree JOIN {t}operation_outputs AS o ON o.workflow_uuid = tree.wf GROUP BY tree.root
            UNION ALL
            SELECT tree.root, 'inputs', 0, sum(coalesce({ln("i.inputs")}, 0))
            FROM tree JOIN {t}workflow_input AS i ON i.workflow_uuid = tree.wf GROUP BY tree.root
            UNION ALL
            SELECT tree.root, 'outputs',
                   sum(CASE WHEN r.output IS NULL AND r.error IS NULL THEN 0 ELSE 1 END),
                   sum(coalesce({ln("r.output")}, 0) + coalesce({ln("r.error")}, 0))
            FROM tree JOIN {t}workflow_output AS r ON r.workflow_uuid = tree.wf GROUP BY tree.root
            UNION ALL
            SELECT tree.root, 'events', 0, sum({ln("e.value")})
            FROM tree JOIN {t}workflow_events_history AS e ON e.workflow_uuid = tree.wf
            GROUP BY tree.root
            UNION ALL
            SELECT tree.root, 'notifications', 0, sum({ln("n.message")})
            FROM tree JOIN {t}notifications AS n ON n.destination_uuid = tree.wf
            GROUP BY tree.root
            UNION ALL
            SELECT tree.root, 'streams', 0, sum({ln("s.value")})
            FROM tree JOIN {t}streams AS s ON s.workflow_uuid = tree.wf GROUP BY tree.root
            ORDER BY 1, 2"""
        args = () if run_id is None else (run_id,)
        for root, kind, rows, size in self._rows(query, args):
            yield str(root), str(kind), int(rows), int(size or 0)


def is_dbos_sqlite(path: Path) -> bool:
    """Whether ``path`` is a SQLite file (its 16-byte header) holding DBOS's
    ``workflow_status``, ``operation_outputs`` and ``dbos_migrations`` tables; read-only,
    nothing created."""
    if not has_sqlite_header(path):
        return False
    try:
        conn = connect_readonly(path)
    except sqlite3.Error:
        return False
    try:
        return table_names(conn) >= DBOS_TABLES
    except sqlite3.Error:
        return False
    finally:
        conn.close()


class SqliteBackend(DbosStatements):
    """DBOS's SQLite system database, read-only.

    Raises:
        StoreLocationError: (from the constructor) no such file, not SQLite, unreadable, or
            without DBOS's tables.
    """

    kind = "dbos-sqlite"

    def __init__(self, path: str) -> None:
        self.location = path
        self._conn = open_readonly(path)
        try:
            missing = sorted(DBOS_TABLES - table_names(self._conn))
        except sqlite3.Error as exc:
            raise StoreLocationError(path, f"cannot be read: {exc}") from None
        if missing:
            self._conn.close()
            raise StoreLocationError(
                path, f"has no {' or '.join(missing)} table: not a DBOS system database"
            )

    def close(self) -> None:
        self._conn.close()

    def _len(self, column: str) -> str:
        return f"length(CAST({column} AS BLOB))"

    def _rows(self, query: str, args: tuple[Any, ...] = (), page: int = 1000) -> Iterator[Any]:
        try:
            for row in self._conn.execute(query, args):  # noqa: UP028 (see the LangGraph reader)
                yield row
        except sqlite3.DatabaseError as exc:
            raise StoreLocationError(self.location, f"cannot be read: {exc}") from None
