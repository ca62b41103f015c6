"""``wfctl --version`` and ``wfctl version``: the versions of wfctl, Python and the libraries it runs on.

Versions are read from the installed distributions' metadata (:mod:`importlib.metadata`), never
by importing the libraries: asking for a version must not pay for loading rich. The libraries
listed are wfctl's own runtime dependencies, as its metadata declares them, so the list follows
``pyproject.toml`` without being written down twice.
"""

from __future__ import annotations

import platform
import re
from dataclasses import dataclass
from importlib import metadata
from typing import Any, Final

from ._documents import document

__all__ = ["VersionReport", "version_line", "versions"]

#: The distribution name at the start of a requirement (``rich>=13`` -> ``rich``).
_NAME: Final = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")


def _version_of(distribution: str) -> str | None:
    try:
        return metadata.version(distribution)
    except metadata.PackageNotFoundError:
        return None


def version_line() -> str:
    """Return ``wfctl X.Y.Z``, what ``wfctl --version`` prints."""
    return f"wfctl {_version_of('wfctl') or 'unknown'}"


@dataclass(frozen=True, slots=True)
class VersionReport:
    """wfctl's version, the Python running it, and each runtime dependency's installed version.

    A library's version is None when it is not installed (a broken environment).
    """

    wfctl: str | None
    python: str
    python_implementation: str
    platform: str
    libraries: tuple[tuple[str, str | None], ...]

    def to_json(self) -> dict[str, Any]:
        """Return the ``wfctl/version@1`` document (see docs/json.md)."""
        return document(
            "version",
            {
                "wfctl": self.wfctl,
                "python": self.python,
                "python_implementation": self.python_implementation,
                "platform": self.platform,
                "libraries": [
                    {"name": name, "version": version} for name, version in self.libraries
                ],
            },
        )

    def lines(self) -> list[str]:
        """Return the report as lines of text for people."""
        out = [
            f"wfctl {self.wfctl or 'unknown'}",
            f"Python {self.python} ({self.python_implementation}) on {self.platform}",
        ]
        out += [f"{name} {version or 'not installed'}" for name, version in self.libraries]
        return out


def versions() -> VersionReport:
    """Return the versions of wfctl, Python and wfctl's runtime dependencies."""
    names: list[str] = []
    try:
        requirements = metadata.requires("wfctl") or []
    except metadata.PackageNotFoundError:
        requirements = []
    for requirement in requirements:
        match = _NAME.match(requirement)
        if match and "extra" not in requirement.partition(";")[2]:
            names.append(match.group())
    return VersionReport(
        wfctl=_version_of("wfctl"),
        python=platform.python_version(),
        python_implementation=platform.python_implementation(),
        platform=platform.platform(terse=True),
        libraries=tuple((name, _version_of(name)) for name in names),
    )
