"""What a worker's claim costs as runs pile up in a store, ended or queued, per tree.

Usage::

    python bench/claims.py [--stores postgres,file] [--ended 0,10000] [--queued 1,1000,10000]
                           [--asking 300] [--claims 30] [--tree .] [--tree /tmp/before]

For each store kind, each number of ended runs (with one run queued), then each number of
queued runs (with none ended), then each number of runs paused for an answer whose request data
is ``{"reason": "handoff"}`` (a hand-over's words inside user data; one run queued after them),
each tree named by ``--tree`` in turn (the trees alternated), a fresh Python process imports
the tree's wfctl and fills a fresh store: a fresh database of one private PostgreSQL server
(``wfctl.storage.testing.private_postgres()``), or a fresh directory (``durability="none"``:
only the claims are timed). Ended runs hold a root and a ``completed`` record, queued runs a
root, asking runs a root and that pause. On PostgreSQL they are written in one ``COPY`` through
the schema's append trigger (which checks them as it checks the store's own saves), then
``ANALYZE`` runs (as autovacuum would soon after); on the file store each is written under its
lease, as ``submit`` writes it. Then ``--claims`` rounds of ``claim_run()`` take the oldest
queued run and release it. Prints, per store, tree and size, the median milliseconds of a claim
with the range.
"""

from __future__ import annotations

import argparse
import contextlib
import itertools
import statistics
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # the wfctl being developed

from wfctl.storage.testing import private_postgres

#: The timed program: argv is TREE STORE ENDED QUEUED ASKING CLAIMS; prints each claim's
#: milliseconds.
_CHILD = """
import asyncio, sys, time
tree, store, ended, queued, asking, claims = sys.argv[1:]
sys.path.insert(0, tree)
from wfctl._records._checkpoint import Checkpoint, Kind, checkpoint_id_for
from wfctl._storage._journal import encode_record
from wfctl.storage import open_storage

TS = "2026-01-01T00:00:00.000000+00:00"
RUNS = [(f"ended-{i:07d}", ("root", "completed")) for i in range(int(ended))]
RUNS += [(f"asking-{i:07d}", ("root", "pause")) for i in range(int(asking))]
RUNS += [(f"queued-{i:07d}", ("root",)) for i in range(int(queued))]
#: A pause for an answer whose request data holds the words of a hand-over.
ASKING = {"requests": [{"request_id": "q", "data": {"reason": "handoff"}}], "reason": "request"}

def records(run_id, kinds):
    out = []
    for seq, kind in enumerate(kinds):
        parent = checkpoint_id_for(run_id, seq - 1) if seq else None
        data = ASKING if kind == "pause" else {"n": seq}
        out.append(Checkpoint(run_id, seq, Kind(kind), "claimed", TS, parent, data=data))
    return out

async def copied(url):
    import psycopg
    async with await psycopg.AsyncConnection.connect(url, autocommit=True) as conn:
        async with conn.cursor() as cur:
            async with cur.copy("COPY wfctl_runs (run_id, fence) FROM STDIN") as copy:
                for fence, (run_id, _) in enumerate(RUNS):
                    await copy.write_row((run_id, fence))
            columns = "run_id, seq, kind, prev, workflow_name, ts, fence, record"
            async with cur.copy(f"COPY wfctl_checkpoints ({columns}) FROM STDIN") as copy:
                for fence, (run_id, kinds) in enumerate(RUNS):
                    for c in records(run_id, kinds):
                        await copy.write_row((
                            run_id, c.seq, c.kind.value, c.previous_checkpoint_id,
                            c.workflow_name, c.timestamp, fence, encode_record(c)[:-1],
                        ))
        await conn.execute("ANALYZE wfctl_runs")

async def main() -> None:
    url = store.startswith("postgresql:")
    storage = open_storage(store, must_exist=False, **({} if url else {"durability": "none"}))
    try:
        await storage.list_runs()  # creates this tree's schema
        if url:
            await copied(store)
        else:
            for run_id, kinds in RUNS:
                lease = await storage.lease_run(run_id)
                for c in records(run_id, kinds):
                    await storage.save(c)
                await lease.release()
        times = []
        for _ in range(int(claims) + 1):  # the first: a file store's rescan of the whole store
            started = time.perf_counter()
            lease = await storage.claim_run()
            times.append((time.perf_counter() - started) * 1000)
            assert lease is not None and lease.run_id == "queued-0000000", lease
            await lease.release()
        print(*times[1:])
    finally:
        await storage.aclose()

asyncio.run(main())
"""


def sizes(text: str) -> list[int]:
    return [int(part) for part in text.split(",") if part]


@contextlib.contextmanager
def stores(kind: str) -> Iterator[Iterator[str]]:
    """Yield an endless supply of fresh, empty stores of ``kind`` (their URLs or paths)."""
    if kind == "postgres":
        import psycopg  # the postgres extra, as the store needs

        with private_postgres() as server:

            def databases() -> Iterator[str]:
                for number in itertools.count():
                    with psycopg.connect(server.url, autocommit=True) as conn:
                        conn.execute(f"CREATE DATABASE claims_{number}")
                    yield server.url.replace(f"/{server.dbname}?", f"/claims_{number}?")

            yield databases()
    else:
        with tempfile.TemporaryDirectory(prefix="wfctl-claims-") as base:
            yield (str(Path(base) / f"store{number}") for number in itertools.count())


def main() -> None:
    """Time claims over stores with more and more runs and print the medians."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--stores", default="postgres,file", help="postgres, file or both")
    parser.add_argument("--ended", default="0,10000", help="numbers of ended runs (1 queued)")
    parser.add_argument("--queued", default="1,1000,10000", help="numbers of queued runs")
    parser.add_argument(
        "--asking", default="300", help="numbers of runs paused for an answer (1 queued)"
    )
    parser.add_argument("--claims", type=int, default=30, help="claims timed per store")
    parser.add_argument("--tree", type=Path, action="append", help="wfctl checkout(s) to time")
    options = parser.parse_args()
    trees = [t.resolve() for t in options.tree or [Path(__file__).resolve().parent.parent]]
    shapes = [(e, 1, 0) for e in sizes(options.ended)] + [(0, q, 0) for q in sizes(options.queued)]
    shapes += [(0, 1, a) for a in sizes(options.asking) if a]
    for kind in options.stores.split(","):
        with stores(kind) as fresh:
            for ended, queued, asking in shapes:
                for tree in trees:
                    command = [sys.executable, "-c", _CHILD, str(tree), next(fresh)]
                    command += [str(ended), str(queued), str(asking), str(options.claims)]
                    done = subprocess.run(command, capture_output=True, text=True, check=False)
                    if done.returncode != 0:
                        sys.exit(f"claims: the timed process failed in {tree}: {done.stderr}")
                    times = [float(t) for t in done.stdout.split()]
                    print(
                        f"{kind} {tree}: {ended:,} ended, {queued:,} queued"
                        + (f", {asking:,} asking" if asking else "")
                        + f": a claim {statistics.median(times):.2f} ms"
                        f" ({min(times):.2f}-{max(times):.2f}), {len(times)} claims",
                        flush=True,
                    )


if __name__ == "__main__":
    main()
