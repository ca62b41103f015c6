"""The warnings the engine logs for ported agent-framework programs stay out of the command's
stderr: a ``null`` answer to an ``Optional`` request is taken without a logged line."""

from __future__ import annotations

import json
from pathlib import Path

from tests.cli.conftest import run_id_of, wfctl

OPTIONAL = """\
from wfctl import RunContext, workflow


@workflow(name="note")
async def note(ctx: RunContext) -> str:
    value = await ctx.request_info("note?", response_type=str | None, request_id="note")
    return f"note={value}"
"""


def test_a_null_answer_resumes_without_a_logged_warning(tmp_path: Path) -> None:
    program = tmp_path / "note.py"
    program.write_text(OPTIONAL, encoding="utf-8")
    store = tmp_path / "store"
    paused = wfctl("run", f"{program}:note", "--store", store, "--json")
    assert paused.code == 3, paused.stderr
    answers = tmp_path / "answers.json"
    answers.write_text(json.dumps({"note": None}), encoding="utf-8")
    done = wfctl("resume", run_id_of(paused), "--responses", answers, "--store", store, "--json")
    assert done.code == 0, done.stderr
    assert done.json()["outputs"] == ["note=None"]
    assert done.stderr == "", done.stderr
