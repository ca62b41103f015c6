"""``docs/engine.md`` opens with a map of every module, and ``docs/architecture.md`` draws the
packages; a module or package missing from them fails here."""

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


def test_the_house_at_a_glance_names_every_package_and_few_loose_modules() -> None:
    picture = (REPO / "docs" / "architecture.md").read_text(encoding="utf-8")
    package = REPO / "wfctl"
    packages = sorted(p.parent.name for p in package.glob("*/__init__.py"))
    assert [name for name in packages if f"{name}/" not in picture] == []
    loose = sorted(p.stem for p in package.glob("*.py") if p.name != "__init__.py")
    assert len(loose) <= 12, loose  # small shared helpers; everything else lives in a package
    assert [name for name in loose if name not in picture] == []
