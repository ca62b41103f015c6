"""Opening another engine's SQLite file read-only, for the readers that read one (LangGraph's,
DBOS's).

The file is opened ``mode=ro``, and ``immutable`` when no ``-wal`` or ``-journal`` beside it
holds rows (SQLite then creates no ``-wal`` or ``-shm`` beside it); otherwise SQLite reads the
``-wal`` itself, through the ``-shm`` index a writer keeps. A missing file is refused, never
created.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path
from urllib.parse import quote

from wfctl._errors import StoreLocationError

__all__ = ["connect_readonly", "has_sqlite_header", "open_readonly", "table_names"]

_HEADER = b"SQLite format 3\x00"


def has_sqlite_header(path: Path) -> bool:
    """Whether ``path`` starts with SQLite's 16-byte header (False when it cannot be read)."""
    try:
        with path.open("rb") as file:
            return file.read(16) == _HEADER
    except OSError:
        return False


def connect_readonly(path: Path) -> sqlite3.Connection:
    """A read-only connection to ``path`` (module docstring)."""
    flags = "mode=ro"
    if not any(_nonempty(Path(f"{path}{suffix}")) for suffix in ("-wal", "-journal")):
        flags += "&immutable=1"
    return sqlite3.connect(f"file:{quote(str(path))}?{flags}", uri=True, check_same_thread=False)


def open_readonly(path: str) -> sqlite3.Connection:
    """A read-only connection to the SQLite file ``path``.

    Raises:
        StoreLocationError: no such file, one that cannot be read, or not SQLite.
    """
    file = Path(path)
    if not file.is_file():
        raise StoreLocationError(path, "does not exist or is not a file")
    try:
        with file.open("rb") as opened:
            header = opened.read(16)
    except OSError as exc:
        raise StoreLocationError(path, f"cannot be read ({exc.strerror})") from None
    if header != _HEADER:
        raise StoreLocationError(path, "is not a SQLite database")
    try:
        return connect_readonly(file)
    except sqlite3.Error as exc:
        raise StoreLocationError(path, f"cannot be read: {exc}") from None


def table_names(conn: sqlite3.Connection) -> set[str]:
    """The names of the database's tables."""
    return {row[0] for row in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}


def _nonempty(file: Path) -> bool:
    try:
        return file.stat().st_size > 0
    except OSError:
        return False
