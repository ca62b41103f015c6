"""Opening a source from a URL or a path: a small registry of readers (scheme, detector, opener).

A location with ``://`` is read by the reader registered for its scheme (``postgresql://`` and
``postgres://``: wfctl's PostgreSQL store; ``agent-framework://PATH``: that directory, the text
after ``://`` being the path, so ``agent-framework:///abs/dir``; ``langgraph+sqlite://PATH``: a
LangGraph SQLite file, the same way; ``dbos+sqlite://PATH`` and ``dbos+postgresql://...``: a
DBOS system database). A plain path that exists is offered to each reader's
detector in registration order: a directory holding wfctl's ``runs/`` is a wfctl file store, a
directory whose first JSON files hold agent-framework's checkpoint fields is that, a SQLite file
(its header) with LangGraph's ``checkpoints`` and ``writes`` tables is LangGraph's, one with
DBOS's ``workflow_status``, ``operation_outputs`` and ``dbos_migrations`` is DBOS's.
A new engine's reader registers one :class:`Reader`.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from wfctl._errors import StoreLocationError

from ._protocol import Source

__all__ = [
    "WFCTL_READERS",
    "Reader",
    "open_other_source",
    "open_source",
    "other_kind",
    "readers",
    "register_reader",
]


@dataclass(frozen=True, slots=True)
class Reader:
    """How one store kind is found and opened.

    ``schemes`` are the URL schemes it reads (without ``://``); ``detect`` says whether a
    plain path is its kind (reading little: a few names, at most a few files); ``open`` opens
    a source on the location as given (the whole URL, or the path).
    """

    name: str
    schemes: tuple[str, ...]
    detect: Callable[[Path], bool] | None
    open: Callable[[str], Source]


_READERS: list[Reader] = []
#: The readers of wfctl's own stores, which the inspecting commands read by their own paths.
WFCTL_READERS = frozenset({"wfctl-file", "wfctl-postgresql"})


def register_reader(reader: Reader) -> None:
    """Add ``reader`` (one of the same name is replaced, keeping its place)."""
    for index, known in enumerate(_READERS):
        if known.name == reader.name:
            _READERS[index] = reader
            return
    _READERS.append(reader)


def readers() -> tuple[Reader, ...]:
    """The registered readers, in the order detection tries them."""
    return tuple(_READERS)


def open_source(location: str | os.PathLike[str]) -> Source:
    """Open a read-only source on ``location``: a URL, or a path whose kind is detected.

    Nothing is written: a directory that does not exist is refused, not created.

    Raises:
        StoreLocationError: no reader reads the URL's scheme, or the path is missing or of no
            kind a reader recognises.
        WfctlError: a reader refused the location (see each reader).
    """
    text = os.fspath(location)
    if "://" in text:
        reader = _by_scheme(text)
        if reader is None:
            known = ", ".join(f"{s}://" for r in _READERS for s in r.schemes)
            raise StoreLocationError(text, f"is not a source wfctl reads (URLs: {known})")
        return reader.open(text)
    if not Path(text).exists():
        raise StoreLocationError(text, "does not exist")
    reader = _detected(Path(text))
    if reader is None:
        names = ", ".join(r.name for r in _READERS if r.detect is not None)
        raise StoreLocationError(text, f"is not a store of a kind wfctl reads ({names})")
    return reader.open(text)


def open_other_source(location: str | os.PathLike[str]) -> Source | None:
    """Open a source on ``location`` when it is a store of another engine than wfctl, found by
    the same registry as :func:`open_source`; None when it is wfctl's own store, or nothing a
    reader recognises (the inspecting commands then read it, or refuse it, as wfctl's).

    This is the one place the inspecting commands (and the web page) decide whether a location
    is read through its :class:`Source`.

    Raises:
        WfctlError: the reader of that kind refused the location (see each reader).
    """
    reader = _other_reader(os.fspath(location))
    return None if reader is None else reader.open(os.fspath(location))


def other_kind(location: str | os.PathLike[str]) -> str | None:
    """The reader's name when ``location`` is a store of another engine than wfctl (as
    :func:`open_other_source` finds it, without opening it), else None."""
    reader = _other_reader(os.fspath(location))
    return None if reader is None else reader.name


def _other_reader(text: str) -> Reader | None:
    if "://" in text:
        reader = _by_scheme(text)
        if reader is not None and reader.name == "wfctl-postgresql":
            reader = _postgres_kind(text)
    else:
        reader = _detected(Path(text)) if Path(text).exists() else None
    return None if reader is None or reader.name in WFCTL_READERS else reader


def _by_scheme(text: str) -> Reader | None:
    scheme = text.split("://", 1)[0].lower()
    return next((r for r in _READERS if scheme in r.schemes), None)


def _detected(path: Path) -> Reader | None:
    return next((r for r in _READERS if r.detect is not None and r.detect(path)), None)


def _postgres_kind(url: str) -> Reader | None:
    """The reader of a plain ``postgresql://`` URL's database: LangGraph's or DBOS's when it
    holds only that engine's tables, else wfctl's (a server that cannot be reached is left to
    wfctl's store to report).

    Raises:
        StoreLocationError: it holds the tables of more than one of them.
    """
    try:
        import psycopg

        from ._dbos_postgres import dbos_tables
        from ._langgraph_postgres import langgraph_tables, wfctl_tables
    except ImportError:
        return _by_scheme(url)
    try:
        with psycopg.connect(url, autocommit=True, connect_timeout=10) as conn:
            found = {
                "wfctl's store": wfctl_tables(conn),
                "LangGraph's checkpoints": langgraph_tables(conn),
                "DBOS's system tables": dbos_tables(conn),
            }
    except psycopg.Error:
        return _by_scheme(url)
    held = [name for name, present in found.items() if present]
    if len(held) > 1:
        from wfctl._redact import redact

        raise StoreLocationError(
            redact(url),
            f"holds both {' and '.join(held)}: name the one to read "
            "(langgraph+postgresql://... for LangGraph's, dbos+postgresql://... for DBOS's)",
        )
    if found["LangGraph's checkpoints"]:
        return _by_scheme("langgraph+postgresql://")
    if found["DBOS's system tables"]:
        return _by_scheme("dbos+postgresql://")
    return _by_scheme(url)


def _langgraph_postgres(location: str) -> Source:
    url = _server_url(location, "langgraph+postgresql://")
    try:
        from ._langgraph_postgres import PostgresBackend
    except ImportError:
        raise _needs_psycopg(location) from None
    from ._langgraph import LangGraphSource

    return LangGraphSource(PostgresBackend(url))


def _server_url(location: str, prefix: str) -> str:
    """The server's ``postgresql://`` URL of ``location`` named with ``prefix``."""
    if location.lower().startswith(prefix):
        return "postgresql://" + location[len(prefix) :]
    return location


def _file_named(location: str, prefix: str) -> str:
    """The path of ``location`` named with ``prefix`` (the text after ``://``).

    Raises:
        StoreLocationError: it names no file.
    """
    path = location[len(prefix) :] if location.lower().startswith(prefix) else location
    if not path:
        raise StoreLocationError(location, f"names no file ({prefix}/abs/file.sqlite)")
    return path


def _needs_psycopg(location: str) -> StoreLocationError:
    return StoreLocationError(location, "needs psycopg to be read: pip install 'wfctl[postgres]'")


def _wfctl(location: str) -> Source:
    from ._wfctl import WfctlSource

    return WfctlSource(location)


def _is_wfctl_store(path: Path) -> bool:
    return (path / "runs").is_dir()


def _agent_framework(location: str) -> Source:
    from ._agent_framework import AgentFrameworkSource

    prefix = "agent-framework://"
    directory = location[len(prefix) :] if location.lower().startswith(prefix) else location
    if not directory:
        raise StoreLocationError(location, "names no directory (agent-framework:///abs/dir)")
    return AgentFrameworkSource(directory)


def _is_agent_framework_dir(path: Path) -> bool:
    # A directory without a JSON file (an empty one, or wfctl's store before its first run) is
    # told apart without importing the reader, which a command on wfctl's own store never needs.
    try:
        if not path.is_dir() or next(path.glob("*.json"), None) is None:
            return False
    except OSError:
        return False
    from ._agent_framework import is_checkpoint_dir

    return is_checkpoint_dir(path)


def _langgraph_sqlite(location: str) -> Source:
    from ._langgraph import LangGraphSource
    from ._langgraph_sqlite import SqliteBackend

    return LangGraphSource(SqliteBackend(_file_named(location, "langgraph+sqlite://")))


def _is_langgraph_sqlite(path: Path) -> bool:
    from ._langgraph_sqlite import is_langgraph_sqlite

    return path.is_file() and is_langgraph_sqlite(path)


def _dbos_postgres(location: str) -> Source:
    url = _server_url(location, "dbos+postgresql://")
    try:
        from ._dbos_postgres import PostgresBackend
    except ImportError:
        raise _needs_psycopg(location) from None
    from ._dbos import DbosSource

    return DbosSource(PostgresBackend(url))


def _dbos_sqlite(location: str) -> Source:
    from ._dbos import DbosSource
    from ._dbos_sql import SqliteBackend

    return DbosSource(SqliteBackend(_file_named(location, "dbos+sqlite://")))


def _is_dbos_sqlite(path: Path) -> bool:
    from ._dbos_sql import is_dbos_sqlite

    return path.is_file() and is_dbos_sqlite(path)


register_reader(Reader("wfctl-postgresql", ("postgresql", "postgres"), None, _wfctl))
register_reader(Reader("wfctl-file", (), _is_wfctl_store, _wfctl))
register_reader(
    Reader("agent-framework", ("agent-framework",), _is_agent_framework_dir, _agent_framework)
)
register_reader(
    Reader("langgraph-postgresql", ("langgraph+postgresql",), None, _langgraph_postgres)
)
register_reader(
    Reader("langgraph-sqlite", ("langgraph+sqlite",), _is_langgraph_sqlite, _langgraph_sqlite)
)
register_reader(Reader("dbos-postgresql", ("dbos+postgresql",), None, _dbos_postgres))
register_reader(Reader("dbos-sqlite", ("dbos+sqlite",), _is_dbos_sqlite, _dbos_sqlite))
