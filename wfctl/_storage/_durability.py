"""How durable a file storage's commits are: ``full``, ``batch`` or ``none``.

Every mode writes each record with ``write`` before the save returns, so a step's ``await``
never returns before its record is in the kernel's page cache: a crash of the process alone
(SIGKILL, an unhandled exception) loses nothing in any mode. The modes
differ only in when the record is forced to the disk (``fdatasync``), which is what an OS
crash or a power loss needs:

- ``full`` (the default): every commit is synced before it returns.
- ``batch``: step records are synced every ``batch_steps`` commits, or ``batch_ms``
  milliseconds after the oldest unsynced one, whichever comes first. Every other record (the
  root, a resume, a pause, a completed or failed ending) is synced at once, and with it every
  step before it. An OS crash loses at most the window: steps that resume then runs again.
- ``none``: nothing is synced (the old ``durable=False``); an OS crash may lose any commit
  the kernel had not written back yet.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final, Literal, get_args

__all__ = ["DURABILITY_MODES", "FULL", "Durability", "DurabilityMode"]

DurabilityMode = Literal["full", "batch", "none"]
#: The modes, in the order the documentation lists them.
DURABILITY_MODES: Final[tuple[str, ...]] = get_args(DurabilityMode)


@dataclass(frozen=True, slots=True)
class Durability:
    """A durability mode and, for ``batch``, its window (see the module docstring).

    Raises:
        ValueError: (from the constructor) an unknown mode, or a window outside 1 to 1,000,000
            steps or 0 to 3,600,000 milliseconds.
    """

    mode: DurabilityMode = "full"
    #: ``batch``: sync at the latest when this many step commits are unsynced.
    batch_steps: int = 16
    #: ``batch``: sync at the latest this many milliseconds after the oldest unsynced commit.
    batch_ms: float = 100.0

    def __post_init__(self) -> None:
        if self.mode not in DURABILITY_MODES:
            raise ValueError(
                f"unknown durability {self.mode!r}: choose {', '.join(DURABILITY_MODES)}"
            )
        if type(self.batch_steps) is not int or not 1 <= self.batch_steps <= 1_000_000:
            raise ValueError(f"batch_steps must be 1 to 1000000, not {self.batch_steps!r}")
        if type(self.batch_ms) not in (int, float) or not 0 < self.batch_ms <= 3_600_000:
            raise ValueError(f"batch_ms must be over 0 and at most 3600000, not {self.batch_ms!r}")

    @property
    def syncs(self) -> bool:
        """Whether any record is ever synced (everything but ``none``)."""
        return self.mode != "none"

    def __str__(self) -> str:
        if self.mode == "batch":
            return f"batch ({self.batch_steps} steps or {self.batch_ms:g} ms)"
        return self.mode


#: The default: every commit synced before it returns.
FULL: Final = Durability()
