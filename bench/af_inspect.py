"""Inspecting agent-framework's checkpoint directories: wfctl against agent-framework's own list.

Usage::

    python bench/af_inspect.py WORKDIR [--runs 1000] [--iterations 100] [--rounds 3]
        [--json FILE]

Writes ``WORKDIR/loop-RUNS-ITERATIONS/`` with the real agent-framework
(``FileCheckpointStorage``; kept and reused when it is there already): ``--runs`` runs of a
graph workflow whose one executor sends itself a message ``--iterations`` times, a checkpoint
per superstep (``RUNS * (ITERATIONS + 2)`` files). Then measures, each a fresh process,
``--rounds`` times (the median, with the least and greatest): wall seconds, CPU seconds and peak
RSS of

- ``wfctl runs --json``: every file read once, the runs split and judged;
- ``FileCheckpointStorage.list_checkpoints`` of the workflow: what an agent-framework user runs
  today to see its checkpoints (each one decoded, its pickles loaded); the ratio is reported;
- ``wfctl log RUN`` of the first run (a start of its id): its time to its first line and to
  its end (the directory is read whole to find the run's chain);
- ``wfctl du --json`` and ``wfctl verify-lineage --json``.

Needs ``pip install -e '.[test]'`` (agent-framework-core). ``--runs 20 --iterations 10 --rounds
1`` is a smoke run (tests/sources/test_af_bench_smoke.py).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import agent_framework as af
from agent_framework import Executor, WorkflowBuilder, WorkflowContext, handler
from langgraph_inspect import _median, measure_rounds  # the same measurement, one definition

#: What an agent-framework user runs today to see a workflow's checkpoints.
PEER = """
import asyncio, sys
import agent_framework as af
checkpoints = asyncio.run(
    af.FileCheckpointStorage(sys.argv[1]).list_checkpoints(workflow_name="loop")
)
print(len(checkpoints))
"""


class Loop(Executor):
    """Sends itself ``n - 1`` until 0: a checkpoint per superstep."""

    @handler
    async def go(self, n: int, ctx: WorkflowContext[int, int]) -> None:
        if n > 0:
            await ctx.send_message(n - 1)
        else:
            await ctx.yield_output(0)


def write_store(directory: Path, runs: int, iterations: int) -> None:
    """Write ``runs`` runs of the looping workflow into ``directory`` (kept once whole)."""
    if directory.exists():
        return
    partial = directory.with_name(directory.name + ".partial")
    shutil.rmtree(partial, ignore_errors=True)
    partial.mkdir(parents=True)

    async def main() -> None:
        storage = af.FileCheckpointStorage(partial)
        for _ in range(runs):
            loop = Loop(id="loop")
            builder = WorkflowBuilder(
                start_executor=loop,
                checkpoint_storage=storage,
                name="loop",
                max_iterations=iterations + 5,
            )
            await builder.add_edge(loop, loop).build().run(iterations)

    asyncio.run(main())
    partial.rename(directory)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("workdir", type=Path)
    parser.add_argument("--runs", type=int, default=1000)
    parser.add_argument("--iterations", type=int, default=100)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--json", type=Path, default=None, help="also write the report here")
    args = parser.parse_args(argv)
    wfctl = shutil.which("wfctl", path=str(Path(sys.executable).parent)) or "wfctl"
    store = args.workdir / f"loop-{args.runs}-{args.iterations}"
    if not store.exists():  # another process: a child inherits its parent's peak RSS
        code = "import sys; from af_inspect import write_store; from pathlib import Path; "
        code += f"write_store(Path({str(store)!r}), {args.runs}, {args.iterations})"
        subprocess.run(
            [sys.executable, "-c", code], check=True, cwd=Path(__file__).resolve().parent
        )
    listed = subprocess.run(
        [wfctl, "runs", "--store", str(store), "--json"], check=True, capture_output=True
    )
    first = json.loads(listed.stdout)["runs"][0]["run_id"]
    jobs: dict[str, tuple[list[str], bool]] = {
        "wfctl runs": ([wfctl, "runs", "--store", str(store), "--json"], False),
        "list_checkpoints": ([sys.executable, "-c", PEER, str(store)], False),
        "wfctl log": ([wfctl, "log", first[:8], "--store", str(store)], True),
        "wfctl du": ([wfctl, "du", "--store", str(store), "--json"], False),
        "wfctl verify-lineage": ([wfctl, "verify-lineage", "--store", str(store), "--json"], False),
    }
    rounds, failed = measure_rounds(jobs, args.rounds)
    report: dict[str, Any] = {
        "store": {"name": store.name, "checkpoints": sum(1 for _ in store.glob("*.json"))},
        "rows": {name: _median(r) for name, r in rounds.items() if r},
        "failed": failed,
    }
    rows = report["rows"]
    if "wfctl runs" in rows and "list_checkpoints" in rows:
        report["ratios"] = {
            "list_checkpoints / wfctl runs": rows["list_checkpoints"]["seconds"]["median"]
            / rows["wfctl runs"]["seconds"]["median"]
        }
    text = json.dumps(report, indent=2)
    print(text)
    if args.json is not None:
        args.json.write_text(text + "\n", encoding="utf-8")
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
