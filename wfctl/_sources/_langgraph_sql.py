"""The statements both LangGraph backends write alike: one checkpoint, a thread's subgraph
namespaces, a checkpoint's writes, ids by prefix, writes without their checkpoint. Each backend
says its placeholder, its writes table and value column, what it selects of a checkpoint, and
how it runs a statement."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from ._langgraph_model import Checkpoint, Write
from ._msgpack import decode_typed

__all__ = ["SqlStatements", "add_totals"]

#: How many checkpoints an id prefix lists at most (one more than an ambiguous one names).
CANDIDATES = 6


class SqlStatements:
    """The statements of :class:`~._langgraph_model.Backend` that read the same in both
    dialects."""

    _P = "?"
    _WRITES = "writes"
    _VALUE = "value"
    _TASK_PATH = "task_path"
    _CHECKPOINT_SELECT = ""

    def _rows(self, query: str, args: tuple[Any, ...]) -> Iterable[Any]:
        raise NotImplementedError

    def _checkpoint(self, row: Any) -> Checkpoint:
        raise NotImplementedError

    def checkpoint(self, thread_id: str, ns: str, checkpoint_id: str) -> Checkpoint | None:
        p = self._P
        for row in self._rows(
            f"SELECT {self._CHECKPOINT_SELECT} FROM checkpoints"
            f" WHERE thread_id = {p} AND checkpoint_ns = {p} AND checkpoint_id = {p}",
            (thread_id, ns, checkpoint_id),
        ):
            return self._checkpoint(row)
        return None

    def namespaces(self, thread_id: str) -> list[tuple[str, str]]:
        return [
            (row[0], row[1])
            for row in self._rows(
                "SELECT checkpoint_ns, min(checkpoint_id) FROM checkpoints"
                f" WHERE thread_id = {self._P} AND checkpoint_ns != ''"
                " GROUP BY checkpoint_ns ORDER BY 2",
                (thread_id,),
            )
        ]

    def writes(self, thread_id: str, ns: str, checkpoint_id: str) -> list[Write]:
        p, path = self._P, self._TASK_PATH
        rows = self._rows(
            f"SELECT task_id, {path}, idx, channel, type, {self._VALUE} FROM {self._WRITES}"
            f" WHERE thread_id = {p} AND checkpoint_ns = {p} AND checkpoint_id = {p}"
            f" ORDER BY {path}, task_id, idx",
            (thread_id, ns, checkpoint_id),
        )
        return [
            Write(
                task, path or "", idx, channel, kind, decode_typed(kind, value), len(value or b"")
            )
            for task, path, idx, channel, kind, value in rows
        ]

    def find(self, prefix: str) -> list[tuple[str, str, str]]:
        p = self._P
        rows = self._rows(
            "SELECT thread_id, checkpoint_ns, checkpoint_id FROM checkpoints"
            f" WHERE substr(checkpoint_id, 1, {p}) = {p}"
            f" ORDER BY checkpoint_id, thread_id LIMIT {p}",
            (len(prefix), prefix, CANDIDATES),
        )
        return [(str(t), ns, cid) for t, ns, cid in rows]

    def orphan_writes(self, thread_id: str) -> list[tuple[str, str]]:
        return [
            (row[0], row[1])
            for row in self._rows(
                f"SELECT DISTINCT w.checkpoint_ns, w.checkpoint_id FROM {self._WRITES} AS w"
                f" WHERE w.thread_id = {self._P} AND NOT EXISTS (SELECT 1 FROM checkpoints AS c"
                " WHERE c.thread_id = w.thread_id AND c.checkpoint_ns = w.checkpoint_ns"
                " AND c.checkpoint_id = w.checkpoint_id) ORDER BY 1, 2",
                (thread_id,),
            )
        ]


def add_totals(totals: dict[str, list[int]], rows: Iterable[tuple[Any, Any, Any]]) -> None:
    """Add ``(channel, values, bytes)`` rows to ``totals`` (``{channel: [values, bytes]}``)."""
    for channel, count, size in rows:
        counted = totals.setdefault(str(channel), [0, 0])
        counted[0] += int(count)
        counted[1] += int(size or 0)
