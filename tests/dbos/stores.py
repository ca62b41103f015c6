"""DBOS system databases the real DBOS wrote (:mod:`tests.dbos.app`), and damaged copies."""

from __future__ import annotations

import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

__all__ = ["APP", "change", "copy_of", "write_store"]

APP = Path(__file__).with_name("app.py")


def write_store(url: str, *, long: bool = False) -> None:
    """Run :mod:`tests.dbos.app` against the system database at ``url`` (DBOS creates it);
    with ``long``, its one long workflow only."""
    command = [sys.executable, str(APP), url, *(["long"] if long else [])]
    done = subprocess.run(command, capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr[-3000:]


def copy_of(source: Path, target: Path) -> Path:
    """A copy of the SQLite file ``source`` (DBOS's process ended: the file holds it all)."""
    shutil.copyfile(source, target)
    return target


def change(path: Path, statement: str, *args: object) -> None:
    """Run ``statement`` on the SQLite copy at ``path`` (its foreign keys not enforced, as
    a hand edit or a partial restore would leave it)."""
    with sqlite3.connect(path) as conn:
        conn.execute(statement, args)
    conn.close()
