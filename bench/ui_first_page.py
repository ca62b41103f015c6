"""How long ``wfctl ui`` takes to answer the runs page of a 100,000-run store.

Usage::

    python bench/ui_first_page.py WORKDIR [--runs 100000] [--rounds 3] [--tree .]

Fills ``WORKDIR/runs-<N>`` (once; reused later) with completed runs of 2 steps each
(``bench/list_runs_cost.py``'s ``fill``, non-durable), then, ``--rounds`` times, starts
``wfctl ui --port 0`` from the checkout ``--tree`` (``PYTHONPATH``) over it and times over
HTTP, with the token's cookie, wall seconds from request to the last byte:

- ``first page (cold)``: the first request of ``/``: the listing of every run starts being read
  on its own thread, and the page is answered from the run ids alone (the newest ids,
  only the page's 50 runs read: docs/ui.md);
- ``first page (warm)``: ``/`` again, the listing still being read;
- ``page 1000``: a page deep in the ids;
- ``filtered, sorted``: ``/?workflow=seq*&sort=workflow&q=0`` until it is whole (it says the
  listing is being read until it is);
- ``first page, listed`` and ``filtered, listed``: both again, from the kept listing;
- ``run page``: one run's page (its records, verdict and drawing by ``dot``).

Also prints the seconds from the process's start to its URL line. Medians over the rounds.
The target is the first page within 1 s (docs/decisions/0186).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import signal
import statistics
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from urllib.parse import urlsplit

from store_commands import _start_wfctl  # bench/ is on the path: these are scripts

BENCH = Path(__file__).resolve().parent


def _fill(store: Path, runs: int) -> None:
    sys.path.insert(0, str(BENCH))
    from list_runs_cost import fill

    if not (store / "runs").is_dir():
        asyncio.run(fill(store, runs, 2))


def _get(base: str, cookie: str, path: str, *, whole: bool = False) -> float:
    """Seconds to the last byte of ``path``; with ``whole``, until the page is no longer the
    one that says the listing is being read (asked again every 0.1 s, as a reader would)."""
    request = urllib.request.Request(base + path, headers={"Cookie": cookie})
    start = time.perf_counter()
    while True:
        with urllib.request.urlopen(request, timeout=600) as answer:
            page = answer.read()
            if answer.status != 200:
                raise SystemExit(f"{path}: HTTP {answer.status}")
        if not whole or b'id="partial"' not in page:
            return time.perf_counter() - start
        time.sleep(0.1)


def _round(tree: Path, store: Path, run_id: str) -> dict[str, float]:
    start = time.perf_counter()
    server = _start_wfctl(tree, ["ui", "--port", "0", "--store", str(store)], subprocess.PIPE)
    try:
        assert server.stdout is not None
        url = server.stdout.readline().decode().strip()
        ready = time.perf_counter() - start
        parts = urlsplit(url)
        base = f"{parts.scheme}://{parts.netloc}"
        cookie = f"wfctl-ui-{parts.port}={url.split('token=', 1)[1]}"
        return {
            "start to URL": ready,
            "first page (cold)": _get(base, cookie, "/"),
            "first page (warm)": _get(base, cookie, "/"),
            "page 1000": _get(base, cookie, "/?page=1000"),
            "filtered, sorted": _get(base, cookie, "/?workflow=seq*&sort=workflow&q=0", whole=True),
            "first page, listed": _get(base, cookie, "/"),
            "filtered, listed": _get(base, cookie, "/?workflow=seq*&sort=workflow&q=0"),
            "run page": _get(base, cookie, f"/run?id={run_id}"),
        }
    finally:
        server.send_signal(signal.SIGINT)
        server.wait(timeout=60)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("workdir", type=Path)
    parser.add_argument("--runs", type=int, default=100_000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--tree", type=Path, default=BENCH.parent)
    args = parser.parse_args()
    store = args.workdir / f"runs-{args.runs}"
    _fill(store, args.runs)
    run_id = min(os.listdir(store / "runs"))
    rounds = [_round(args.tree, store, run_id) for _ in range(args.rounds)]
    print(f"wfctl ui over {len(os.listdir(store / 'runs'))} runs ({args.tree}), wall seconds:")
    for name in rounds[0]:
        values = [measured[name] for measured in rounds]
        print(f"  {name:20} median {statistics.median(values):7.3f}  max {max(values):7.3f}")


if __name__ == "__main__":
    main()
