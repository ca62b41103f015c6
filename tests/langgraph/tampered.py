"""Copies of a LangGraph SQLite file the real LangGraph wrote, changed the way a hostile or a
damaged store would be: rows a careless reader would unpickle or import from, truncated
values, unknown extension codes, a newer checkpoint format, a missing table, two ``loop``
children of one checkpoint."""

from __future__ import annotations

import pickle
import shutil
import sqlite3
import uuid
from pathlib import Path
from typing import Any

import msgpack

__all__ = [
    "PLANTED_MODULE",
    "copy_of",
    "damaged",
    "head_of",
    "hostile_copy",
    "plant",
    "with_newer_format",
    "with_truncated_checkpoint",
    "with_two_loop_children",
    "with_unknown_ext",
    "without_task_path",
    "without_writes",
]

#: The module a hostile extension names (written into a directory the test puts on the path).
PLANTED_MODULE = "lg_planted_module"


class _Creates:
    """An object whose unpickling opens (creates) a file: ``open(path, "w")``."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def __reduce__(self) -> tuple[Any, tuple[str, str]]:
        return (open, (str(self.path), "w"))


def copy_of(source: Path, target: Path) -> Path:
    """``source`` copied to ``target`` (a file)."""
    target.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(source, target)
    return target


def head_of(path: Path, thread: str) -> str:
    """The head checkpoint id of ``thread`` (its newest in the root namespace)."""
    with sqlite3.connect(path) as conn:
        (head,) = conn.execute(
            "SELECT max(checkpoint_id) FROM checkpoints WHERE thread_id = ? AND checkpoint_ns = ''",
            (thread,),
        ).fetchone()
    conn.close()
    return str(head)


def _change(path: Path, sql: str, *args: Any) -> None:
    conn = sqlite3.connect(path)
    try:
        with conn:
            conn.execute(sql, args)
    finally:
        conn.close()


def plant(planted: Path, module_dir: Path) -> tuple[bytes, bytes]:
    """A pickle that creates ``planted`` when unpickled, and msgpack bytes of an extension
    naming :data:`PLANTED_MODULE`, written into ``module_dir``, whose import creates
    ``planted.with_suffix('.imported')``."""
    module_dir.mkdir(parents=True, exist_ok=True)
    marker = planted.with_suffix(".imported")
    (module_dir / f"{PLANTED_MODULE}.py").write_text(
        f"open({str(marker)!r}, 'w').close()\n\nclass Thing:\n    def __init__(self, *a):\n"
        "        pass\n"
    )
    ext = msgpack.packb(
        msgpack.ExtType(0, msgpack.packb([PLANTED_MODULE, "Thing", "x"])), use_bin_type=True
    )
    return pickle.dumps(_Creates(planted)), ext


def hostile_copy(source: Path, target: Path, planted: Path, module_dir: Path) -> Path:
    """A copy where the head of ``done`` is a ``pickle`` row and a write of ``paused`` a
    ``pickle`` value, both creating ``planted`` when unpickled, and a write of ``paused`` an
    extension naming :data:`PLANTED_MODULE` (written into ``module_dir``, creating
    ``planted.with_suffix('.imported')`` on import)."""
    copy_of(source, target)
    hostile, ext = plant(planted, module_dir)
    _change(
        target,
        "UPDATE checkpoints SET type = 'pickle', checkpoint = ? WHERE checkpoint_id = ?",
        hostile,
        head_of(target, "done"),
    )
    _change(
        target,
        "UPDATE writes SET type = 'pickle', value = ? WHERE thread_id = 'paused' AND channel = 'n'",
        hostile,
    )
    _change(
        target,
        "UPDATE writes SET value = ? WHERE thread_id = 'paused' AND channel = 'log'",
        ext,
    )
    return target


def with_truncated_checkpoint(source: Path, target: Path, thread: str) -> str:
    """A copy whose head of ``thread`` is cut to 20 bytes; returns that checkpoint's id."""
    copy_of(source, target)
    head = head_of(target, thread)
    _change(
        target,
        "UPDATE checkpoints SET checkpoint = substr(checkpoint, 1, 20) WHERE checkpoint_id = ?",
        head,
    )
    return head


def with_unknown_ext(source: Path, target: Path, thread: str) -> None:
    """A copy where the writes of ``thread``'s channel ``log`` hold an extension of code 42."""
    copy_of(source, target)
    value = msgpack.packb(msgpack.ExtType(42, b"\x01\x02\x03"))
    _change(
        target, "UPDATE writes SET value = ? WHERE thread_id = ? AND channel = 'log'", value, thread
    )


def with_newer_format(source: Path, target: Path, thread: str, version: int) -> str:
    """A copy whose head of ``thread`` says checkpoint format ``version``; returns its id."""
    copy_of(source, target)
    head = head_of(target, thread)
    with sqlite3.connect(target) as conn:
        (blob,) = conn.execute(
            "SELECT checkpoint FROM checkpoints WHERE checkpoint_id = ?", (head,)
        ).fetchone()
    conn.close()
    checkpoint = msgpack.unpackb(blob, strict_map_key=False)
    checkpoint["v"] = version
    _change(
        target,
        "UPDATE checkpoints SET checkpoint = ? WHERE checkpoint_id = ?",
        msgpack.packb(checkpoint),
        head,
    )
    return head


def without_writes(source: Path, target: Path) -> None:
    """A copy without the ``writes`` table."""
    copy_of(source, target)
    _change(target, "DROP TABLE writes")


def with_two_loop_children(source: Path, target: Path, thread: str) -> tuple[str, str, str]:
    """A copy where the head's parent in ``thread`` gets a second ``loop`` child (as two runs
    of one thread at once write): returns the parent and both children."""
    copy_of(source, target)
    head = head_of(target, thread)
    conn = sqlite3.connect(target)
    try:
        with conn:
            row = conn.execute(
                "SELECT thread_id, checkpoint_ns, checkpoint_id, parent_checkpoint_id, type,"
                " checkpoint, metadata FROM checkpoints WHERE checkpoint_id = ?",
                (head,),
            ).fetchone()
            twin = str(uuid.UUID(int=uuid.UUID(head).int + 1))  # the same step, a later id
            conn.execute(
                "INSERT INTO checkpoints VALUES (?, ?, ?, ?, ?, ?, ?)",
                (row[0], row[1], twin, *row[3:]),
            )
    finally:
        conn.close()
    return str(row[3]), head, twin


def without_task_path(source: Path, target: Path) -> None:
    """A copy whose ``writes`` has no ``task_path`` column, as older savers wrote it."""
    copy_of(source, target)
    _change(target, "ALTER TABLE writes DROP COLUMN task_path")


def damaged(source: Path, target: Path, *, cut: bool) -> Path:
    """A copy cut to half its length (``cut``), or with every page after the first overwritten."""
    data = source.read_bytes()
    page = 4096
    target.write_bytes(
        data[: len(data) // 2] if cut else data[:page] + b"\xff" * (len(data) - page)
    )
    return target
