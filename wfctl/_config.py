"""Where the checkpoint store lives: ``--store``, ``WFCTL_STORE``, ``wfctl.toml``, default.

Precedence, highest first: an explicit path; the ``WFCTL_STORE`` environment variable;
``store = "..."`` in ``wfctl.toml`` or under ``[tool.wfctl]`` in ``pyproject.toml`` in the
current directory or the nearest parent that has one (relative paths are taken from that
file's directory); ``./.wfctl``.

A store named for this invocation (the explicit path or ``WFCTL_STORE``) must exist when it is
read: a typo must not read as "no runs". The configured and default stores may not exist yet
(a project before its first run); reads then find no runs. An empty path is refused everywhere:
it would silently mean the current directory. An empty ``WFCTL_STORE`` counts as unset.
"""

from __future__ import annotations

import os
import tomllib
from dataclasses import dataclass
from pathlib import Path

from ._errors import StoreLocationError, WfctlError

__all__ = ["DEFAULT_STORE", "StoreLocation", "locate_store", "resolve_store"]

DEFAULT_STORE = ".wfctl"


def _configured(directory: Path) -> Path | None:
    for parent in (directory, *directory.parents):
        for name, section in (("wfctl.toml", ()), ("pyproject.toml", ("tool", "wfctl"))):
            path = parent / name
            if not path.is_file():
                continue
            try:
                table = tomllib.loads(path.read_text(encoding="utf-8"))
            except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
                raise WfctlError(f"cannot read {path}: {exc}") from None
            for part in section:
                table = table.get(part, {})
            store = table.get("store") if isinstance(table, dict) else None
            if store is not None:
                if not isinstance(store, str):
                    raise WfctlError(f"{path}: 'store' must be a string")
                if not store:
                    raise StoreLocationError(store, f"(in {path}) is empty: name a directory")
                return parent / store
            if name == "wfctl.toml":
                return None
    return None


@dataclass(frozen=True, slots=True)
class StoreLocation:
    """Where the store is, and whether it was named for this invocation."""

    path: Path
    #: Named by an explicit path or ``WFCTL_STORE``: reads refuse it if it does not exist.
    named: bool


def locate_store(explicit: str | os.PathLike[str] | None = None) -> StoreLocation:
    """Return the store directory to use and how it was chosen.

    Raises:
        StoreLocationError: the path given (explicitly or in a configuration file) is empty.
        WfctlError: a configuration file exists but cannot be read.
    """
    if explicit is not None:
        if not os.fspath(explicit):
            raise StoreLocationError("", "is empty: name a directory (. for the current one)")
        return StoreLocation(Path(explicit), named=True)
    env = os.environ.get("WFCTL_STORE")
    if env:
        return StoreLocation(Path(env), named=True)
    return StoreLocation(_configured(Path.cwd()) or Path(DEFAULT_STORE), named=False)


def resolve_store(explicit: str | os.PathLike[str] | None = None) -> Path:
    """Return the store directory to use (see :func:`locate_store`).

    Raises:
        StoreLocationError: the path given is empty.
        WfctlError: a configuration file exists but cannot be read.
    """
    return locate_store(explicit).path
