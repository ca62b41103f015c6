"""What a worker's claim costs on PostgreSQL as the runs that ended pile up, per tree.

Usage::

    python bench/pg_claim.py [--ended 0,10000,100000] [--claims 30] [--tree .] [--tree /tmp/before]

One private PostgreSQL server (``wfctl.storage.testing.private_postgres()``). For each number of
ended runs, each tree named by ``--tree`` in turn (the trees alternated), a fresh Python process
imports the tree's wfctl, creates a fresh database's schema by opening a store on it, writes that
many ended runs (a root and a ``completed`` record each, sent in one ``COPY`` through the
schema's append trigger, as the store's own saves are checked) and one queued run (through the
store), runs ``ANALYZE`` (as autovacuum would soon after), then times ``--claims`` rounds of
``claim_run()`` taking the queued run and releasing it. Prints, per tree and number of ended
runs, the median milliseconds of a claim with the range.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # the wfctl being developed

import psycopg

from wfctl.storage.testing import private_postgres

#: The timed program: argv is TREE URL ENDED CLAIMS; prints each claim's milliseconds.
_CHILD = """
import asyncio, sys, time
tree, url, ended, claims = sys.argv[1:]
sys.path.insert(0, tree)
import psycopg
from wfctl._checkpoint import Checkpoint, Kind, checkpoint_id_for
from wfctl._storage._journal import encode_record
from wfctl.storage import open_storage

TS = "2026-01-01T00:00:00.000000+00:00"

def records(run_id, kinds):
    out = []
    for seq, kind in enumerate(kinds):
        parent = checkpoint_id_for(run_id, seq - 1) if seq else None
        out.append(Checkpoint(run_id, seq, Kind(kind), "claimed", TS, parent, data={"n": seq}))
    return out

async def main() -> None:
    storage = open_storage(url)
    try:
        await storage.list_runs()  # creates this tree's schema
        async with await psycopg.AsyncConnection.connect(url, autocommit=True) as conn:
            await conn.execute(
                "INSERT INTO wfctl_runs (run_id, fence) SELECT 'ended-' || g,"
                " nextval('wfctl_fence') FROM generate_series(1, %s::int) g", (int(ended),)
            )
            cursor = await conn.execute("SELECT run_id, fence FROM wfctl_runs")
            fences = dict(await cursor.fetchall())
            columns = "run_id, seq, kind, prev, workflow_name, ts, fence, record"
            async with conn.cursor() as cur:
                async with cur.copy(f"COPY wfctl_checkpoints ({columns}) FROM STDIN") as copy:
                    for run_id, fence in fences.items():
                        for c in records(run_id, ("root", "completed")):
                            await copy.write_row((
                                run_id, c.seq, c.kind.value, c.previous_checkpoint_id,
                                c.workflow_name, c.timestamp, fence, encode_record(c)[:-1],
                            ))
        lease = await storage.lease_run("queued")
        await storage.save(records("queued", ("root",))[0])
        await lease.release()
        async with await psycopg.AsyncConnection.connect(url, autocommit=True) as conn:
            await conn.execute("ANALYZE wfctl_runs")
        times = []
        for _ in range(int(claims)):
            started = time.perf_counter()
            lease = await storage.claim_run()
            times.append((time.perf_counter() - started) * 1000)
            assert lease is not None and lease.run_id == "queued", lease
            await lease.release()
        print(*times)
    finally:
        await storage.aclose()

asyncio.run(main())
"""


def main() -> None:
    """Time claims over stores with more and more ended runs and print the medians."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--ended", default="0,10000,100000", help="numbers of ended runs, comma-separated"
    )
    parser.add_argument("--claims", type=int, default=30, help="claims timed per store")
    parser.add_argument("--tree", type=Path, action="append", help="wfctl checkout(s) to time")
    options = parser.parse_args()
    trees = [t.resolve() for t in options.tree or [Path(__file__).resolve().parent.parent]]
    counts = [int(part) for part in options.ended.split(",")]
    with private_postgres() as server:
        for number, ended in enumerate(counts):
            for tree_number, tree in enumerate(trees):
                database = f"claims_{number}_{tree_number}"
                with_db = server.url.replace(f"/{server.dbname}?", f"/{database}?")
                with psycopg.connect(server.url, autocommit=True) as conn:
                    conn.execute(f"CREATE DATABASE {database}")
                command = [sys.executable, "-c", _CHILD, str(tree), with_db, str(ended)]
                done = subprocess.run(
                    [*command, str(options.claims)], capture_output=True, text=True, check=False
                )
                if done.returncode != 0:
                    sys.exit(f"pg_claim: the timed process failed in {tree}: {done.stderr}")
                times = [float(t) for t in done.stdout.split()]
                print(
                    f"{tree}: {ended:,} ended runs: a claim {statistics.median(times):.2f} ms"
                    f" ({min(times):.2f}-{max(times):.2f}), {len(times)} claims",
                    flush=True,
                )


if __name__ == "__main__":
    main()
