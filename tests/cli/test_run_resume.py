"""``wfctl run`` and ``wfctl resume``: outputs, pauses with an answers template, retries."""

from __future__ import annotations

import shlex
import tomllib
from pathlib import Path

from tests.cli.conftest import WORKFLOWS, Invocation, failed_long_run, invoke, run_id_of, wfctl
from tests.conftest import traced_peak

GREET = WORKFLOWS / "greet.py"
REVIEW = WORKFLOWS / "review.py"
FLAKY = WORKFLOWS / "flaky.py"


def test_run_completes_and_prints_outputs_as_json(store: Path) -> None:
    done = wfctl("run", f"{GREET}:greet", "--input", '"ada"', "--store", store, "--json")
    assert done.code == 0, done.stderr
    doc = done.json()
    assert doc["status"] == "completed"
    assert doc["workflow"] == "greet"
    assert doc["outputs"] == ["hello ADA", {"greeted": "ADA", "length": 3}]
    assert doc["requests"] == [] and doc["resume_command"] is None
    assert doc["step_counts"] == {"executed": 1, "cached": 0, "changed": 0}
    assert doc["head_checkpoint_id"].startswith(doc["run_id"] + ".")
    assert Path(doc["store"]) == store.absolute()


def test_run_prints_outputs_for_people(store: Path) -> None:
    done = wfctl("run", GREET, "--store", store)  # a file holding exactly one workflow
    assert done.code == 0, done.stderr
    assert "hello WORLD" in done.stdout
    assert '"greeted": "WORLD"' in done.stdout
    assert "completed" in done.stderr and "1 executed" in done.stderr


def test_run_records_a_target_that_resolves_from_anywhere(store: Path, tmp_path: Path) -> None:
    done = invoke("run", GREET, "--store", store, "--json", "--run-id", "r1")
    assert done.code == 0, done.stderr
    shown = invoke("show", "r1.0", "--store", store, "--json").json()["record"]
    assert shown["data"]["target"] == f"{GREET}:greet"
    assert shown["data"]["workflow"].endswith(":greet")


def test_run_with_input_file_and_fixed_run_id(store: Path, tmp_path: Path) -> None:
    toml_input = tmp_path / "input.toml"
    toml_input.write_text('name = "x"\n', encoding="utf-8")
    json_input = tmp_path / "input.json"
    json_input.write_text('"grace"', encoding="utf-8")
    done = invoke(
        "run", GREET, "--input-file", json_input, "--run-id", "mine", "--store", store, "--json"
    )
    assert done.code == 0 and done.json()["run_id"] == "mine"
    assert done.json()["outputs"][0] == "hello GRACE"
    again = invoke("run", GREET, "--run-id", "mine", "--store", store)
    assert again.code == 2 and "exists already" in again.error_line()
    both = invoke("run", GREET, "--input", "1", "--input-file", json_input, "--store", store)
    assert both.code == 2 and "not both" in both.error_line()
    bad = invoke("run", GREET, "--input", "{nope", "--store", store)
    assert bad.code == 2 and "not valid JSON" in bad.error_line()
    missing = invoke("run", GREET, "--input-file", tmp_path / "none.json", "--store", store)
    assert missing.code == 2 and "cannot read input file" in missing.error_line()


def test_pause_writes_answers_template_then_resume_with_it(store: Path) -> None:
    paused = wfctl("run", REVIEW, "--store", store, "--json")
    assert paused.code == 3, paused.stderr
    doc = paused.json()
    run_id = doc["run_id"]
    assert doc["status"] == "paused"
    keys = {r["request_id"]: r for r in doc["requests"]}
    assert set(keys) == {"0/request#0", "1/request#0"}
    assert keys["0/request#0"]["response_type"] == "str"
    assert keys["1/request#0"]["data"]["question"] == "score 1-5?"
    answers = Path(doc["answers_file"])
    assert answers == store.absolute() / "runs" / run_id / "answers.toml"
    text = answers.read_text(encoding="utf-8")
    assert "# 0/request#0 (expects: str)" in text and '"question": "publish?"' in text
    assert tomllib.loads(text) == {"0/request#0": "", "1/request#0": ""}
    assert (
        doc["resume_command"]
        == f"wfctl resume {run_id} --store {store.absolute()} --responses {answers}"
    )

    # An untouched template answers nothing: the run stays paused, exit 2.
    untouched = wfctl("resume", run_id, "--responses", answers, "--store", store)
    assert untouched.code == 2
    assert "paused waiting for answers" in untouched.error_line()

    answers.write_text(
        text.replace('"0/request#0" = ""', '"0/request#0" = "yes"').replace(
            '"1/request#0" = ""', '"1/request#0" = 4'
        ),
        encoding="utf-8",
    )
    done = wfctl("resume", run_id, "--responses", answers, "--store", store, "--json")
    assert done.code == 0, done.stderr
    assert done.json()["outputs"] == [{"verdict": "yes", "score": 4}]
    assert done.json()["run_id"] == run_id
    assert not answers.exists()  # the template of an answered pause is removed


def test_pause_for_people_lists_requests_and_resume_commands(store: Path) -> None:
    paused = wfctl("run", REVIEW, "--store", store)
    assert paused.code == 3
    out = paused.stdout
    assert "waiting for 2 answer(s)" in out
    assert "0/request#0" in out and "1/request#0" in out and "publish?" in out
    assert "answers template:" in out
    assert "wfctl resume " in out and "--responses" in out
    assert "--response '0/request#0=...'" in out
    run_id = out.split("run ", 1)[1].split()[0]
    done = wfctl("resume", run_id, "-r", "0/request#0=yes", "-r", "1/request#0=5", "--store", store)
    assert done.code == 0, done.stderr
    assert '"verdict": "yes"' in done.stdout and '"score": 5' in done.stdout
    assert f"run {run_id} (review) completed" in done.stderr and "1 cached" in done.stderr


def test_partial_answers_pause_again_with_the_rest(store: Path) -> None:
    run_id = run_id_of(invoke("run", REVIEW, "--store", store, "--json"))
    again = invoke("resume", run_id, "--response", "1/request#0=5", "--store", store, "--json")
    assert again.code == 3
    assert [r["request_id"] for r in again.json()["requests"]] == ["0/request#0"]
    done = invoke("resume", run_id, "-r", "0/request#0=42", "--store", store, "--json")
    assert done.code == 0
    # The str request keeps the raw text; the int one was parsed as JSON.
    assert done.json()["outputs"] == [{"verdict": "42", "score": 5}]


def test_resume_rejects_unknown_keys_and_bad_pairs(store: Path) -> None:
    run_id = run_id_of(invoke("run", REVIEW, "--store", store, "--json"))
    unknown = wfctl("resume", run_id, "--response", "nope=1", "--store", store)
    assert unknown.code == 2
    line = unknown.error_line()
    assert "'nope'" in line and "0/request#0" in line and "1/request#0" in line
    bad = invoke("resume", run_id, "--response", "novalue", "--store", store)
    assert bad.code == 2 and "KEY=VALUE" in bad.error_line()


def test_resume_refuses_a_request_answered_twice(store: Path, tmp_path: Path) -> None:
    run_id = run_id_of(invoke("run", REVIEW, "--store", store, "--json"))
    both = ("-r", "1/request#0=5", "--store", store, "--json")
    twice = wfctl("resume", run_id, "-r", "0/request#0=yes", "--response", "0/request#0=no", *both)
    assert twice.code == 2 and twice.stdout == ""
    assert "request '0/request#0' is answered twice (--response)" in twice.error_line()

    answers = tmp_path / "answers.toml"
    answers.write_text('"0/request#0" = "yes"\n"1/request#0" = ""\n', encoding="utf-8")
    overridden = wfctl("resume", run_id, "--responses", answers, "-r", "0/request#0=no", *both)
    assert overridden.code == 2 and overridden.stdout == ""
    assert (
        f"request '0/request#0' is answered twice (--responses '{answers}' and --response)"
        in overridden.error_line()
    )

    # Nothing was recorded: both requests still wait, and the file's "" leaves one to -r.
    done = wfctl("resume", run_id, "--responses", answers, *both)
    assert done.code == 0, done.stderr
    assert done.json()["outputs"] == [{"verdict": "yes", "score": 5}]


def test_resume_with_json_answers_file(store: Path, tmp_path: Path) -> None:
    run_id = run_id_of(invoke("run", REVIEW, "--store", store, "--json"))
    answers = tmp_path / "answers.json"
    answers.write_text('{"0/request#0": "no", "1/request#0": 1}', encoding="utf-8")
    done = invoke("resume", run_id, "--responses", answers, "--store", store, "--json")
    assert done.code == 0 and done.json()["outputs"] == [{"verdict": "no", "score": 1}]
    broken = tmp_path / "broken.toml"
    broken.write_text("= nope", encoding="utf-8")
    other = run_id_of(invoke("run", REVIEW, "--store", store, "--json"))
    failed = invoke("resume", other, "--responses", broken, "--store", store)
    assert failed.code == 2 and "not valid TOML" in failed.error_line()


def test_failed_run_exits_1_then_retry_continues_the_chain(store: Path, tmp_path: Path) -> None:
    directory = tmp_path / "flaky"
    directory.mkdir()
    failed = wfctl("run", FLAKY, "--input", f'"{directory}"', "--store", store, "--json")
    assert failed.code == 1
    doc = failed.json()
    assert doc["status"] == "failed"
    assert doc["error"] == "RuntimeError: the fix is not in yet"
    assert "the fix is not in yet" in failed.stderr and "Traceback" not in failed.stderr
    people = wfctl("run", FLAKY, "--input", f'"{directory}"', "--store", store)
    assert people.code == 1 and "failed: RuntimeError: the fix is not in yet" in people.stderr

    assert "It failed in step second#0" in people.stderr
    assert doc["failed_step_key"] == "second#0"
    failed_record = invoke("show", f"{doc['run_id']}.2", "--store", store, "--json").json()[
        "record"
    ]
    assert failed_record["kind"] == "failed" and failed_record["data"]["step"] == "second#0"

    (directory / "fixed").write_text("", encoding="utf-8")
    # A step failed: the first hint is a plain retry, and it works as printed.
    retry = doc["hints"][0]["command"]
    assert retry == doc["resume_command"] == f"wfctl resume {doc['run_id']} --store {store}"
    retried = wfctl(*shlex.split(retry)[1:], "--json")
    assert retried.code == 0, retried.stderr
    assert retried.json()["outputs"] == [["first in flaky", "second ok"]]
    assert retried.json()["step_counts"] == {"executed": 1, "cached": 1, "changed": 0}
    log = invoke("log", doc["run_id"], "--store", store, "--json").json()
    kinds = [c["kind"] for c in log["checkpoints"]]
    assert kinds == ["root", "step", "failed", "resume", "step", "completed"]


def test_resume_refuses_completed_and_unknown_runs(store: Path) -> None:
    run_id = run_id_of(invoke("run", GREET, "--store", store, "--json"))
    done = wfctl("resume", run_id, "--store", store)
    assert done.code == 2
    assert "has completed" in done.error_line() and f"--checkpoint {run_id}." in done.stderr
    missing = wfctl("resume", "no-such-run", "--store", store)
    assert missing.code == 2 and "run 'no-such-run' not found" in missing.error_line()


def test_resume_with_target_override(store: Path, tmp_path: Path) -> None:
    run_id = run_id_of(invoke("run", REVIEW, "--store", store, "--json"))
    journal = store / "runs" / run_id / "journal.jsonl"
    assert journal.exists()
    wrong = invoke(
        "resume", run_id, "-r", "0/request#0=y", "--target", f"{GREET}:greet", "--store", store
    )
    assert wrong.code == 2 and "belongs to workflow 'review'" in wrong.error_line()
    right = invoke(
        "resume", run_id, "-r", "0/request#0=y", "-r", "1/request#0=2",
        "--target", str(REVIEW), "--store", store, "--json",
    )  # fmt: skip
    assert right.code == 0, right.stderr


def test_store_from_environment_and_config(workdir: Path) -> None:
    env_store = workdir / "from-env"
    done = invoke("run", GREET, "--json", env={"WFCTL_STORE": str(env_store)})
    assert done.code == 0 and Path(done.json()["store"]) == env_store
    assert (env_store / "runs" / done.json()["run_id"]).is_dir()
    # The resume command needs no --store when the environment already selects it.
    (workdir / "wfctl.toml").write_text('store = "configured"\n', encoding="utf-8")
    paused = invoke("run", REVIEW, "--json")
    assert paused.code == 3
    assert Path(paused.json()["store"]) == workdir / "configured"
    assert "--store" not in paused.json()["resume_command"]
    listed = invoke("runs", "--json").json()
    assert [r["workflow"] for r in listed["runs"]] == ["review"]


def _resume_peak(tmp_path: Path, steps: int) -> int:
    """Fail a run of ``steps`` cached steps, fix it, and return the peak of its resume."""
    store, directory = failed_long_run(tmp_path, steps)
    (directory / "fixed").touch()
    outcomes: list[Invocation] = []
    peak = traced_peak(lambda: outcomes.append(invoke("resume", "r", "--store", store)))
    assert outcomes[0].code == 0, outcomes[0].stderr
    assert f"{steps} cached" in outcomes[0].stderr
    return peak


def test_resume_holds_no_step_checkpoint_of_the_run(tmp_path: Path) -> None:
    # ``wfctl resume`` read the run whole to find its root, pauses and head, and held it to the
    # end of the resume, beside the records it served unpacked: 2.0 KB per cached step of this
    # run. It now keeps only those records, and the resume folds the steps, packed, as it reads
    # them: 0.7 KB (deterministic: tracemalloc counts bytes). Bound: 0.9 KB.
    small, large = _resume_peak(tmp_path, 500), _resume_peak(tmp_path, 3_000)
    assert (large - small) / 2_500 < 900, (small, large)
