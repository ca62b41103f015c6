"""The house keeps its shape: the contracts of ``[tool.importlinter]`` in pyproject.toml hold
(each layer imports only the layers below it; only the renderer imports rich; the engine never
imports the command line), and no module of wfctl reaches itself through its imports.

Lazy imports (inside functions) and type-checking imports count like any other: a circle that
only shows at run time, or only to the type checker, is still a circle.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import grimp

from tests.conftest import console_script

REPO = Path(__file__).resolve().parents[1]


def test_the_import_contracts_hold() -> None:
    ran = subprocess.run(
        [
            console_script("lint-imports", "import-linter's lint-imports", "the test extras"),
            "--no-cache",
        ],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert ran.returncode == 0, ran.stdout + ran.stderr
    assert "0 broken" in ran.stdout


def test_no_module_reaches_itself_through_its_imports() -> None:
    graph = grimp.build_graph("wfctl", cache_dir=None)  # lazy and type-checking imports too
    circles = []
    for module in sorted(graph.modules):
        for imported in sorted(graph.find_modules_directly_imported_by(module)):
            back = graph.find_shortest_chain(importer=imported, imported=module)
            if back is not None:
                circles.append(" -> ".join((module, *back)))
    assert not circles, "import circles:\n" + "\n".join(circles)
