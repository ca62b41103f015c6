"""Where the checkpoint store lives: ``--store``, ``WFCTL_STORE``, ``wfctl.toml``, default.

Precedence, highest first: an explicit path; the ``WFCTL_STORE`` environment variable;
``store = "..."`` in ``wfctl.toml`` or under ``[tool.wfctl]`` in ``pyproject.toml`` in the
current directory or the nearest parent that has one (relative paths are taken from that
file's directory); ``./.wfctl``.
"""

from __future__ import annotations

import os
import tomllib
from pathlib import Path

from ._errors import WfctlError

__all__ = ["DEFAULT_STORE", "resolve_store"]

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
                return parent / store
            if name == "wfctl.toml":
                return None
    return None


def resolve_store(explicit: str | os.PathLike[str] | None = None) -> Path:
    """Return the store directory to use.

    Raises:
        WfctlError: a configuration file exists but cannot be read.
    """
    if explicit is not None:
        return Path(explicit)
    env = os.environ.get("WFCTL_STORE")
    if env:
        return Path(env)
    return _configured(Path.cwd()) or Path(DEFAULT_STORE)
