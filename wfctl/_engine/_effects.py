"""What a running step does to the run besides returning: the state and outputs it sets.

They are recorded with the step's result and replayed when the step is served from the cache.
"""

from __future__ import annotations

import contextvars
from typing import Any

__all__ = ["StepEffects", "current_effects"]


class StepEffects:
    """What a running step did to the run besides returning: recorded with its result."""

    __slots__ = ("outputs", "state")

    def __init__(self) -> None:
        self.state: dict[str, Any] = {}
        self.outputs: list[Any] = []

    def merge(self, other: dict[str, Any] | None) -> None:
        """Fold a finished inner step's encoded effects into this (outer) step's."""
        if other:
            self.state.update(other.get("state", {}))
            self.outputs.extend(other.get("outputs", []))

    def to_json(self) -> dict[str, Any] | None:
        """Return the encoded effects, or None when the step had none."""
        out: dict[str, Any] = {}
        if self.state:
            out["state"] = self.state
        if self.outputs:
            out["outputs"] = self.outputs
        return out or None


_effects: contextvars.ContextVar[StepEffects | None] = contextvars.ContextVar(
    "wfctl_step_effects", default=None
)


def current_effects() -> contextvars.ContextVar[StepEffects | None]:
    """Return the context variable holding the effects of the step being executed."""
    return _effects
