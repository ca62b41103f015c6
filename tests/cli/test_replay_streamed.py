"""``wfctl replay`` writes its step table and ``--json`` rows as they are compared.

Through the installed ``wfctl``: the streamed output says what the library's whole report says,
the verdict and the counts come after the rows, and a table past one page keeps its columns.
The rows of the records the replay was served come while it runs:
``tests/inspect/test_replay_live_rows.py``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tests.cli.conftest import wfctl
from tests.conftest import arun
from tests.harness.hostile_cases import edit_record
from wfctl import FileCheckpointStorage
from wfctl._drive._loader import load_workflow
from wfctl._inspect._replay import replay

FLOW = """\
from wfctl import step, workflow


@step
async def produce(i: int) -> str:
    return f"v{i}" * (i % 4)


@step
async def total(values: list[str]) -> int:
    return sum(map(len, values))


@workflow(name="streamed")
async def streamed(n: int) -> int:
    return await total([await produce(i) for i in range(n)])
"""


def _run(tmp_path: Path, steps: int) -> tuple[Path, Path]:
    """Write the workflow and run it into a store: ``steps`` steps, then their total."""
    code, store = tmp_path / "streamed_flow.py", tmp_path / "store"
    code.write_text(FLOW, encoding="utf-8")
    done = wfctl(
        "run", f"{code}:streamed", "--input", str(steps), "--run-id", "src",
        "--durability", "none", "--store", store,
    )  # fmt: skip
    assert done.code == 0, done.stderr
    return code, store


def _without_run_ids(document: dict[str, Any]) -> dict[str, Any]:
    ignored = ("replay_run_id", "replay_head_checkpoint_id", "target", "target_recorded")
    return {key: value for key, value in document.items() if key not in ignored}


def test_a_replay_says_what_the_library_s_report_says(tmp_path: Path) -> None:
    code, store = _run(tmp_path, 5)

    done = wfctl("replay", "-c", "src.3", "--store", store, "--json")
    table = wfctl("replay", "-c", "src.3", "--store", store)

    assert done.code == 0 and table.code == 0, done.stderr + table.stderr
    document = done.json()
    # The rows come right after the checkpoint's ids (some are written while the replay
    # runs), then everything the replay decided, and what sums the rows up last.
    assert list(document)[:4] == ["schema", "source_run_id", "source_checkpoint_id", "steps"]
    assert list(document)[-2:] == ["step_counts", "identical"]
    workflow = load_workflow(f"{code}:streamed")
    storage = FileCheckpointStorage(store)
    whole = arun(replay(workflow.build(checkpoint_storage=storage), "src.3"))
    assert _without_run_ids(document) == _without_run_ids(whole.to_json())
    assert [row["status"] for row in document["steps"]] == ["cached"] * 3 + ["same"] * 3
    lines = table.stdout.splitlines()
    rows = [line.split("│")[1:3] for line in lines if "produce#" in line or "total#" in line]
    assert [(key.strip(), status.strip()) for key, status in rows] == [
        (row["key"], row["status"]) for row in document["steps"]
    ]
    assert (
        lines[0].strip() == "steps" and rows
    )  # the table first: its rows come as they are decided
    counts = lines.index("3 cached, 3 same, 0 changed, 0 new, 0 not reached, 0 failed")
    said = lines[counts + 1]  # then what the replay did, its outputs, and the verdict last
    assert said.startswith("replay ") and said.endswith(
        "of src.3 (source run src, completed): completed"
    )
    assert lines[-1] == f"replay {said.split()[1]}: identical"  # its own replay's verdict


def test_a_table_past_a_page_keeps_its_columns(tmp_path: Path) -> None:
    _, store = _run(tmp_path, 1_500)

    table = wfctl("replay", "-c", "src.900", "--store", store, env={"COLUMNS": "90"})

    assert table.code == 0, table.stderr
    lines = table.stdout.splitlines()
    header = [i for i, line in enumerate(lines) if line.startswith("┃ key")]
    assert len(header) == 1  # one header, the pages after the first go on below it
    bottom = next(i for i, line in enumerate(lines) if line.startswith("└") and i > header[0])
    body = lines[header[0] + 2 : bottom]
    keys = [line.split("│")[1].strip() for line in body if line.split("│")[1].strip()]
    assert keys == [f"produce#{i}" for i in range(1_500)] + ["total#0"]
    assert {len(line) for line in body} == {len(lines[header[0]])}  # every row as wide
    assert lines[bottom + 1] == "900 cached, 601 same, 0 changed, 0 new, 0 not reached, 0 failed"
    assert lines[bottom + 2].endswith("of src.900 (source run src, completed): completed")
    assert lines[-1].endswith(": identical")


def test_a_record_found_broken_while_the_replay_runs_refuses_it_in_one_line(
    tmp_path: Path,
) -> None:
    # A plain run's records are read as the replay is served: one whose checksum holds and
    # whose timing is not a number is found after the first rows came. The replay is refused
    # as before it started (exit 2, one line), and its run is withdrawn.
    _, store = _run(tmp_path, 1_200)
    journal = store / "runs" / "src" / "journal.jsonl"
    lines = journal.read_bytes().split(b"\n")
    lines[1100] = edit_record(lines[1100], lambda raw: raw["data"]["steps"][0].update(dt="x"))
    journal.write_bytes(b"\n".join(lines))

    for output in ((), ("--json",)):
        done = wfctl("replay", "-c", "src.1201", "--store", store, *output)

        assert done.code == 2, (done.code, done.stderr)
        error = done.stderr.strip().splitlines()
        assert len(error) == 1 and error[0].startswith("wfctl: error:"), done.stderr
        assert "src.1100" in error[0] and "invalid timing" in error[0]
        assert "Traceback" not in done.stdout + done.stderr
        runs = wfctl("runs", "--json", "--store", store)
        assert [run["run_id"] for run in json.loads(runs.stdout)["runs"]] == ["src"]
