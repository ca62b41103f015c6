"""A seeded, fault-injecting file system for ``FileCheckpointStorage(..., fs=FaultyFS(...))``.

It implements the storage's I/O seam (:class:`wfctl._storage._fs.FileSystem`) on top of the real
file system, and makes chosen calls fail the way disks and kernels do: ``EIO``, ``ENOSPC``,
short writes (a prefix written and its length returned), writes that fail after a prefix or
after all of the data landed (a ``writev`` is a write: it counts and fails as one), failed ``fdatasync``, renames that silently never happen, a
pause file that seems to exist. Real ``fsync`` calls are skipped (a fault scenario is about
errors, not power loss), so a scenario runs at non-durable speed.
"""

from __future__ import annotations

import errno
import os
import random
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from wfctl._storage._fs import OsFileSystem

__all__ = ["EFFECTS", "Fault", "FaultyFS", "random_faults"]

#: What each seam method can be made to do (the first effect is the plain error).
EFFECTS: dict[str, tuple[str, ...]] = {
    "write": ("eio", "enospc", "short", "partial-raise", "full-raise"),
    "fdatasync": ("eio",),
    "open": ("eio", "enospc", "eacces"),
    "pread": ("eio",),
    "fstat": ("eio",),
    "ftruncate": ("eio",),
    "mkdir": ("enospc", "eacces"),
    "makedirs": ("enospc",),
    "fsync_dir": ("eio",),
    "lstat": ("eio",),
    "unlink": ("eio",),
    "replace": ("lost", "eio"),
    "lexists": ("phantom",),
}
#: How often each method is chosen for a fault (the journal's hot path most).
_WEIGHTS = {
    "write": 30,
    "fdatasync": 20,
    "open": 8,
    "pread": 6,
    "fstat": 3,
    "ftruncate": 3,
    "mkdir": 3,
    "makedirs": 1,
    "fsync_dir": 6,
    "lstat": 4,
    "unlink": 4,
    "replace": 6,
    "lexists": 6,
}
#: More calls of one method than any scenario makes: the storage is looping on a fault.
_RUNAWAY = 10_000
_ERRNO = {"eio": errno.EIO, "enospc": errno.ENOSPC, "eacces": errno.EACCES}


@dataclass(frozen=True)
class Fault:
    """Make calls of ``op`` misbehave with ``effect``.

    ``mode``: ``once`` (only the ``nth`` call, 0-based), ``persist`` (the ``nth`` call and every
    one after it, like a full disk) or ``random`` (each call from the ``nth`` on with
    probability ``p``).
    """

    op: str
    effect: str
    nth: int = 0
    mode: str = "once"
    p: float = 0.0

    def __str__(self) -> str:
        extra = f" p={self.p:.2f}" if self.mode == "random" else ""
        return f"{self.op}:{self.effect}@{self.nth}/{self.mode}{extra}"


def random_faults(rng: random.Random) -> list[Fault]:
    """Draw one or two faults for a scenario."""
    faults = []
    for _ in range(rng.choice((1, 1, 1, 2))):
        op = rng.choices(list(_WEIGHTS), weights=list(_WEIGHTS.values()))[0]
        mode = rng.choices(("once", "persist", "random"), weights=(6, 2, 2))[0]
        nth = rng.randrange(20 if op in ("write", "fdatasync", "lexists") else 4)
        faults.append(Fault(op, rng.choice(EFFECTS[op]), nth, mode, rng.uniform(0.05, 0.3)))
    return faults


class FaultyFS(OsFileSystem):
    """The real file system with seeded faults; :meth:`disarm` makes it behave again."""

    def __init__(self, seed: int, faults: list[Fault]) -> None:
        self.rng = random.Random(seed)
        self.faults = faults
        self.calls: Counter[str] = Counter()
        self.injected: list[str] = []
        self.armed = True

    def disarm(self) -> None:
        """Stop injecting faults."""
        self.armed = False

    def _strike(self, op: str) -> str | None:
        """Count a call of ``op``; return the effect to apply to it, if any."""
        index = self.calls[op]
        self.calls[op] += 1
        if index > _RUNAWAY:
            raise AssertionError(f"{op} called {index} times: a retry loop that never ends")
        if not self.armed:
            return None
        for fault in self.faults:
            if fault.op != op or index < fault.nth:
                continue
            if (
                (fault.mode == "once" and index == fault.nth)
                or fault.mode == "persist"
                or (fault.mode == "random" and self.rng.random() < fault.p)
            ):
                self.injected.append(f"{fault}#{index}")
                return fault.effect
        return None

    @staticmethod
    def _error(effect: str, what: str) -> OSError:
        code = _ERRNO.get(effect, errno.EIO)
        return OSError(code, f"injected {os.strerror(code)} ({what})")

    def _plain(self, op: str) -> None:
        effect = self._strike(op)
        if effect is not None:
            raise self._error(effect, op)

    # -- the seam ----------------------------------------------------------------------------

    def open(self, path: str, flags: int, mode: int = 0o777) -> int:
        self._plain("open")
        return super().open(path, flags, mode)

    def write(self, fd: int, data: bytes | memoryview) -> int:
        effect = self._strike("write")
        if effect is None:
            return super().write(fd, data)
        return self._fault_write(effect, fd, bytes(data))

    def writev(self, fd: int, buffers: Sequence[bytes | memoryview]) -> int:
        effect = self._strike("write")
        if effect is None:
            return super().writev(fd, buffers)
        return self._fault_write(effect, fd, b"".join(buffers))

    def _fault_write(self, effect: str, fd: int, data: bytes) -> int:
        """Write ``data`` (what one write or writev was given) as ``effect`` says."""
        if effect in ("eio", "enospc"):
            raise self._error(effect, "write")
        if effect == "full-raise":
            super().write(fd, data)
            raise self._error("eio", "write, after the data landed")
        cut = self.rng.randrange(len(data)) if data else 0
        written = super().write(fd, data[:cut]) if cut else 0
        if effect == "short":
            return written
        raise self._error("eio", f"write, after {cut} of {len(data)} bytes")

    def fdatasync(self, fd: int) -> None:
        self._plain("fdatasync")  # no real sync: faults are about errors, not power loss

    def fsync_dir(self, path: str) -> None:
        self._plain("fsync_dir")

    def ftruncate(self, fd: int, length: int) -> None:
        self._plain("ftruncate")
        super().ftruncate(fd, length)

    def fstat(self, fd: int) -> os.stat_result:
        self._plain("fstat")
        return super().fstat(fd)

    def pread(self, fd: int, length: int, offset: int) -> bytes:
        self._plain("pread")
        return super().pread(fd, length, offset)

    def lstat(self, path: str) -> os.stat_result:
        self._plain("lstat")
        return super().lstat(path)

    def mkdir(self, path: str, mode: int) -> None:
        if os.path.isdir(path):
            super().mkdir(path, mode)  # FileExistsError, as usual: not a fault
        self._plain("mkdir")
        super().mkdir(path, mode)

    def makedirs(self, path: str, mode: int) -> None:
        self._plain("makedirs")
        super().makedirs(path, mode)

    def unlink(self, path: str) -> None:
        self._plain("unlink")
        super().unlink(path)

    def replace(self, src: str, dst: str) -> None:
        effect = self._strike("replace")
        if effect == "lost":
            return  # the rename "succeeds" and never happens
        if effect is not None:
            raise self._error(effect, "replace")
        super().replace(src, dst)

    def lexists(self, path: str) -> bool:
        if self._strike("lexists") == "phantom":
            return True  # a pause file that seems to be there
        return super().lexists(path)

    def describe(self) -> dict[str, Any]:
        """What was planned and what struck (for failure messages)."""
        return {"faults": [str(f) for f in self.faults], "injected": self.injected}
