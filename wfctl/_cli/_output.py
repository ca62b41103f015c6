"""A command whose output's reader went away (``wfctl runs | head``): stop quietly, exit 141.

Python ignores SIGPIPE, so a write to a pipe nobody reads any more raises ``BrokenPipeError``
wherever the command happens to be writing. The command line's error handler asks
:func:`quiet_closed_outputs` whether that is what happened: then there is nobody to tell, and
the exit code is the one a shell shows for a command SIGPIPE ended (141), never 1, which would
claim a finding (a failed run, a broken lineage) that nobody found. A ``BrokenPipeError`` from
anything else (a socket a workflow's code wrote to) is an ordinary error.
"""

from __future__ import annotations

import os
import select
import sys

__all__ = ["escape_unencodable", "quiet_closed_outputs"]

#: What ``poll`` reports for the writing end of a pipe (or socket) whose reader is gone:
#: POLLERR on Linux, POLLHUP on some other systems.
_GONE = select.POLLERR | select.POLLHUP if hasattr(select, "poll") else 0


def quiet_closed_outputs() -> bool:
    """Point stdout and stderr at ``/dev/null`` if their readers went away; whether one had.

    Pointing them elsewhere also keeps the interpreter's last flush of a buffered stream from
    failing again at exit. Where ``poll`` does not exist (Windows), a closed pipe cannot be
    told from another one, and every ``BrokenPipeError`` counts as the output's.
    """
    gone = False
    for stream in (sys.stdout, sys.stderr):
        try:
            fd = stream.fileno()
        except (AttributeError, OSError, ValueError):  # replaced by an object without one
            continue
        if _GONE and not _reader_gone(fd):
            continue
        devnull = os.open(os.devnull, os.O_WRONLY)
        try:
            os.dup2(devnull, fd)
        finally:
            os.close(devnull)
        gone = True
    return gone


def escape_unencodable() -> None:
    """Have stdout and stderr write what their encoding cannot hold (a lone surrogate a step
    returned) as JSON escapes, instead of failing the command (see :mod:`wfctl._escapes`)."""
    from wfctl._escapes import ESCAPE

    for stream in (sys.stdout, sys.stderr):
        reconfigure = getattr(stream, "reconfigure", None)  # replaced by another object: left
        if reconfigure is not None:
            reconfigure(errors=ESCAPE)


def _reader_gone(fd: int) -> bool:
    poller = select.poll()
    poller.register(fd, select.POLLOUT)
    try:
        return any(events & _GONE for _, events in poller.poll(0))
    except OSError:
        return False
