"""Control characters in a paused run's requests, through the installed ``wfctl``: the answers
template shows them as escapes (as the terminal does), so it stays valid TOML -- a comment holds
no control character but tab -- and a line break in a request id cannot end its comment.
"""

from __future__ import annotations

import tomllib
from pathlib import Path

from tests.cli.conftest import wfctl

KEY = 'ask\x1b[2J\x7f\nfake = "answer"'  # ESC, DEL, and a line that would be a TOML key
DATA = "del\x7f esc\x1b c1\x9b bidi\u202e"


def test_controls_in_request_data_and_ids_are_shown_as_escapes(store: Path, tmp_path: Path) -> None:
    flow = tmp_path / "controls.py"
    flow.write_text(
        "from wfctl import RunContext, workflow\n\n"
        "@workflow(name='controls')\n"
        "async def controls(ctx: RunContext) -> str:\n"
        f"    answer = await ctx.request_info({{'q': {DATA!r}}}, str, request_id={KEY!r})\n"
        "    return str(answer)\n",
        encoding="utf-8",
    )
    paused = wfctl("run", flow, "--run-id", "ctl", "--store", store, "--json")
    assert paused.code == 3, paused.stderr
    answers = Path(paused.json()["answers_file"])
    text = answers.read_text(encoding="utf-8")
    for raw in ("\x1b", "\x7f", "\x9b", "\u202e"):
        assert raw not in text
    assert '# ask\\x1b[2J\\x7f\n# fake = "answer" (expects: str)\n' in text
    assert '#     "q": "del\\x7f esc\\u001b c1\\x9b bidi\\u202e"' in text  # \u001b: JSON's escape
    assert tomllib.loads(text) == {KEY: ""}

    answered = text.replace(' = ""', ' = "yes"')
    assert answered.count('= "yes"') == 1
    answers.write_text(answered, encoding="utf-8")
    done = wfctl("resume", "ctl", "--responses", answers, "--store", store, "--json")
    assert done.code == 0, done.stderr
    assert done.json()["outputs"] == ["yes"]
