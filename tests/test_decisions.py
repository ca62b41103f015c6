"""``docs/decisions/`` holds one short file per decision, each listed once in its index."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
DECISIONS = REPO / "docs" / "decisions"
INDEX = DECISIONS / "README.md"
NAME = re.compile(r"^\d{4}-[a-z0-9]+(?:-[a-z0-9]+)*\.md$")
LINK = re.compile(r"\]\(([^)#\s]+)(?:#[^)]*)?\)")


def decision_files() -> list[Path]:
    return sorted(path for path in DECISIONS.glob("*.md") if path.name != "README.md")


def test_each_decision_is_named_and_numbered_once() -> None:
    files = decision_files()
    assert files
    assert [path.name for path in files if not NAME.match(path.name)] == []
    numbers = [path.name[:4] for path in files]
    assert sorted({n for n in numbers if numbers.count(n) > 1}) == []
    for path in files:
        first = path.read_text(encoding="utf-8").split("\n", 1)[0]
        assert first.startswith(f"# {path.name[:4]}. "), path.name


def test_the_index_lists_every_decision_exactly_once() -> None:
    linked = LINK.findall(INDEX.read_text(encoding="utf-8"))
    listed = [target for target in linked if NAME.match(target)]
    assert sorted({t for t in listed if listed.count(t) > 1}) == []
    assert sorted(listed) == [path.name for path in decision_files()]


def test_links_in_the_decisions_resolve() -> None:
    for path in [INDEX, *decision_files()]:
        for target in LINK.findall(path.read_text(encoding="utf-8")):
            if "://" in target:
                continue
            assert (path.parent / target).exists(), f"{path.name}: {target}"


def test_each_decision_has_its_three_sections_and_fits_a_screen() -> None:
    for path in decision_files():
        text = path.read_text(encoding="utf-8")
        headings = re.findall(r"^## (.+)$", text, flags=re.M)
        assert headings == ["Context", "Decision", "Consequences"], path.name
        sections = re.split(r"^## .+$", text, flags=re.M)[1:]
        assert all(section.strip() for section in sections), path.name
        assert len(text.splitlines()) <= 60, f"{path.name}: {len(text.splitlines())} lines"


def test_nothing_links_to_the_old_single_file() -> None:
    tracked = subprocess.run(
        ["git", "grep", "-l", "-F", "decisions.md"],
        cwd=REPO,
        capture_output=True,
        text=True,
        check=False,
    )
    assert tracked.returncode in (0, 1), tracked.stderr
    found = [name for name in tracked.stdout.split() if name != "tests/test_decisions.py"]
    assert found == []
    assert not (REPO / "docs" / "decisions.md").exists()


def test_every_decision_named_in_the_repository_exists() -> None:
    named = subprocess.run(
        ["git", "grep", "-h", "-o", "-E", "decisions/[0-9]{4}-[a-z0-9-]+\\.md"],
        cwd=REPO,
        capture_output=True,
        text=True,
        check=False,
    )
    assert named.returncode in (0, 1), named.stderr
    names = {line.removeprefix("decisions/") for line in named.stdout.split()}
    assert names
    assert sorted(name for name in names if not (DECISIONS / name).exists()) == []
