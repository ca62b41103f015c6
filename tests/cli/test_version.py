"""``wfctl --version`` and ``wfctl version [--json]`` through the installed command."""

from __future__ import annotations

import platform
import subprocess
import sys
from importlib import metadata

from tests.cli.conftest import wfctl


def test_version_option_prints_one_line() -> None:
    done = wfctl("--version")
    assert done.code == 0, done.stderr
    assert done.stdout == f"wfctl {metadata.version('wfctl')}\n" and done.stderr == ""


#: wfctl's runtime dependencies, as its metadata requires them.
RUNTIME = (
    "typer",
    "rich",
    "tomli-w",
    "filelock",
    "orjson",
    "zlib-ng",
    "blake3",
    "msgpack",
    "zstandard",
)


def test_version_command_lists_python_and_the_runtime_libraries() -> None:
    people = wfctl("version")
    assert people.code == 0, people.stderr
    lines = people.stdout.splitlines()
    assert lines[0] == f"wfctl {metadata.version('wfctl')}"
    assert lines[1].startswith(f"Python {platform.python_version()} ")
    for name in RUNTIME:
        assert f"{name} {metadata.version(name)}" in lines

    document = wfctl("version", "--json").json()
    assert document["schema"] == "wfctl/version@1"
    assert document["wfctl"] == metadata.version("wfctl")
    assert document["python"] == platform.python_version()
    libraries = {item["name"]: item["version"] for item in document["libraries"]}
    assert libraries == {name: metadata.version(name) for name in RUNTIME}


def test_version_loads_neither_rich_nor_the_engine() -> None:
    """Versions come from package metadata: asking for them imports none of the libraries."""
    code = (
        "import sys\n"
        "from wfctl._inspect._versions import versions\n"
        "versions()\n"
        "print(sorted(m for m in ('rich', 'filelock', 'tomli_w', 'wfctl._engine._run') if m in sys.modules))"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60
    )
    assert done.stdout.strip() == "[]"
