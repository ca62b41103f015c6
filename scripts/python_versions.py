"""Print the Python versions pyproject.toml's classifiers name, oldest first (for ``.ci/run``)."""

from __future__ import annotations

import re
import sys
import tomllib
from pathlib import Path

PYPROJECT = Path(__file__).resolve().parents[1] / "pyproject.toml"


def declared_versions(pyproject: Path = PYPROJECT) -> list[str]:
    """Return the ``3.N`` versions of the ``Programming Language :: Python :: 3.N`` classifiers."""
    project = tomllib.loads(pyproject.read_text(encoding="utf-8"))["project"]
    found = [
        match.group(1)
        for classifier in project.get("classifiers", [])
        if (match := re.fullmatch(r"Programming Language :: Python :: (3\.\d+)", classifier))
    ]
    return sorted(found, key=lambda version: tuple(map(int, version.split("."))))


def main() -> int:
    versions = declared_versions()
    if not versions:
        print("pyproject.toml names no Python version in its classifiers", file=sys.stderr)
        return 2
    print(" ".join(versions))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
