"""The inspector's pages, script and style ship in the wheel: every file of wfctl/_ui that is
not Python matches a ``[tool.setuptools.package-data]`` pattern (no CDN: nothing is fetched at
run time), and the pages name no other origin."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
UI = REPO / "wfctl" / "_ui"


def test_every_asset_is_package_data() -> None:
    patterns = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["tool"][
        "setuptools"
    ]["package-data"]["wfctl"]
    package = REPO / "wfctl"
    assets = [p for p in UI.rglob("*") if p.is_file() and p.suffix not in (".py", ".pyc")]
    assert assets
    shipped = [
        asset
        for asset in assets
        if any(asset.relative_to(package).match(pattern) for pattern in patterns)
    ]
    assert shipped == assets


def test_no_page_loads_anything_from_another_origin() -> None:
    for asset in [*UI.glob("templates/*.html"), *UI.glob("static/*")]:
        text = asset.read_text(encoding="utf-8")
        assert not re.search(r"""(src|href)\s*=\s*["']?(https?:)?//""", text), asset.name
        assert "@import" not in text and "url(http" not in text, asset.name
