"""``man/wfctl.1`` is generated from the CLI and documents every command and option."""

from __future__ import annotations

import importlib.util
import shutil
import subprocess
from types import ModuleType

import pytest
import typer

from tests.cli.conftest import REPO
from wfctl._cli import app


def _generator() -> ModuleType:
    # scripts/ is not a package: load the generator from its file.
    spec = importlib.util.spec_from_file_location("gen_man", REPO / "scripts" / "gen_man.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_man_page_is_up_to_date() -> None:
    page = REPO / "man" / "wfctl.1"
    assert page.read_text(encoding="utf-8") == _generator().render(), (
        "man/wfctl.1 is stale: run python scripts/gen_man.py"
    )


def test_man_page_documents_every_command_and_option() -> None:
    text = _generator().render()
    group = typer.main.get_command(app)
    assert isinstance(group, typer.core.TyperGroup)
    context = group.make_context("wfctl", [], resilient_parsing=True)
    for name in group.list_commands(context):
        command = group.get_command(context, name)
        assert command is not None
        assert f'.SS "wfctl {name.replace("-", chr(92) + "-")} ' in text, name
        for param in command.params:
            for opt in [*getattr(param, "opts", []), *getattr(param, "secondary_opts", [])]:
                if opt.startswith("-") and opt not in ("--help", "-h"):
                    assert opt.replace("-", "\\-") in text, (name, opt)
    for section in ("NAME", "SYNOPSIS", "DESCRIPTION", "COMMANDS", "EXIT STATUS",
                    "ENVIRONMENT", "FILES", "EXAMPLES"):  # fmt: skip
        assert f".SH {section}\n" in text
    assert "WFCTL_STORE" in text and "NO_COLOR" in text and "wfctl.toml" in text
    assert "\\fB130\\fR" in text


def test_man_page_renders_without_warnings() -> None:
    groff = shutil.which("groff")
    if groff is None:
        pytest.skip("groff is not installed")
    done = subprocess.run(
        [groff, "-ww", "-man", "-z", str(REPO / "man" / "wfctl.1")],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0 and done.stderr == "", done.stderr
