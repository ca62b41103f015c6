"""Style is checked, not suggested: ruff's linter and formatter pass over the whole repository.

ruff is in the test extra, pinned to one minor version so that a new formatter style cannot
turn a green tree red on its own.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]


@pytest.mark.parametrize("command", [["check", "."], ["format", "--check", "."]])
def test_ruff_passes(command: list[str]) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "ruff", *command],
        cwd=REPO,
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr


def _private(dotted: str) -> bool:
    """Whether a dotted name has a private part (``_wrap`` in ``rich._wrap``; not ``__x__``)."""
    return any(p.startswith("_") and not p.endswith("__") for p in dotted.split("."))


def _third_party(module: str) -> bool:
    return module.split(".")[0] not in {"wfctl", *sys.stdlib_module_names}


def private_uses(package: Path) -> Iterator[str]:
    """Each import of a private module or name of another library in ``package``, and each
    private attribute read from a name such an import binds (``typer._click``), as
    ``file:line: code``."""
    for path in sorted(package.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        bound: set[str] = set()  # names bound to another library's modules and objects
        found: list[ast.AST] = []
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                for alias in node.names:
                    if _third_party(alias.name):
                        bound.add(alias.asname or alias.name.split(".")[0])
                        if _private(alias.name):
                            found.append(node)
            elif isinstance(node, ast.ImportFrom) and node.module and _third_party(node.module):
                if node.level:
                    continue  # a relative import: wfctl's own
                bound.update(alias.asname or alias.name for alias in node.names)
                if _private(node.module) or any(_private(a.name) for a in node.names):
                    found.append(node)
        for node in ast.walk(tree):
            if isinstance(node, ast.Attribute) and _private(node.attr):
                root: ast.expr = node
                while isinstance(root, ast.Attribute):
                    root = root.value
                if isinstance(root, ast.Name) and root.id in bound:
                    found.append(node)
        for node in found:
            line = getattr(node, "lineno", 0)
            yield f"{path.relative_to(package.parent)}:{line}: {ast.unparse(node)}"


def test_wfctl_uses_no_private_module_or_name_of_another_library() -> None:
    # A private module (rich._wrap, typer._click, typer._coercion) may change or go in any
    # minor release: wfctl uses the public API, or owns the piece of code it needs.
    assert list(private_uses(REPO / "wfctl")) == []
