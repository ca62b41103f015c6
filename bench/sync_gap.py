"""The fdatasync floor with Python work between its commits: what W µs of work a step costs.

The durability rows divide wfctl's time per step by the floor's: one record appended and
``fdatasync``-ed, N times in a tight loop. An engine does work between its commits (the step's
key and digests, its record's encoding, its events), and that work is not free twice over: it
takes its own time, and it runs after the process slept in ``fdatasync``, with caches the
kernel's and the virtual disk's work left cold. This puts work back into the floor's loop and
measures what a step would cost an engine that did nothing else.

Each iteration runs the work (``--work`` units; a unit encodes a record the size of a wfctl step
record with the standard library's ``json``, as the floor encodes its record once), then appends
the record and, every ``--every`` iterations, ``fdatasync``-s the file. For each amount of work,
in one process, interleaved round by round with the floor itself (one unit, a sync every
write), two loops run: with the syncs, and without any (the work and the ``write`` alone).
Printed per iteration, medians over the rounds: the work and ``write`` alone (CPU µs), the loop
with syncs (wall µs and CPU µs), and its wall time over the floor's in the same round, the
ratio the durability targets measure (``batch``'s too: over the floor that syncs every write).

Usage::

    python bench/sync_gap.py [--work 1,2,4,8,16] [--every 1] [--n 2000] [--rounds 5] [--dir DIR]

``--every 16`` gives the ``batch`` mode's syncs. ``--dir`` is where the journal is written
(default: a temporary directory under the current one, on the disk the benchmarks use).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import tempfile
import time

#: A record shaped and sized like a wfctl step record (about 450 bytes once encoded).
_RECORD = {
    "v": 2,
    "id": "20261202-000000-00000000.1",
    "run": "20261202-000000-00000000",
    "seq": 1,
    "kind": "step",
    "prev": "20261202-000000-00000000.0",
    "workflow": "bench_sequential",
    "ts": "2026-12-02T00:00:00.000000+00:00",
    "data": {
        "key": "echo#1",
        "scope": "",
        "name": "echo",
        "digest": "0123456789abcdef",
        "result": "x" * 100,
        "args": ["y" * 100],
        "seconds": 0.000012,
    },
}


def _work(units: int) -> bytes:
    """The record's line, encoded ``units`` times (at least once: the write needs it)."""
    line = b""
    for _ in range(max(units, 1)):
        line = json.dumps(_RECORD, separators=(",", ":")).encode()
    return line + b"\n"


def _loop(path: str, n: int, units: int, every: int, sync: bool) -> tuple[float, float]:
    """Seconds of wall and CPU per iteration of ``n`` iterations."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_TRUNC, 0o600)
    try:
        wall, cpu = time.perf_counter(), time.process_time()
        for i in range(1, n + 1):
            os.write(fd, _work(units))
            if sync and i % every == 0:
                os.fdatasync(fd)
        return (time.perf_counter() - wall) / n, (time.process_time() - cpu) / n
    finally:
        os.close(fd)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--work", default="1,2,4,8,16", help="comma-separated units of work")
    parser.add_argument("--every", type=int, default=1, help="fdatasync every this many writes")
    parser.add_argument("--n", type=int, default=2000, help="iterations per loop")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--dir", default=None, help="where the journal is written")
    args = parser.parse_args()
    units = [int(u) for u in args.work.split(",")]
    found: dict[tuple[int, bool], list[tuple[float, float]]] = {}
    ratios: dict[int, list[float]] = {}
    with tempfile.TemporaryDirectory(dir=args.dir or os.getcwd()) as directory:
        path = os.path.join(directory, "journal")
        _loop(path, 200, 1, 1, True)  # warm up: the file, the code
        for _ in range(args.rounds):
            floor = _loop(path, args.n, 1, 1, True)[0]
            for unit in units:
                for sync in (True, False):
                    found.setdefault((unit, sync), []).append(
                        _loop(path, args.n, unit, args.every, sync)
                    )
                ratios.setdefault(unit, []).append(found[(unit, True)][-1][0] / floor)

    def median(unit: int, sync: bool, which: int) -> float:
        return statistics.median(sample[which] for sample in found[(unit, sync)]) * 1e6

    print(
        f"{args.n} writes of {len(_work(1))} bytes, fdatasync every {args.every}, "
        f"{args.rounds} rounds interleaved with the floor (one unit, fdatasync every write);"
        " per write, medians (µs; the ratio: median of the rounds' ratios)"
    )
    print(f"{'work units':>10} {'work+write CPU':>15} {'wall':>8} {'CPU':>8} {'÷ floor':>8}")
    for unit in units:
        print(
            f"{unit:>10} {median(unit, False, 1):>15.1f} {median(unit, True, 0):>8.1f}"
            f" {median(unit, True, 1):>8.1f} {statistics.median(ratios[unit]):>7.2f}x"
        )


if __name__ == "__main__":
    main()
