"""A read-only pass over many runs, spread across forked processes when it is long enough.

Listing a file store verifies every run (every record's checksum and link, its ends decoded):
about 0.1 ms of the interpreter's time a run, and the interpreter runs one thread at a time;
verifying a whole store's lineage reads and judges every record. A store of thousands of runs
is done faster by splitting its runs into parts, one per CPU: this process does the first part
while forked children do the others, each sending back its results as JSON (never pickle)
through a pipe, read once this process is done with its own.

A fork is only an optimisation, never a source of a different answer:
- it happens only on POSIX, for :data:`SPREAD_FROM` items or more, with more than one usable CPU,
  in a process running one thread (a fork copies only the thread that calls it);
- a child that fails in any way (an error, a signal, output that does not decode) has its part
  done again here, so the result is always what one process would have found;
- a child ignores SIGINT (Ctrl-C reaches the whole process group): this process is the one
  that stops, and it kills and reaps every child it started before the interruption goes on;
- a part whose fork fails (no more processes) is done here;
- a child never returns into the caller's code: it ends with ``os._exit`` (no ``atexit``
  handler, no buffered output flushed twice), and does nothing but read.
"""

from __future__ import annotations

import contextlib
import os
import signal
import threading
from collections.abc import Callable, Sequence
from typing import Any, Final, TypeVar

import orjson

__all__ = ["SPREAD_FROM", "spread"]

T = TypeVar("T")
R = TypeVar("R")

#: Items from which a pass is spread (a fork and its pipe cost a few milliseconds: ~50 ms of
#: work a part is worth one).
SPREAD_FROM: Final = 2000
#: At most this many processes in all, however many CPUs there are.
_MOST: Final = 8

_Child = tuple[int, int, Sequence[Any]]  # pid (0: not forked), the read end of its pipe, its part


def spread(
    work: Callable[[Sequence[T]], list[R]],
    items: Sequence[T],
    encode: Callable[[R], Any],
    decode: Callable[[Any], R],
) -> list[R]:
    """Return ``work(items)``, computed in parts by forked processes where it pays.

    ``work`` must only read, and its results for a part must be those it gives for that part
    within the whole (results in item order). ``encode`` turns a result into what
    ``orjson.dumps`` writes; ``decode`` turns that back into an equal result.
    """
    count = _processes(len(items))
    if count < 2:
        return work(items)
    size = -(-len(items) // count)
    parts = [items[start : start + size] for start in range(0, len(items), size)]
    children: list[_Child] = []
    try:
        for part in parts[1:]:
            try:
                children.append(_fork(work, part, encode))
            except OSError:  # no more processes (EAGAIN, ENOMEM): the rest are done here
                children.append((0, -1, part))
        results = work(parts[0])
        while children:
            results.extend(_collect(children.pop(0), work, decode))
    finally:
        for child in children:  # interrupted: none of theirs is wanted any more
            _stop(child)
    return results


def _processes(items: int) -> int:
    """How many processes a pass over ``items`` items is spread over (1: not spread)."""
    if items < SPREAD_FROM or not hasattr(os, "fork") or threading.active_count() != 1:
        return 1
    try:
        cpus = len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - a POSIX system without it (macOS)
        cpus = os.cpu_count() or 1
    return max(1, min(cpus, _MOST, items // (SPREAD_FROM // 2)))


def _fork(
    work: Callable[[Sequence[T]], list[R]], part: Sequence[T], encode: Callable[[R], Any]
) -> _Child:
    read_end, write_end = os.pipe()
    try:
        pid = os.fork()
    except BaseException:
        os.close(read_end)
        os.close(write_end)
        raise
    if pid == 0:  # the child: never returns
        code = 1
        try:
            signal.signal(signal.SIGINT, signal.SIG_IGN)
            signal.set_wakeup_fd(-1)  # a signal here must not wake the parent's event loop
            os.close(read_end)
            data = orjson.dumps([encode(result) for result in work(part)])
            view = memoryview(data)
            while view:
                view = view[os.write(write_end, view) :]
            code = 0
        finally:
            os._exit(code)
    os.close(write_end)
    return pid, read_end, part


def _collect(
    child: _Child, work: Callable[[Sequence[T]], list[R]], decode: Callable[[Any], R]
) -> list[R]:
    """The child's results once it has ended, or its part's, done here if it failed."""
    pid, fd, part = child
    if not pid:  # never forked
        return work(part)
    chunks = []
    try:
        while chunk := os.read(fd, 1 << 20):
            chunks.append(chunk)
    except BaseException:
        _stop(child)
        raise
    if _reap(pid, fd) == 0:
        try:
            return [decode(row) for row in orjson.loads(b"".join(chunks))]
        except (orjson.JSONDecodeError, TypeError, ValueError):
            pass
    return work(part)


def _stop(child: _Child) -> None:
    """Kill a child whose results are not wanted, and reap it."""
    pid, fd, _ = child
    if not pid:
        return
    with contextlib.suppress(OSError):
        os.kill(pid, signal.SIGKILL)
    _reap(pid, fd)


def _reap(pid: int, fd: int) -> int:
    """Close the child's pipe, wait for it to end and return its exit code (-N: signal N)."""
    os.close(fd)
    _, status = os.waitpid(pid, 0)
    return os.waitstatus_to_exitcode(status)
