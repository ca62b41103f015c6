"""agent-framework ``Message`` objects given to a workflow's agent, across processes: one process
runs the agent with a list of messages and the run pauses; ``wfctl resume`` (another process,
the installed executable) replays them and the step's ``Message`` result from the store; ``log
-v``, ``show`` and ``export`` show their data as plain JSON, nothing pickled."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from tests.cli.conftest import WORKFLOWS, base_env, wfctl
from tests.cli.test_json_documents import _check  # each document against its schema

CHAT = WORKFLOWS / "agent_messages.py"

#: Runs the agent the way a chat program does, in a process of its own.
START = (
    "import asyncio, sys\n"
    "sys.path.insert(0, sys.argv[1])\n"
    "import agent_messages\n"
    "asyncio.run(agent_messages.start(sys.argv[2], sys.argv[3]))\n"
)


def test_messages_given_to_the_agent_are_replayed_by_a_resume_in_another_process(
    store: Path,
) -> None:
    started = subprocess.run(
        [sys.executable, "-c", START, str(WORKFLOWS), str(store), "chat-1"],
        env=base_env(),
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert started.returncode == 0, started.stderr
    assert started.stdout.split("\n")[0] == "['send'] function_approval_request"

    target = f"{CHAT}:chat"
    resumed = wfctl(
        "resume", "chat-1", "--target", target, "-r", "send=yes", "--store", store, "--json"
    )
    assert resumed.code == 0, resumed.stderr
    done = resumed.json()
    assert done["outputs"] == ["heard: hello / world (yes; 2 messages, first by user)"]
    assert done["step_counts"]["cached"] == 1  # the step's Message, read back, not run again

    log = wfctl("log", "chat-1", "-v", "--store", store)
    assert log.code == 0, log.stderr
    assert 'input: [{"type": "message", "role": "user", "contents": [{"type": "text", "text": ' in (
        log.stdout
    )
    assert 'args: ([{"type": "message", "role": "user"' in log.stdout
    assert 'result: {"type": "message", "role": "assistant"' in log.stdout
    assert "$t" not in log.stdout

    shown = wfctl("show", "chat-1.0", "--store", store, "--json")
    assert shown.code == 0, shown.stderr
    _check(shown.json(), "show")
    first = shown.json()["record"]["data"]["input"][0]
    assert (first["$t"], first["n"]) == ("object", "agent_framework.Message")
    assert first["v"]["contents"][0] == {
        "type": "text",
        "text": "hello",
        "additional_properties": {},
    }

    exported = wfctl("export", "chat-1", "--store", store, "--json")
    assert exported.code == 0, exported.stderr
    _check(exported.json(), "export")
    second = exported.json()["checkpoints"][0]["data"]["input"][1]["v"]
    assert (second["role"], second["author_name"]) == ("user", "ada")
    for text in (log.stdout, shown.stdout, exported.stdout):
        assert "pickle" not in text
