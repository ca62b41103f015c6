"""Text no UTF-8 can hold (a lone surrogate), through the installed ``wfctl``.

In a paused run's requests: the pause is reported as any other (exit 3, the requests, the
resume command) and its answers template is valid TOML showing the text as its JSON escape,
answerable as it stands. In a record shown as TOML, which cannot hold it: refused with one
line, as ``export --format toml`` refuses the run, and nothing written.
"""

from __future__ import annotations

import json
import tomllib
from pathlib import Path

from tests.cli.conftest import SAMPLES, WORKFLOWS, wfctl

HUMAN_REVIEW = SAMPLES / "human_review.py"
VALUES = WORKFLOWS / "values.py"
LONE = '"\\ud800"'  # --input: a JSON string holding a lone surrogate


def _template(path: Path) -> str:
    """The answers template as written: UTF-8 (strictly) and valid TOML."""
    text = path.read_bytes().decode("utf-8")
    tomllib.loads(text)
    return text


def test_a_pause_on_a_lone_surrogate_is_reported_and_answered_from_its_template(
    store: Path,
) -> None:
    paused = wfctl(
        "run", HUMAN_REVIEW, "--input", LONE, "--run-id", "lone", "--store", store, "--json"
    )
    assert paused.code == 3, paused.stderr
    assert "error" not in paused.stderr
    doc = paused.json()
    assert doc["status"] == "paused"
    assert doc["requests"][0]["request_id"] == "request#0"
    assert doc["requests"][0]["data"]["draft"].startswith("\ud800. Why \ud800 matter")
    answers = Path(doc["answers_file"])
    assert doc["resume_command"].endswith(f"--responses {answers}")
    text = _template(answers)
    assert '#     "draft": "\\ud800. Why \\ud800 matter' in text  # the data's JSON, escaped
    assert tomllib.loads(text) == {"request#0": ""}

    answers.write_text(text.replace('"request#0" = ""', '"request#0" = "yes"'), encoding="utf-8")
    done = wfctl("resume", "lone", "--responses", answers, "--store", store, "--json")
    assert done.code == 0, done.stderr
    assert done.json()["outputs"][0]["title"] == "\ud800"
    assert done.json()["outputs"][0]["status"] == "published"


def test_a_pause_on_a_lone_surrogate_for_people(store: Path) -> None:
    paused = wfctl("run", HUMAN_REVIEW, "--input", LONE, "--run-id", "lone", "--store", store)
    assert paused.code == 3, paused.stderr
    assert "error" not in paused.stderr
    assert "run lone (human_review) is waiting for 1 answer(s)" in paused.stdout
    assert '"draft": "\\ud800.' in paused.stdout
    template = store.absolute() / "runs" / "lone" / "answers.toml"
    assert f"answers template: {template}" in paused.stdout
    assert f"--responses {template}" in paused.stdout
    assert tomllib.loads(_template(template)) == {"request#0": ""}


def test_a_request_id_toml_cannot_hold_is_left_to_a_json_answers_file(
    store: Path, tmp_path: Path
) -> None:
    flow = tmp_path / "odd_id.py"
    flow.write_text(
        "from wfctl import RunContext, workflow\n\n"
        "@workflow(name='odd_id')\n"
        "async def odd_id(ctx: RunContext) -> str:\n"
        "    answer = await ctx.request_info('ok?', str, request_id='ask\\ud800')\n"
        "    return str(answer)\n",
        encoding="utf-8",
    )
    paused = wfctl("run", flow, "--run-id", "odd", "--store", store, "--json")
    assert paused.code == 3, paused.stderr
    assert [r["request_id"] for r in paused.json()["requests"]] == ["ask\ud800"]
    text = _template(Path(paused.json()["answers_file"]))
    assert "# ask\\ud800 (expects: str)" in text
    assert "# TOML cannot hold this id: answer it in a .json answers file" in text
    assert tomllib.loads(text) == {}

    answers = tmp_path / "answers.json"
    answers.write_text(json.dumps({"ask\ud800": "yes"}), encoding="utf-8")
    done = wfctl("resume", "odd", "--responses", answers, "--store", store, "--json")
    assert done.code == 0, done.stderr
    assert done.json()["outputs"] == ["yes"]


def test_show_toml_refuses_a_lone_surrogate_as_export_does(store: Path) -> None:
    paused = wfctl("run", HUMAN_REVIEW, "--input", LONE, "--run-id", "lone", "--store", store)
    assert paused.code == 3, paused.stderr
    exported = wfctl("export", "lone", "--format", "toml", "--store", store)
    assert exported.code == 2 and exported.stdout == ""
    assert exported.error_line() == (
        "wfctl: error: run lone holds text TOML cannot hold ('\\ud800', a lone surrogate): "
        "export it as JSON (--format json)"
    )

    shown = wfctl("show", "lone.0", "--toml", "--store", store)  # the root: the input
    assert shown.code == 2 and shown.stdout == ""
    assert shown.error_line() == (
        "wfctl: error: checkpoint lone.0 holds text TOML cannot hold ('\\ud800', a lone "
        "surrogate): show it as JSON (--json)"
    )
    as_json = wfctl("show", "lone.0", "--json", "--store", store)
    assert as_json.code == 0 and as_json.json()["record"]["data"]["input"] == "\ud800"


def test_show_toml_refuses_values_nested_deeper_than_it_writes(store: Path) -> None:
    done = wfctl("run", VALUES, "--run-id", "values", "--store", store)
    assert done.code == 0, done.stderr
    deep = wfctl("show", "values.17", "--toml", "--store", store)  # give#16: nested 300 deep
    assert deep.code == 2 and deep.stdout == ""
    assert deep.error_line() == (
        "wfctl: error: checkpoint values.17 holds values nested deeper than wfctl can write as "
        "TOML (more than 100 levels of tables and arrays): show it as JSON (--json)"
    )  # a depth wfctl counts, the same on every Python (tests/inspect/test_toml_rule.py)
    shown = wfctl("show", "values.1", "--toml", "--store", store)  # give#0: 0.1
    assert shown.code == 0, shown.stderr
    assert tomllib.loads(shown.stdout)["id"] == "values.1"
