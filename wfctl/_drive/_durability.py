"""The durability a command commits with: what it was given (``--durability``, ``--batch-steps``,
``--batch-ms``), else what the nearest ``wfctl.toml`` sets, else the defaults."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from wfctl._config import config_tables
from wfctl._errors import WfctlError

if TYPE_CHECKING:
    from wfctl._storage._durability import Durability

__all__ = ["resolve_durability"]

_DURABILITY_KEYS = ("durability", "batch_steps", "batch_ms")


def resolve_durability(
    mode: str | None = None,
    batch_steps: int | None = None,
    batch_ms: float | None = None,
    directory: Path | None = None,
) -> Durability:
    """Return the durability a command commits with: what it was given, else the config's.

    Each value given (``--durability``, ``--batch-steps``, ``--batch-ms``) wins; the others
    come from the nearest ``wfctl.toml`` (or ``[tool.wfctl]``) that sets any of
    ``durability``, ``batch_steps`` or ``batch_ms``; else the defaults (``full``; a batch
    window of 16 steps or 100 ms).

    Raises:
        WfctlError: a configuration file cannot be read or sets a bad value, or a value given
            is out of range.
    """
    from wfctl._storage._durability import Durability  # the storage package, only when running

    found: dict[str, Any] = {}
    where = "the command line"
    for path, table in config_tables(directory or Path.cwd()):
        if any(key in table for key in _DURABILITY_KEYS):
            found = {key: table[key] for key in _DURABILITY_KEYS if key in table}
            where = str(path)
            break
    given = {"durability": mode, "batch_steps": batch_steps, "batch_ms": batch_ms}
    found |= {key: value for key, value in given.items() if value is not None}
    if "durability" in found and not isinstance(found["durability"], str):
        raise WfctlError(f"{where}: 'durability' must be a string")
    try:
        return Durability(
            found.get("durability", "full"),
            found.get("batch_steps", 16),
            found.get("batch_ms", 100.0),
        )
    except ValueError as exc:
        raise WfctlError(f"{where}: {exc}") from None
