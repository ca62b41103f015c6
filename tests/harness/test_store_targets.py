"""A store never gets wfctl to run its code: recorded targets inside the store, foreign stores.

A run's root records the target ``resume`` and ``replay`` import. Each test edits that record
(re-signed, as an attacker would) or the store's owner, then runs the installed ``wfctl``.
The workflow file writes a marker file when it is imported, so "no code ran" is observable.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.cli.conftest import base_env, wfctl_executable
from tests.harness.hostile_cases import edit_record

pytestmark = pytest.mark.skipif(os.name != "posix", reason="POSIX owners")

FLOW = """
from pathlib import Path
from wfctl import RunContext, workflow

Path({marker!r}).write_text("imported")  # top-level code: runs on import

@workflow(name="flow")
async def flow(topic: str, ctx: RunContext) -> str:
    answer = await ctx.request_info({{"question": "ok?"}}, str, request_id="ok")
    return f"{{topic}}: {{answer}}"
"""
NOBODY = 65534


class Setup:
    """A run ``r`` of ``flow.py`` paused in ``store``; ``marker`` appears when flow.py is imported."""

    def __init__(self, tmp_path: Path) -> None:
        self.tmp = tmp_path
        self.marker = tmp_path / "IMPORTED"
        self.code = tmp_path / "code"
        self.code.mkdir()
        self.flow = self.code / "flow.py"
        self.flow.write_text(FLOW.format(marker=str(self.marker)))
        self.store = tmp_path / "work" / ".wfctl"
        self.store.parent.mkdir()
        done = self.wfctl("run", f"{self.flow}:flow", "--input", '"x"', "--run-id", "r")
        assert done.returncode == 3, done.stderr
        self.marker.unlink()
        self.run_dir = self.store / "runs" / "r"

    def wfctl(self, *args: str | Path, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [wfctl_executable(), *map(str, args), "--store", str(self.store)],
            cwd=cwd or self.store.parent,
            env=base_env(),
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )

    def record_target(self, target: str, run_id: str = "r") -> None:
        """Rewrite the root's recorded target (and its checksum), as a crafted store would."""
        journal = self.store / "runs" / run_id / "journal.jsonl"
        lines = journal.read_bytes().splitlines(keepends=True)

        def change(raw: dict[str, Any]) -> None:
            raw["data"]["target"] = target

        lines[0] = edit_record(lines[0], change) + b"\n"
        journal.write_bytes(b"".join(lines))

    def plant(self, relative: str, text: str | None = None) -> Path:
        """Put a copy of flow.py (or ``text``) at ``relative`` inside the run's directory."""
        path = self.run_dir / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text if text is not None else self.flow.read_text())
        return path


@pytest.fixture
def setup(tmp_path: Path) -> Setup:
    return Setup(tmp_path)


def _refused(done: subprocess.CompletedProcess[str], *fragments: str) -> None:
    assert done.returncode == 2, (done.returncode, done.stdout, done.stderr)
    assert "Traceback" not in done.stderr
    # (a foreign store root also gets its StoreSecurityWarning, printed before the error)
    lines = [line for line in done.stderr.splitlines() if line.startswith("wfctl:")]
    assert len(lines) == 1 and lines[0].startswith("wfctl: error: refusing to import"), lines
    for fragment in fragments:
        assert fragment in lines[0], (fragment, lines[0])


def _resume(s: Setup, *extra: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return s.wfctl("resume", "r", "--response", "ok=yes", "--json", *extra, cwd=cwd)


def _replay(s: Setup, *extra: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return s.wfctl("replay", "--checkpoint", "r.0", "--json", *extra, cwd=cwd)


# --- a target inside the store ------------------------------------------------------------


def _absolute(s: Setup) -> tuple[str, Path | None]:
    return f"{s.plant('flow.py')}:flow", None


def _relative(s: Setup) -> tuple[str, Path | None]:
    s.plant("flow.py")  # from the working directory: .wfctl/runs/r/flow.py
    return ".wfctl/runs/r/flow.py:flow", None


def _through_a_link(s: Setup) -> tuple[str, Path | None]:
    link = s.tmp / "innocent.py"
    link.symlink_to(s.plant("flow.py"))
    return f"{link}:flow", None


def _module_from_cwd(s: Setup) -> tuple[str, Path | None]:
    s.plant("flow.py")
    return "flow:flow", s.run_dir  # found on sys.path from the current directory


def _package_init(s: Setup) -> tuple[str, Path | None]:
    # Only the package's __init__ lies in the store; finding pkg.flow must not import it.
    s.plant("pkg/__init__.py", f"open({str(s.marker)!r}, 'w').write('imported')\n")
    s.plant("pkg/flow.py")
    return "pkg.flow:flow", s.run_dir


INSIDE: dict[str, Callable[[Setup], tuple[str, Path | None]]] = {
    "absolute": _absolute,
    "relative": _relative,
    "link": _through_a_link,
    "module": _module_from_cwd,
    "package": _package_init,
}


@pytest.mark.parametrize("how", INSIDE)
def test_a_target_inside_the_store_is_never_imported(setup: Setup, how: str) -> None:
    target, cwd = INSIDE[how](setup)
    setup.record_target(target)
    for done in (_resume(setup, cwd=cwd), _replay(setup, cwd=cwd)):
        _refused(done, "lies inside the store", "--target")
        assert not setup.marker.exists(), done.stderr
    # The user's own code, named with --target, still resumes the run.
    done = _resume(setup, "--target", f"{setup.flow}:flow", cwd=cwd)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["outputs"] == ["x: yes"]
    assert json.loads(done.stdout)["target_recorded"] is False


def test_the_recorded_target_is_named_in_the_summary(setup: Setup) -> None:
    done = setup.wfctl("resume", "r", "--response", "ok=yes")
    assert done.returncode == 0, done.stderr
    assert f"code: {setup.flow}:flow (the target run r recorded)" in done.stderr
    doc = json.loads(_replay(setup).stdout)
    assert doc["target"] == f"{setup.flow}:flow" and doc["target_recorded"] is True


# --- a store owned by someone else --------------------------------------------------------

as_root = pytest.mark.skipif(os.geteuid() != 0, reason="creating another user's files needs root")


@as_root
@pytest.mark.parametrize("owned", ["store", "run", "journal"])
def test_a_foreign_store_is_not_trusted_unless_told(setup: Setup, owned: str) -> None:
    path = {
        "store": setup.store,
        "run": setup.run_dir,
        "journal": setup.run_dir / "journal.jsonl",
    }[owned]
    os.chown(path, NOBODY, NOBODY)
    for done in (_resume(setup), _replay(setup)):
        _refused(done, f"{path} is owned by uid {NOBODY}", "--trust-store")
        assert not setup.marker.exists()
    # Reading it needs no trust; trusting it lets its recorded code be imported.
    assert setup.wfctl("log", "r").returncode == 0
    done = _replay(setup, "--trust-store")
    assert done.returncode == 1, done.stderr  # the source paused: not identical, but it ran
    assert setup.marker.exists()


@as_root
@pytest.mark.parametrize(("config_owner", "listed"), [(0, ".wfctl"), (NOBODY, "*")])
def test_only_a_wfctl_toml_of_yours_can_trust_a_foreign_store(
    setup: Setup, config_owner: int, listed: str
) -> None:
    os.chown(setup.store, NOBODY, NOBODY)
    config = setup.store.parent / "wfctl.toml"
    config.write_text(f"trusted_stores = [{listed!r}]\n")
    os.chown(config, config_owner, config_owner)
    done = _resume(setup)
    if config_owner == os.geteuid():
        assert done.returncode == 0, done.stderr
        assert setup.marker.exists()
    else:  # the store's owner (or anyone else) cannot vouch for it
        _refused(done, f"is owned by uid {NOBODY}")
        assert not setup.marker.exists()


# --- reading commands import nothing ------------------------------------------------------


@pytest.mark.parametrize("target", ["file-in-store", "file-outside", "module-from-cwd"])
def test_reading_commands_import_nothing(setup: Setup, target: str) -> None:
    recorded = {
        "file-in-store": f"{setup.plant('flow.py')}:flow",
        "file-outside": f"{setup.flow}:flow",
        "module-from-cwd": "flow:flow",
    }[target]
    setup.record_target(recorded)
    shutil.copy(setup.flow, setup.store.parent / "flow.py")  # importable from the cwd
    for args in (
        ["runs"],
        ["log", "r"],
        ["show", "r.0"],
        ["show", "r.1", "--toml"],
        ["export", "r", "--format", "json"],
        ["verify-lineage"],
        ["runs", "--json"],
        ["log", "r", "--json"],
    ):
        done = setup.wfctl(*args)
        assert done.returncode == 0, (args, done.stderr)
        assert not setup.marker.exists(), args


# --- code the store names outside it: one rule for resume, replay and worker ----------------

EVILMOD = "from pathlib import Path\nPath({marker!r}).write_text('imported')\n"


def test_a_standard_library_module_is_never_imported(setup: Setup) -> None:
    # `this` prints the Zen of Python when imported: a record naming it must not run it.
    setup.record_target("this:x")
    for done in (_resume(setup), _replay(setup), setup.wfctl("resume", "r", "-r", "ok=yes")):
        _refused(done, "'this:x'", "is part of Python itself", "--target")
        assert "Zen of Python" not in done.stdout + done.stderr
        assert done.stdout == ""


def _plant_evilmod(s: Setup) -> None:
    """An ``evilmod.py`` in the working directory of every command (beside the store)."""
    (s.store.parent / "evilmod.py").write_text(EVILMOD.format(marker=str(s.marker)))


def test_a_stray_module_in_the_working_directory_is_not_imported(setup: Setup) -> None:
    _plant_evilmod(setup)
    setup.record_target("evilmod:flow")
    for done in (_resume(setup), _replay(setup)):
        _refused(done, "found only through the current directory", "not started there", "--target")
        assert not setup.marker.exists(), done.stderr


@pytest.mark.parametrize("workflows", [None, "code"])
def test_a_worker_applies_the_same_rule(setup: Setup, workflows: str | None) -> None:
    queued = setup.wfctl("submit", f"{setup.flow}:flow", "--input", '"y"', "--run-id", "q")
    assert queued.returncode == 0, queued.stderr
    setup.marker.unlink()  # (submit loaded flow.py: only what comes after counts)
    _plant_evilmod(setup)
    for recorded, reason in (
        ("evilmod:flow", "found only through the current directory"),
        ("this:x", "is part of Python itself"),
    ):
        setup.record_target(recorded, "q")
        extra = ["--workflows", str(setup.code)] if workflows else []
        done = setup.wfctl("worker", "--exit-when-idle", "--json", *extra)
        assert done.returncode == 0, done.stderr
        events = [json.loads(line) for line in done.stdout.splitlines()]
        [refused] = [e for e in events if e.get("event") == "refused"]
        assert refused["run_id"] == "q", refused
        assert not setup.marker.exists(), refused
        assert "Zen of Python" not in done.stdout + done.stderr
        if not workflows:  # (with --workflows elsewhere, it is refused as outside them)
            assert reason in refused["reason"], refused


def test_a_module_target_resumes_where_its_run_started(setup: Setup) -> None:
    # The honest case the rule keeps: `wfctl run flow:flow` beside flow.py, resumed there.
    started = setup.wfctl("run", "flow:flow", "--input", '"m"', "--run-id", "m", cwd=setup.code)
    assert started.returncode == 3, started.stderr
    elsewhere = setup.store.parent
    shutil.copy(setup.flow, elsewhere / "flow.py")  # the same name, beside another directory
    setup.marker.unlink()
    done = setup.wfctl("resume", "m", "--response", "ok=yes", "--json", cwd=elsewhere)
    _refused(done, "found only through the current directory", f"started in {setup.code}")
    assert not setup.marker.exists()
    done = setup.wfctl("resume", "m", "--response", "ok=yes", "--json", cwd=setup.code)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["outputs"] == ["m: yes"]
