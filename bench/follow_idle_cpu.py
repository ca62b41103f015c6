"""CPU time of ``wfctl log --follow`` on an idle run: what following costs while nothing happens.

The run is paused, then resumed, and then idles in a durable hour-long sleep
(``tests/cli/workflows/waits.py``, input ``"sleep"``): it holds its lock and commits nothing.
Two figures:

- ``wfctl log --follow`` for SECONDS (default 10), stopped with SIGINT: its own user+system
  CPU from ``os.wait4``, next to a one-shot ``wfctl log`` of the same run (start-up, which
  dominates and varies by tens of ms on a shared machine);
- the follow loop alone: ``follow_run`` in a child process for SECONDS, its
  ``time.process_time`` from just before the first look to the end (start-up excluded).

The run is killed at the end.

    python bench/follow_idle_cpu.py [SECONDS]
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
WAITS = REPO / "tests" / "cli" / "workflows" / "waits.py"
WFCTL = shutil.which("wfctl", path=os.path.dirname(sys.executable)) or "wfctl"


def _cpu_of(args: list[str], seconds: float | None) -> float:
    """Run ``wfctl args``; after ``seconds`` (None: let it end) send SIGINT; return its CPU s."""
    process = subprocess.Popen([WFCTL, *args], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    if seconds is not None:
        time.sleep(seconds)
        process.send_signal(signal.SIGINT)
    _, _, usage = os.wait4(process.pid, 0)
    process.returncode = 0  # reaped above
    return usage.ru_utime + usage.ru_stime


_LOOP = """
import sys, time
from pathlib import Path
from wfctl._inspect._follow import follow_run

class Done(Exception):
    pass


limit = float(sys.argv[2])
started = time.monotonic()
cpu = time.process_time()


def sleep(seconds):
    if time.monotonic() - started >= limit:
        raise Done
    time.sleep(seconds)


try:
    for _ in follow_run(Path(sys.argv[1]), "idle", sleep=sleep):
        pass
except Done:
    pass
print(time.process_time() - cpu)
"""


def _loop_cpu(store: Path, seconds: float) -> float:
    """Run the follow loop alone in a child for ``seconds``; return its CPU seconds."""
    done = subprocess.run(
        [sys.executable, "-c", _LOOP, str(store), str(seconds)],
        capture_output=True,
        text=True,
        check=True,
    )
    return float(done.stdout.strip().splitlines()[-1])


def _wait_until(store: Path, run_id: str, status: str, sleeping: bool) -> None:
    while True:
        done = subprocess.run(
            [WFCTL, "runs", "--store", str(store), "--json"], capture_output=True, text=True
        )
        runs = (
            {r["run_id"]: r for r in json.loads(done.stdout)["runs"]} if not done.returncode else {}
        )
        run = runs.get(run_id)
        if run and run["status"] == status and (run["waiting"] or not sleeping):
            return
        time.sleep(0.1)


def main() -> None:
    seconds = float(sys.argv[1]) if len(sys.argv) > 1 else 10.0
    with tempfile.TemporaryDirectory() as tmp:
        store = Path(tmp) / "store"
        common = ["--store", str(store)]
        first = subprocess.Popen(
            [WFCTL, "run", str(WAITS), "--input", '"sleep"', "--run-id", "idle", *common],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        _wait_until(store, "idle", "running", sleeping=True)  # its sleep is recorded
        subprocess.run([WFCTL, "pause", "idle", *common], check=True, capture_output=True)
        first.wait(timeout=60)
        resumed = subprocess.Popen(
            [WFCTL, "resume", "idle", *common], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
        )
        try:
            _wait_until(store, "idle", "running", sleeping=False)  # the sleep is served: no record
            once = _cpu_of(["log", "idle", *common], None)
            command = _cpu_of(["log", "idle", "--follow", *common], seconds)
            loop = _loop_cpu(store, seconds)
        finally:
            resumed.kill()
            resumed.wait()
    print(f"one-shot wfctl log:               {once * 1000:7.1f} ms CPU")
    print(f"wfctl log --follow for {seconds:g} s:     {command * 1000:7.1f} ms CPU")
    print(f"the follow loop alone for {seconds:g} s:  {loop * 1000:7.1f} ms CPU")
    print(f"                                  ({loop / seconds * 100:.4f}% of one core)")


if __name__ == "__main__":
    main()
