"""What ``wfctl runs`` pays to verify every run: three ways to summarise the same store.

Usage::

    python bench/list_runs_cost.py STORE [--runs 10000] [--steps 10] [--repeat 5]

Fills ``STORE`` (if it holds no runs yet) with ``--runs`` completed runs of ``--steps`` steps
each (non-durable, to fill it quickly), then reports the CPU seconds (best of ``--repeat``) of:

- ``ends only``: each run's first and last record, read and decoded (what ``runs`` did before
  it verified whole journals; a record edited in the middle went unnoticed);
- ``list_runs``: what ``runs`` and ``gc`` do: every record's checksum and chain link, one read
  per journal, only the first and last records decoded;
- ``full decode``: every record decoded and the strict chain checked (the record-level part of
  ``verify-lineage``).
"""

from __future__ import annotations

import argparse
import asyncio
import time
from collections.abc import Callable
from pathlib import Path

from wfctl import FileCheckpointStorage, step, workflow
from wfctl._storage._base import strict_chain


@step
async def work(i: int) -> dict[str, object]:
    """A step with a small result (about 200 bytes)."""
    return {"i": i, "text": "x" * 200}


@workflow
async def sequential(n: int) -> int:
    """Run ``n`` steps one after the other."""
    total = 0
    for i in range(n):
        total += int((await work(i))["i"])  # type: ignore[call-overload]
    return total


async def fill(store: Path, runs: int, steps: int) -> None:
    """Write ``runs`` completed runs of ``steps`` steps."""
    bound = sequential.build(checkpoint_storage=FileCheckpointStorage(store, durable=False))
    for _ in range(runs):
        result = await bound.run(steps)
        assert result.status == "completed", result


def best_cpu(repeat: int, job: Callable[[], object]) -> float:
    """Return the least CPU time ``job`` took in ``repeat`` tries."""
    best = float("inf")
    for _ in range(repeat):
        start = time.process_time()
        job()
        best = min(best, time.process_time() - start)
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("store", type=Path)
    parser.add_argument("--runs", type=int, default=10_000)
    parser.add_argument("--steps", type=int, default=10)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    storage = FileCheckpointStorage(args.store)
    if not storage._run_ids():  # internal: the store's run ids, without reading any journal
        asyncio.run(fill(args.store, args.runs, args.steps))
    run_ids = storage._run_ids()

    def ends_only() -> None:
        for run_id in run_ids:
            storage._root(run_id), storage._head(run_id)  # internal: the two primitives

    def listed() -> None:
        asyncio.run(storage.list_runs())

    def full_decode() -> None:
        for run_id in run_ids:
            strict_chain(storage._read_journal(run_id))  # internal: the strict read

    print(f"{len(run_ids)} runs in {args.store}; CPU seconds, best of {args.repeat}:")
    for name, job in (
        ("ends only", ends_only),
        ("list_runs", listed),
        ("full decode", full_decode),
    ):
        print(f"  {name:<12} {best_cpu(args.repeat, job):.3f}")


if __name__ == "__main__":
    main()
