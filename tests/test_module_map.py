"""``docs/engine.md`` opens with a map of every module; a module missing from it fails here."""

from __future__ import annotations

import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def test_every_module_has_a_line_in_the_map() -> None:
    doc = (REPO / "docs" / "engine.md").read_text(encoding="utf-8")
    mapped = set(re.findall(r"^\| `(_?[\w/]+)` \|", doc, flags=re.M)) - {"module"}
    package = REPO / "wfctl"
    modules = {
        str(path.relative_to(package).with_suffix(""))
        for path in package.rglob("*.py")
        if path.name != "__init__.py" or not path.parent.name.startswith("_")
    } - {"__init__"}
    assert modules <= mapped, sorted(modules - mapped)
    assert mapped <= modules, sorted(mapped - modules)  # no line for a module that is gone
