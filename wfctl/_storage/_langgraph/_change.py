"""Plan and apply a prune or a removal of threads of a LangGraph store."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from wfctl._errors import RunNotFoundError, StoreLocationError
from wfctl._redact import redact

from ._postgres import PostgresChanger
from ._report import Action, ChangeReport, ThreadChange
from ._sqlite import SqliteChanger

__all__ = ["ChangePlan", "apply", "langgraph_location", "plan_prune", "plan_remove"]

_SQLITE_MAGIC = b"SQLite format 3\x00"


def langgraph_location(text: str) -> tuple[str, str] | None:
    """``("sqlite", path)`` or ``("postgresql", url)`` when ``text`` names a LangGraph store:
    ``langgraph+sqlite://PATH`` (the text after ``://`` is the path),
    ``langgraph+postgresql://...`` (or ``langgraph+postgres://``), or a plain path to a SQLite
    file holding LangGraph's ``checkpoints`` table (with ``checkpoint_ns``). None otherwise."""
    for scheme, backend in (
        ("langgraph+sqlite://", "sqlite"),
        ("langgraph+postgresql://", "postgresql"),
        ("langgraph+postgres://", "postgresql"),
    ):
        if text.startswith(scheme):
            rest = text[len(scheme) :]
            return (backend, rest) if backend == "sqlite" else (backend, "postgresql://" + rest)
    if "://" in text or not Path(text).is_file():
        return None
    try:
        with Path(text).open("rb") as file:
            if file.read(len(_SQLITE_MAGIC)) != _SQLITE_MAGIC:
                return None
        conn = sqlite3.connect(f"file:{Path(text).absolute()}?mode=ro", uri=True)
        try:
            columns = {row[1] for row in conn.execute("PRAGMA table_info(checkpoints)")}
        finally:
            conn.close()
    except (OSError, sqlite3.Error):
        return None
    return ("sqlite", text) if {"thread_id", "checkpoint_ns", "checkpoint_id"} <= columns else None


@dataclass(frozen=True, slots=True)
class ChangePlan:
    """A change asked of a LangGraph store, and what it would remove (:attr:`report`).

    :func:`apply` decides each thread again inside the thread's transaction, so what it removes
    is what the store holds then, not what this plan read.
    """

    location: str
    action: Action
    threads: tuple[str, ...]
    report: ChangeReport


def _open(location: str, *, write: bool, busy_timeout: float) -> SqliteChanger | PostgresChanger:
    found = langgraph_location(location)
    if found is None:
        raise StoreLocationError(location, "is not a LangGraph store")
    backend, target = found
    if backend == "sqlite" and not Path(target).is_file():
        raise StoreLocationError(location, "does not exist or is not a file")
    with _database_errors(location, "cannot be opened"):
        if backend == "sqlite":
            return SqliteChanger(target, write=write, busy_timeout=busy_timeout)
        return PostgresChanger(target, write=write)


@contextmanager
def _database_errors(location: str, what: str) -> Iterator[None]:
    """Turn an error of SQLite or PostgreSQL in the block into one :class:`StoreLocationError`
    (one line on the command line, never a traceback)."""
    try:
        yield
    except sqlite3.Error as exc:
        raise StoreLocationError(location, f"{what}: {exc}") from None
    except Exception as exc:  # psycopg's errors: psycopg is imported only for PostgreSQL
        if type(exc).__module__.startswith("psycopg"):
            raise StoreLocationError(location, f"{what}: {exc}".strip()) from None
        raise


def _run(
    location: str,
    action: Action,
    threads: Sequence[str] | None,
    *,
    write: bool,
    after_thread: Callable[[ThreadChange], None] | None = None,
    busy_timeout: float = 30.0,
) -> tuple[tuple[str, ...], ChangeReport]:
    changer = _open(location, write=write, busy_timeout=busy_timeout)
    with _database_errors(location, "failed"):
        try:
            known = changer.threads()
            if threads is None:
                chosen = tuple(known)
            else:
                present = set(known)
                missing = [t for t in threads if t not in present]
                if missing and write is False:
                    raise RunNotFoundError(missing[0])
                chosen = tuple(t for t in dict.fromkeys(threads) if t in present)
            changes = []
            for thread in chosen:
                changes.append(changer.change(thread, action))
                if after_thread is not None:
                    after_thread(changes[-1])
            return chosen, ChangeReport(
                changer.kind, redact(location), action, write, tuple(changes)
            )
        finally:
            changer.close()


def plan_prune(location: str, threads: Sequence[str] | None = None) -> ChangePlan:
    """Report what pruning ``threads`` (every thread when None) would remove; change nothing.

    Raises:
        StoreLocationError: ``location`` is not a LangGraph store, or cannot be opened.
        RunNotFoundError: a named thread has no checkpoint.
    """
    chosen, report = _run(location, "prune", threads, write=False)
    return ChangePlan(location, "prune", chosen, report)


def plan_remove(location: str, thread_ids: Sequence[str]) -> ChangePlan:
    """Report what removing the threads ``thread_ids`` would remove; change nothing.

    Raises:
        StoreLocationError: ``location`` is not a LangGraph store, or cannot be opened.
        RunNotFoundError: a named thread has no checkpoint.
    """
    chosen, report = _run(location, "remove", thread_ids, write=False)
    return ChangePlan(location, "remove", chosen, report)


def apply(
    plan: ChangePlan,
    *,
    after_thread: Callable[[ThreadChange], None] | None = None,
    busy_timeout: float = 30.0,
) -> ChangeReport:
    """Carry out ``plan``, one transaction per thread, and report what went.

    ``after_thread`` is called after each thread's transaction has ended (committed, or left
    whole when declined). A thread the plan named that is gone by now is skipped. On SQLite a
    thread waits up to ``busy_timeout`` seconds for another writer's lock, then is left whole
    and reported as declined.

    Raises:
        StoreLocationError: the store cannot be opened for writing.
    """
    _, report = _run(
        plan.location,
        plan.action,
        plan.threads,
        write=True,
        after_thread=after_thread,
        busy_timeout=busy_timeout,
    )
    return report
