"""What real commands cost at start-up, against ``wfctl --help``: CPU time of whole processes.

Usage::

    python bench/startup.py [--rounds 15] [--tree .] [--tree /tmp/before] [--no-bytecode-cache]

For each checkout named by ``--tree`` (run with ``PYTHONPATH=<tree>``), round by round and
interleaved (every checkout and command once per round, so all see the same machine load),
times the CPU (user + system, from ``wait4``) of:

- ``wfctl --help``;
- ``wfctl runs`` on an empty store;
- a one-step ``wfctl run`` (``tests/cli/workflows/greet.py``) on a fresh store.

Prints the median CPU milliseconds of each and its ratio to ``--help`` of the same checkout.
CPU time, not wall time: other processes on a shared machine change it much less.

Bytecode: an installed wfctl runs from ``.pyc`` files (pip compiles them at install; an editable
install writes ``__pycache__`` on first use), so by default the processes share a private bytecode
cache (``PYTHONPYCACHEPREFIX`` in a temporary directory, written by one untimed round first), even
where ``PYTHONDONTWRITEBYTECODE`` is set. ``--no-bytecode-cache`` sets that variable instead: in a
checkout without ``__pycache__`` every wfctl module is then compiled from source at every start
(about 80 ms of a one-step ``run``), which is what this measured before the cache was added.
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
from pathlib import Path

from store_commands import spawn_wfctl  # bench/ is on the path: these are scripts

REPO = Path(__file__).resolve().parent.parent


def _cpu(tree: Path, args: list[str]) -> float:
    """Run ``wfctl ARGS`` from ``tree``; return its CPU seconds (user + system)."""
    _, exit_code, usage = spawn_wfctl(tree, args)
    if exit_code != 0:
        raise SystemExit(f"wfctl {' '.join(args)} from {tree} failed")
    return usage.ru_utime + usage.ru_stime


def main() -> None:
    """Time the commands and print the medians and ratios."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--tree", type=Path, action="append", help="checkout(s) to time")
    parser.add_argument(
        "--no-bytecode-cache",
        action="store_true",
        help="compile wfctl from source at every start (PYTHONDONTWRITEBYTECODE=1)",
    )
    options = parser.parse_args()
    trees = [t.resolve() for t in options.tree or [REPO]]
    with tempfile.TemporaryDirectory() as work:
        if options.no_bytecode_cache:  # the processes inherit this process's environment
            os.environ["PYTHONDONTWRITEBYTECODE"] = "1"
        else:
            os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
            os.environ["PYTHONPYCACHEPREFIX"] = str(Path(work, "pycache"))
        empty, store = Path(work, "empty"), Path(work, "store")
        empty.mkdir()
        greet = str(REPO / "tests" / "cli" / "workflows" / "greet.py")
        commands = {
            "--help": ["--help"],
            "runs (empty store)": ["runs", "--store", str(empty)],
            "run (one step)": ["run", greet, "--store", str(store)],
        }
        times: dict[tuple[Path, str], list[float]] = {(t, c): [] for t in trees for c in commands}
        for tree in trees:  # untimed: writes the bytecode cache
            for args in commands.values():
                _cpu(tree, args)
        for _ in range(options.rounds):
            for tree in trees:
                for name, args in commands.items():
                    times[tree, name].append(_cpu(tree, args))
    bytecode = "compiled at every start" if options.no_bytecode_cache else "bytecode cached"
    for tree in trees:
        help_cpu = statistics.median(times[tree, "--help"])
        print(f"{tree}: median CPU of {options.rounds} rounds, {bytecode}")
        for name in commands:
            cpu = statistics.median(times[tree, name])
            print(f"  {name:20s} {cpu * 1000:7.1f} ms  {cpu / help_cpu:5.2f}x --help")


if __name__ == "__main__":
    main()
