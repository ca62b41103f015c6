"""Lines are wrapped to the width on a terminal only: in a pipe (a CI log) a line stays whole."""

from __future__ import annotations

import os
import pty
import re
import subprocess
from pathlib import Path

from tests.cli.conftest import WORKFLOWS, base_env, wfctl
from tests.conftest import wfctl_executable

#: A width narrower than the summary line, as a small terminal or rich's default in a pipe.
NARROW = {"COLUMNS": "40"}


def test_a_summary_and_an_error_in_a_pipe_are_one_line_each(store: Path) -> None:
    done = wfctl("run", WORKFLOWS / "greet.py", "--store", store, env=NARROW)
    assert done.code == 0, done.stderr
    lines = done.stderr.splitlines()
    assert len(lines) == 1, done.stderr  # not cut at 40 columns
    assert lines[0].startswith("run ") and lines[0].endswith(" cached"), lines[0]

    missing = "a_file_whose_name_is_longer_than_the_narrow_width_of_forty.py"
    failed = wfctl("run", missing, "--store", store, env=NARROW)
    assert failed.code == 2
    assert failed.error_line().endswith(f"no such file {missing!r}")


def test_a_terminal_still_gets_lines_wrapped_to_its_width(store: Path) -> None:
    leader, follower = pty.openpty()
    try:
        process = subprocess.run(
            [wfctl_executable(), "run", str(WORKFLOWS / "greet.py"), "--store", str(store)],
            env=base_env({**NARROW, "TERM": "xterm"}),  # rich keeps 80 columns for "dumb"
            stdout=subprocess.DEVNULL,
            stderr=follower,
            timeout=120,
            check=False,
        )
        os.close(follower)
        follower = -1
        written = b""
        while True:
            try:
                chunk = os.read(leader, 65536)
            except OSError:  # the terminal's writer is gone: everything was read
                break
            if not chunk:
                break
            written += chunk
    finally:
        if follower != -1:
            os.close(follower)
        os.close(leader)
    assert process.returncode == 0
    text = re.sub(r"\x1b\[[0-9;?]*[a-zA-Z]", "", written.decode())  # the progress display's
    lines = [line.rstrip() for line in text.splitlines() if line.strip()]
    assert all(len(line) <= 40 for line in lines), lines  # the summary, wrapped at 40 columns
    assert any(line.endswith("cached") and not line.startswith("run ") for line in lines), lines
