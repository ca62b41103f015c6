"""Helpers for the CLI tests: the installed ``wfctl`` in a subprocess, and ``CliRunner``.

Subprocess runs check what a user gets (exit codes, stdout, stderr of the real executable);
in-process runs through ``typer.testing.CliRunner`` cover the breadth cheaply. Both run with
``NO_COLOR=1`` and a fixed width so rich output can be checked for content.
"""

from __future__ import annotations

import json
import os
import subprocess
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from tests.conftest import wfctl_executable
from wfctl._cli import app

WORKFLOWS = Path(__file__).resolve().parent / "workflows"
REPO = Path(__file__).resolve().parents[2]
SAMPLES = REPO / "sample_workflows"
WIDTH = "120"


def base_env(extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """Return the environment for a CLI run: no colour, fixed width, no inherited store or
    time format."""
    inherited = ("WFCTL_STORE", "WFCTL_TIME_FORMAT", "FORCE_COLOR")
    env = {k: v for k, v in os.environ.items() if k not in inherited}
    env.update({"NO_COLOR": "1", "COLUMNS": WIDTH, "TERM": "dumb"})
    env.update(extra or {})
    return env


@dataclass(frozen=True)
class Invocation:
    """What one CLI invocation did."""

    code: int
    stdout: str
    stderr: str

    def json(self) -> Any:
        """Parse stdout as the one JSON document ``--json`` promises."""
        return json.loads(self.stdout)

    def error_line(self) -> str:
        """Assert stderr is exactly one ``wfctl: error:`` line without a traceback; return it."""
        assert "Traceback" not in self.stderr, self.stderr
        lines = self.stderr.strip().splitlines()
        assert len(lines) == 1, self.stderr
        assert lines[0].startswith("wfctl: error: "), lines[0]
        return lines[0]


def wfctl(
    *args: str | os.PathLike[str],
    cwd: Path | None = None,
    env: Mapping[str, str] | None = None,
    timeout: float = 120,
    **process: Any,
) -> Invocation:
    """Run the installed ``wfctl`` with ``args`` and return its exit code and output.

    ``process`` passes further settings to :func:`subprocess.run` (``umask``, ``preexec_fn``).
    """
    done = subprocess.run(
        [wfctl_executable(), *map(str, args)],
        cwd=cwd,
        env=base_env(env),
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
        **process,
    )
    return Invocation(done.returncode, done.stdout, done.stderr)


def invoke(*args: str | os.PathLike[str], env: Mapping[str, str] | None = None) -> Invocation:
    """Run ``wfctl`` in-process through typer's ``CliRunner``."""
    overrides: dict[str, str | None] = {"NO_COLOR": "1", "COLUMNS": WIDTH, "WFCTL_STORE": None}
    overrides.update(env or {})
    result = CliRunner().invoke(app, [str(a) for a in args], env=overrides, prog_name="wfctl")
    return Invocation(result.exit_code, result.stdout, result.stderr)


@pytest.fixture
def store(tmp_path: Path) -> Path:
    """A store directory that does not exist yet."""
    return tmp_path / "store"


@pytest.fixture(params=["directory", "postgresql"])
def store_arg(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """What ``--store`` names: a directory, or the private server's URL (tables emptied).

    A module using it imports ``pg_server`` and ``pg_url`` from tests/postgres/conftest.py.
    """
    if request.param == "directory":
        return str(tmp_path / "store")
    url: str = request.getfixturevalue("pg_url")
    return url


@pytest.fixture
def workdir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An empty working directory (for the default ``./.wfctl`` store and config files)."""
    path = tmp_path / "work"
    path.mkdir()
    monkeypatch.chdir(path)
    return path


def run_id_of(outcome: Invocation) -> str:
    """Return the run id of a ``wfctl run --json`` outcome."""
    run_id = outcome.json()["run_id"]
    assert isinstance(run_id, str)
    return run_id


@pytest.fixture
def long_run(store: Path, request: pytest.FixtureRequest) -> str:
    """A completed run of ``workflows/many.py`` in ``store``: the test module's ``STEPS``
    steps, ``STEPS + 2`` records."""
    return many_steps(store, request.module.STEPS)


def many_steps(store: str | os.PathLike[str], steps: int) -> str:
    """Run ``workflows/many.py`` to completion in ``store``: ``steps`` steps, ``steps + 2``
    records; return the run's id."""
    return run_id_of(
        invoke("run", WORKFLOWS / "many.py", "--input", str(steps), "--store", store, "--json")
    )


def failed_long_run(tmp_path: Path, steps: int) -> tuple[Path, Path]:
    """Run ``workflows/settles.py`` into a new store as run ``r``: ``steps`` steps, then a
    failure until ``DIRECTORY/fixed`` exists. Return (the store, DIRECTORY)."""
    directory, store = tmp_path / f"job-{steps}", tmp_path / f"store-{steps}"
    directory.mkdir()
    job = json.dumps([str(directory), steps])
    settles = WORKFLOWS / "settles.py"
    failed = invoke("run", settles, "--input", job, "--store", store, "--run-id", "r", "--json")
    assert failed.code == 1, failed.stderr
    return store, directory


def journal_of(store: Path, run_id: str) -> Path:
    """The journal of ``run_id`` in the file store ``store``."""
    return store / "runs" / run_id / "journal.jsonl"


def spoil_step_record(store: Path, run_id: str, index: int) -> None:
    """Change one character of the step record at line ``index + 1`` (its checksum then fails)."""
    journal = journal_of(store, run_id)
    lines = journal.read_bytes().split(b"\n")
    lines[index] = lines[index].replace(b'"step"', b'"stap"')
    journal.write_bytes(b"\n".join(lines))


@dataclass
class Reads:
    """What reading a file store's journals did: lines read, and the seqs of records decoded."""

    lines: int = 0
    decoded: list[int] = field(default_factory=list)


def count_reads(monkeypatch: pytest.MonkeyPatch) -> Reads:
    """Count the lines the file store reads from journals and the records it decodes."""
    from wfctl._records._checkpoint import Checkpoint
    from wfctl._storage import _file

    reads = Reads()
    real_read_lines, real_from_dict = _file.read_lines, Checkpoint.from_dict.__func__

    def counted_lines(*args: Any) -> Iterator[bytes]:
        for line in real_read_lines(*args):
            reads.lines += 1
            yield line

    def counted_from_dict(cls: type[Checkpoint], raw: object, where: str) -> Checkpoint:
        checkpoint: Checkpoint = real_from_dict(cls, raw, where)
        reads.decoded.append(checkpoint.seq)
        return checkpoint

    monkeypatch.setattr(_file, "read_lines", counted_lines)
    monkeypatch.setattr(Checkpoint, "from_dict", classmethod(counted_from_dict))
    return reads


def spawn(*args: str | os.PathLike[str]) -> subprocess.Popen[str]:
    """Start the installed ``wfctl`` with ``args`` in the background (text pipes, no colour)."""
    return subprocess.Popen(
        [wfctl_executable(), *map(str, args)],
        env=base_env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def held_at_gate(store: str, gate: Path, run_id: str, *flags: str) -> subprocess.Popen[str]:
    """Start ``wfctl run`` of workflows/gated.py in the background and return once its first
    step runs (it waits until ``gate / "gate"`` exists; ``gate`` is an existing directory)."""
    driver = spawn(
        "run", WORKFLOWS / "gated.py", "--input", json.dumps(str(gate)), "--run-id", run_id,
        "--store", store, *flags,
    )  # fmt: skip
    end = time.monotonic() + 60
    while not (gate / "started").exists():  # bounded poll for the other process's step
        assert driver.poll() is None, driver.communicate()
        assert time.monotonic() < end
        time.sleep(0.01)
    return driver
