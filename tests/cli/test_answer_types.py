"""The installed ``wfctl``: typed answers, the message parameter's default, refused inputs."""

from __future__ import annotations

import shlex
import tomllib
from pathlib import Path

import pytest

from tests.cli.conftest import WORKFLOWS, run_id_of, wfctl

PURCHASE = WORKFLOWS / "purchase.py"
FLAKY = WORKFLOWS / "flaky.py"
TWO = WORKFLOWS / "two.py"


def _paused_purchase(store: Path) -> tuple[str, Path, bytes]:
    """Start a purchase (no input: the parameter's default); return run id, template, journal."""
    paused = wfctl("run", PURCHASE, "--store", store, "--json")
    assert paused.code == 3, paused.stderr
    doc = paused.json()
    assert {r["request_id"]: r["response_type"] for r in doc["requests"]} == {
        "approve": "bool",
        "qty": "int",
    }
    assert doc["requests"][0]["data"] == {"item": "laptop", "question": "approve?"}
    journal = store / "runs" / doc["run_id"] / "journal.jsonl"
    return doc["run_id"], Path(doc["answers_file"]), journal.read_bytes()


def _assert_still_paused(store: Path, run_id: str, answers: Path, journal: bytes) -> None:
    """Nothing was recorded: same journal bytes, the template is there, both requests pending."""
    assert (store / "runs" / run_id / "journal.jsonl").read_bytes() == journal
    assert answers.exists()
    [run] = wfctl("runs", "--store", store, "--json").json()["runs"]
    assert run["status"] == "paused" and sorted(run["pending_request_ids"]) == ["approve", "qty"]


@pytest.mark.parametrize(
    ("answers", "line"),
    [
        (
            ("approve=no", "qty=1"),
            "answer to 'approve' must be bool, got 'no' (expected true or false)",
        ),
        (
            ("approve=true", "qty=three"),
            "answer to 'qty' must be int, got 'three' (expected a whole number)",
        ),
    ],
)
def test_an_answer_of_the_wrong_type_is_refused_and_nothing_is_recorded(
    store: Path, answers: tuple[str, str], line: str
) -> None:
    run_id, template, journal = _paused_purchase(store)
    refused = wfctl("resume", run_id, "-r", answers[0], "-r", answers[1], "--store", store)
    assert refused.code == 2
    assert refused.error_line() == f"wfctl: error: {line}"
    assert refused.stdout == ""
    _assert_still_paused(store, run_id, template, journal)


def test_an_answers_file_is_checked_too(store: Path) -> None:
    run_id, answers, journal = _paused_purchase(store)
    text = answers.read_text(encoding="utf-8")
    assert "# approve (expects: bool)" in text and "# qty (expects: int)" in text
    answers.write_text(
        text.replace('approve = ""', 'approve = "no"').replace('qty = ""', "qty = 2"),
        encoding="utf-8",
    )
    refused = wfctl("resume", run_id, "--responses", answers, "--store", store)
    assert refused.code == 2 and "answer to 'approve' must be bool" in refused.error_line()
    _assert_still_paused(store, run_id, answers, journal)


def test_answers_are_converted_and_recorded_typed(store: Path, tmp_path: Path) -> None:
    run_id, _, _ = _paused_purchase(store)
    answers = tmp_path / "answers.toml"
    answers.write_text('approve = "TRUE"\nqty = "3"\n', encoding="utf-8")  # unambiguous text
    done = wfctl("resume", run_id, "--responses", answers, "--store", store, "--json")
    assert done.code == 0, done.stderr
    assert done.json()["outputs"] == [{"status": "ordered 3 x laptop"}]
    log = wfctl("log", run_id, "--store", store, "--json").json()
    [resume] = [c for c in log["checkpoints"] if c["kind"] == "resume"]
    shown = wfctl("show", resume["checkpoint_id"], "--store", store, "--json").json()["record"]
    assert shown["data"]["responses"] == {"approve": True, "qty": 3}


def test_false_rejects_the_purchase(store: Path) -> None:
    run_id, _, _ = _paused_purchase(store)
    done = wfctl("resume", run_id, "-r", "approve=false", "-r", "qty=1", "--store", store, "--json")
    assert done.code == 0, done.stderr
    assert done.json()["outputs"] == [{"status": "rejected", "item": "laptop"}]


def _no_run_stored(store: Path) -> None:
    runs = store / "runs"
    assert not runs.exists() or not any(runs.iterdir())


def test_a_workflow_without_default_and_without_input_is_refused(store: Path) -> None:
    refused = wfctl("run", FLAKY, "--store", store)
    assert refused.code == 2
    assert refused.error_line() == (
        "wfctl: error: workflow 'flaky' needs a message for its parameter 'directory', which "
        "has no default; pass one (CLI: --input JSON)"
    )
    _no_run_stored(store)


def test_an_input_for_a_workflow_that_takes_none_is_refused(store: Path) -> None:
    refused = wfctl("run", f"{TWO}:alpha", "--input", "5", "--store", store)
    assert refused.code == 2
    assert "workflow 'alpha' takes no message" in refused.error_line()
    _no_run_stored(store)
    done = wfctl("run", f"{TWO}:alpha", "--store", store, "--json")
    assert done.code == 0 and done.json()["outputs"] == [1]


def test_the_default_is_what_the_root_records(store: Path) -> None:
    run_id = run_id_of(wfctl("run", PURCHASE, "--store", store, "--json"))
    root = wfctl("show", f"{run_id}.0", "--store", store, "--json").json()["record"]
    assert root["data"]["input"] == "laptop"
    given = wfctl("run", PURCHASE, "--input", '"phone"', "--store", store, "--json").json()
    assert given["requests"][0]["data"]["item"] == "phone"


def test_the_answers_template_names_types_and_its_store(store: Path) -> None:
    run_id, answers, _ = _paused_purchase(store)
    text = answers.read_text(encoding="utf-8")
    assert tomllib.loads(text) == {"approve": "", "qty": ""}
    [command] = [line[4:] for line in text.splitlines() if line.startswith("#   wfctl resume")]
    assert command == f"wfctl resume {run_id} --store {store.absolute()} --responses {answers}"
    answers.write_text(text.replace('approve = ""', "approve = false"), encoding="utf-8")
    # The command the template prints works as printed (the unanswered qty stays pending).
    again = wfctl(*shlex.split(command)[1:], "--json")
    assert again.code == 3, again.stderr
    assert [r["request_id"] for r in again.json()["requests"]] == ["qty"]
