"""Escape sequences stored in a store never reach the terminal raw.

A store is data from anyone. Its workflow name, step keys, request ids and data, answers,
results and error text here all carry ``ESC ] 0 ; ... BEL`` (set the window title), ``ESC [ 2 J``
(clear the screen), ``ESC [ 8 m`` (hide text), a carriage return, a C1 ``CSI``, a
right-to-left override and rich markup (``[blink]``, shown as text). ``runs``, ``log``, ``show`` and ``verify-lineage`` run in the installed
``wfctl`` under a pseudo-terminal (so rich believes it draws on a terminal, and colours), and
the one-line error of a refused ``resume`` names a stored key. What reaches the terminal may
hold rich's own colour sequences (``ESC [ ... m``) and nothing else; each stored sequence shows
as text (``\\x1b]0;``). ``--json`` keeps the exact strings (JSON escapes them).
"""

from __future__ import annotations

import asyncio
import json
import os
import pty
import re
from pathlib import Path
from typing import Any

import pytest

from tests.cli.conftest import wfctl_executable
from tests.conftest import failure_of
from wfctl import FileCheckpointStorage, RunContext, step, workflow

pytestmark = pytest.mark.skipif(os.name != "posix", reason="a POSIX pseudo-terminal")

EVIL = "\x1b]0;PWNED\x07\x1b[2J\x1b[8m\r\x9b31m\u202e[blink]"
SHOWN = "\\x1b]0;PWNED\\x07\\x1b[2J\\x1b[8m\\x0d\\x9b31m\\u202e[blink]"  # markup stays text
RICH_STYLE = re.compile(rb"\x1b\[[0-9;]*m")  # what rich itself writes: colours, bold, dim


@step
async def fetch(text: str) -> str:
    return "result" + EVIL


@workflow(name="wf" + EVIL)
async def crafted(text: str, ctx: RunContext) -> Any:
    await fetch.keyed("key" + EVIL)(text)
    answer = await ctx.request_info({"question": "data" + EVIL}, str, request_id="ask" + EVIL)
    raise RuntimeError(f"error{EVIL} after {answer}")


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A store with a paused run (``waiting``) and a failed one (``broken``), escapes everywhere."""
    root = tmp_path_factory.mktemp("escapes") / "store"
    storage = FileCheckpointStorage(root)
    bound = crafted.build(checkpoint_storage=storage)
    for run_id in ("waiting", "broken"):
        paused = asyncio.run(bound.run("input" + EVIL, run_id=run_id))
        assert paused.status == "paused"
    with pytest.raises(RuntimeError, match="after answer") as caught:
        asyncio.run(bound.resume("broken", responses={"ask" + EVIL: "answer" + EVIL}))
    assert failure_of(caught).run_id == "broken"
    storage.close()
    return root


def _on_a_terminal(*args: str) -> tuple[int, bytes]:
    """Run the installed ``wfctl`` with stdout and stderr on a pseudo-terminal."""
    pid, fd = pty.fork()
    if pid == 0:  # the child: exec, or leave at once whatever happens
        try:
            env = {k: v for k, v in os.environ.items() if k not in ("NO_COLOR", "WFCTL_STORE")}
            env.update({"TERM": "xterm-256color", "COLUMNS": "400", "FORCE_COLOR": "1"})
            os.execve(wfctl_executable(), [wfctl_executable(), *args], env)
        finally:
            os._exit(127)
    chunks = []
    while True:
        try:
            chunk = os.read(fd, 65536)
        except OSError:  # EIO: the child closed the terminal
            break
        if not chunk:
            break
        chunks.append(chunk)
    os.close(fd)
    _, status = os.waitpid(pid, 0)
    return os.waitstatus_to_exitcode(status), b"".join(chunks)


def _assert_shown_not_obeyed(output: bytes) -> None:
    assert RICH_STYLE.search(output), "rich drew no colour: not a terminal?"
    rest = RICH_STYLE.sub(b"", output)
    assert b"\x1b" not in rest, rest  # no escape sequence but rich's colours
    assert b"\x07" not in rest and "\x9b".encode() not in rest
    assert "\u202e".encode() not in rest
    assert SHOWN.encode() in rest.replace(b"\r\n", b"\n"), rest


READERS = {
    "runs": ["runs"],
    "log-paused": ["log", "waiting"],
    "log-failed": ["log", "broken"],
    "show-root": ["show", "broken.0"],
    "show-step": ["show", "broken.1"],
    "show-pause": ["show", "broken.2"],
    "show-failed": ["show", "broken.4"],
    "verify-lineage": ["verify-lineage"],
}


@pytest.mark.parametrize("name", READERS)
def test_a_reader_shows_stored_escapes_as_text(store: Path, name: str) -> None:
    code, output = _on_a_terminal(*READERS[name], "--store", str(store))
    assert code == 0, output
    _assert_shown_not_obeyed(output)


def test_the_log_shows_every_stored_field(store: Path) -> None:
    _, output = _on_a_terminal("log", "broken", "--store", str(store))
    text = RICH_STYLE.sub(b"", output).decode()
    for field in ("wf", "key", "ask", "error", "answer"):
        assert f"{field}{SHOWN}" in text, field


def test_an_error_line_naming_a_stored_key_is_shown_not_obeyed(store: Path) -> None:
    code, output = _on_a_terminal("resume", "waiting", "--response", "x=1", "--store", str(store))
    assert code == 2, output
    assert output.count(b"wfctl: error:") == 1
    # (stderr also had the live progress on it, cursor movement included: look for ours)
    for sequence in (b"\x1b]0;", b"\x1b[2J", b"\x1b[8m", b"\x07", "\x9b".encode()):
        assert sequence not in output, output
    assert f"ask{SHOWN}".encode() in output, output


def test_json_keeps_the_exact_strings(store: Path) -> None:
    code, output = _on_a_terminal("show", "broken.1", "--json", "--store", str(store))
    assert code == 0, output
    assert b"\x1b" not in output  # JSON writes \u001b
    document = json.loads(output.replace(b"\r\n", b"\n"))
    assert document["record"]["wf"] == "wf" + EVIL
