"""A command whose output's reader went away (``wfctl ... | head``) exits 141, quietly.

Before, rich and typer answered a closed pipe with exit 1, which wfctl's exit codes read as a
finding: ``wfctl verify-lineage | head`` said "lineage broken", ``wfctl run ... 2>&1 | head``
said "the run failed" of a run that completed, and a worker whose ``--json`` reader went away
lost its driving task with a traceback. Each process here starts with the reading end of its
pipe already closed, so its first write fails: no timing decides the outcome.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from tests.cli.conftest import WORKFLOWS, base_env, run_id_of, wfctl, wfctl_executable
from wfctl import FileCheckpointStorage
from wfctl._drive._submit import submit_workflow
from wfctl._drive._worker import WorkerEvent, run_worker
from wfctl._exit import EXIT_OUTPUT_CLOSED


@contextmanager
def _reader_gone() -> Iterator[int]:
    """Yield the writing end of a pipe whose reading end is already closed."""
    read, write = os.pipe()
    os.close(read)
    try:
        yield write
    finally:
        os.close(write)


def _closed_stdout(*args: str | Path) -> tuple[int, str]:
    """Run the installed wfctl with its stdout's reader gone; return its code and stderr."""
    with _reader_gone() as stdout:
        done = subprocess.run(
            [wfctl_executable(), *map(str, args)],
            env=base_env(),
            stdout=stdout,
            stderr=subprocess.PIPE,
            text=True,
            timeout=120,
            check=False,
        )
    return done.returncode, done.stderr


@pytest.fixture(scope="module")
def finished(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    """A store holding one completed run of 40 steps, and its id."""
    store = tmp_path_factory.mktemp("closed") / "store"
    done = wfctl("run", WORKFLOWS / "many.py", "--input", "40", "--store", store, "--json")
    assert done.code == 0, done.stderr
    return store, run_id_of(done)


@pytest.mark.parametrize(
    "command",
    [
        ["runs"],
        ["runs", "--json"],
        ["log", "{run}"],
        ["log", "{run}", "--json"],
        ["log", "{run}", "--follow", "--json"],
        ["show", "{run}.3"],
        ["export", "{run}"],
        ["export", "{run}", "--format", "toml"],
        ["verify-lineage"],
        ["verify-lineage", "--json"],
        ["--help"],
        ["runs", "--help"],
        ["version"],
    ],
    ids=" ".join,
)
def test_a_command_whose_reader_went_away_exits_141_and_says_nothing(
    command: list[str], finished: tuple[Path, str]
) -> None:
    store, run_id = finished
    args = [part.replace("{run}", run_id) for part in command]
    if "--help" not in args and args != ["version"]:
        args += ["--store", str(store)]
    code, stderr = _closed_stdout(*args)
    assert (code, stderr) == (EXIT_OUTPUT_CLOSED, "")


def test_a_run_is_not_called_failed_because_its_output_went_away(tmp_path: Path) -> None:
    """``wfctl run ... 2>&1 | head``: both streams gone; the run completes, exit 141 says so."""
    store = tmp_path / "store"
    with _reader_gone() as output:
        done = subprocess.run(
            [wfctl_executable(), "run", WORKFLOWS / "many.py", "--input", "20", "--store", store],
            env=base_env(),
            stdout=output,
            stderr=output,
            timeout=120,
            check=False,
        )
    assert done.returncode == EXIT_OUTPUT_CLOSED
    listed = wfctl("runs", "--store", store, "--json").json()
    assert [run["status"] for run in listed["runs"]] == ["completed"]


def test_a_broken_pipe_of_the_workflow_s_own_is_its_failure_not_a_closed_output(
    tmp_path: Path,
) -> None:
    """A step that writes to a pipe nobody reads fails the run (exit 1), output open."""
    workflow = tmp_path / "own_pipe.py"
    workflow.write_text(
        "import os\n"
        "from wfctl import step, workflow\n"
        "@step\n"
        "async def write_to_nobody() -> int:\n"
        "    read, write = os.pipe()\n"
        "    os.close(read)\n"
        "    try:\n"
        "        return os.write(write, b'lost')\n"
        "    finally:\n"
        "        os.close(write)\n"
        "@workflow(name='own_pipe')\n"
        "async def own_pipe() -> int:\n"
        "    return await write_to_nobody()\n",
        encoding="utf-8",
    )
    done = wfctl("run", workflow, "--store", tmp_path / "store", "--json")
    assert done.code == 1, done.stderr
    assert done.json()["status"] == "failed"
    assert "BrokenPipeError" in done.json()["error"]


def test_a_worker_whose_reader_went_away_hands_its_run_over(tmp_path: Path) -> None:
    """The worker stops as SIGTERM stops it: its run pauses for another worker, exit 141."""
    store = tmp_path / "store"
    run_ids = {
        submit_workflow(str(WORKFLOWS / "many.py"), store=store, input_json="30").run_id
        for _ in range(2)
    }
    code, stderr = _closed_stdout(
        "worker", "--store", store, "--workflows", WORKFLOWS, "--exit-when-idle", "--json"
    )
    assert (code, stderr) == (EXIT_OUTPUT_CLOSED, "")
    statuses = {
        run["run_id"]: run["status"]
        for run in wfctl("runs", "--store", store, "--json").json()["runs"]
    }
    # It took one run and handed it over at its first step; it took no other.
    assert sorted(statuses.values()) == ["interrupted", "queued"], statuses

    finish = wfctl("worker", "--store", store, "--workflows", WORKFLOWS, "--exit-when-idle")
    assert finish.code == 0, finish.stderr
    statuses = {
        run["run_id"]: run["status"]
        for run in wfctl("runs", "--store", store, "--json").json()["runs"]
    }
    assert statuses == dict.fromkeys(run_ids, "completed")
    assert wfctl("verify-lineage", "--store", store).code == 0


def test_a_worker_whose_stderr_reader_went_away_hands_its_run_over(tmp_path: Path) -> None:
    """Without --json a worker says what it does on stderr: the same stop when that closes."""
    store = tmp_path / "store"
    submit_workflow(str(WORKFLOWS / "many.py"), store=store, input_json="30")
    command = ["worker", "--store", store, "--workflows", WORKFLOWS, "--exit-when-idle"]
    with _reader_gone() as stderr:
        done = subprocess.run(
            [wfctl_executable(), *map(str, command)],
            env=base_env(),
            stdout=subprocess.PIPE,
            stderr=stderr,
            text=True,
            timeout=120,
            check=False,
        )
    assert (done.returncode, done.stdout) == (EXIT_OUTPUT_CLOSED, "")
    [run] = wfctl("runs", "--store", store, "--json").json()["runs"]
    assert run["status"] == "interrupted"  # handed over at its first step, for another worker


def test_run_worker_stops_and_raises_what_its_listener_raised(tmp_path: Path) -> None:
    """The library's contract under the CLI's: told nothing more, the runs paused, then raised."""
    store = tmp_path / "store"
    for _ in range(2):
        submit_workflow(str(WORKFLOWS / "many.py"), store=store, input_json="30")
    told: list[str] = []

    def listener(event: WorkerEvent) -> None:
        told.append(event.kind)
        raise RuntimeError("the listener's output is gone")

    with pytest.raises(RuntimeError, match="output is gone"):
        run_worker(store, workflows=[WORKFLOWS], exit_when_idle=True, on_event=listener)
    assert told == ["taken"]
    summaries = FileCheckpointStorage(store).run_summaries()
    assert sorted(summary.status for summary in summaries) == ["interrupted", "queued"]
