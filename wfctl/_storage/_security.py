"""Warn when a store's root directory can be changed by someone other than its user.

Whoever can write to the store root can plant a run directory, a journal or a lock file there
(or replace one), and so feed a resume or a replay records that were never committed by this
user. wfctl creates its directories ``0o700``; an existing root it did not create may be looser.
Reading such a store is still allowed (it may be on purpose: a shared scratch directory), but
the user is told once, by a :class:`StoreSecurityWarning`.
"""

from __future__ import annotations

import os
import stat
import warnings

from ._fs import FileSystem

__all__ = ["StoreSecurityWarning", "vet_store_root"]


class StoreSecurityWarning(UserWarning):
    """Warned when a store root is writable by group or others, or owned by another user.

    Only a warning: the store is read and written as usual. Fix it with ``chmod 700 DIR`` (or
    move the store). Unlike :class:`~wfctl.CheckpointCorruptError`, which refuses data that
    fails verification, this flags a directory where unverified data could be planted.
    """


def vet_store_root(fs: FileSystem, root: str) -> bool:
    """Warn once if ``root`` is writable by group/others or not owned by the current user.

    Returns:
        True once ``root`` exists and has been judged (warned about or not); False while it
        does not exist yet, so the caller asks again later.
    """
    try:
        st = fs.stat(root)  # a root that is a link to a private directory is fine
    except FileNotFoundError:
        return False
    except OSError:
        return True  # unreadable metadata: the storage's own calls will report it
    problems = []
    if st.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
        problems.append(f"is writable by {_who(st.st_mode)} (mode {stat.S_IMODE(st.st_mode):04o})")
    geteuid = getattr(os, "geteuid", None)
    if geteuid is not None and st.st_uid != geteuid():
        problems.append(f"is owned by uid {st.st_uid}, not by this user (uid {geteuid()})")
    if problems:
        warnings.warn(
            StoreSecurityWarning(
                f"checkpoint store {root} {' and '.join(problems)}: another user could plant "
                f"or replace runs in it; run `chmod 700 {root}` or use a private store"
            ),
            stacklevel=4,
        )
    return True


def _who(mode: int) -> str:
    both = mode & stat.S_IWGRP and mode & stat.S_IWOTH
    return "group and others" if both else ("group" if mode & stat.S_IWGRP else "others")
