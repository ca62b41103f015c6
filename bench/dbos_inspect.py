"""Inspecting a DBOS SQLite system database: ``wfctl runs`` against DBOS's own ``dbos workflow
list``.

Usage::

    python bench/dbos_inspect.py WORKDIR [--workflows 100000] [--template 200] [--rounds 3]
        [--json FILE]

Writes ``WORKDIR/dbos-N.sqlite`` (kept and reused) holding ``--workflows`` workflow rows:
``--template`` of them written by the real DBOS (a workflow of two steps, every tenth starting
a child workflow of one step; pickled inputs and outputs), then copied with SQL under new ids
(``ID~k``, the child links rewritten alike) until the count is reached. DBOS writes about one
workflow in 50 ms on SQLite here, so 100,000 written by DBOS alone would take over an hour;
the copies are DBOS's rows byte for byte but for their ids. A store of a tenth of them is
written the same way, for the memory check.

Then measures, each a fresh process, ``--rounds`` times (the median is reported, with the least
and greatest), wall seconds, CPU seconds and peak RSS (``wait4``):

- ``wfctl runs --json`` over the store, and ``dbos workflow list --limit N`` over it (what a
  DBOS user runs today: it lists the workflows as JSON, unpickling their inputs and outputs);
  the ratio is reported;
- streaming: the peak of the memory Python allocates (tracemalloc) while a process iterates
  ``open_source(FILE).runs()`` without keeping the runs, over the store and over its tenth:
  flat when the two are close (the rows are streamed; the listing's one statement sorts and
  counts in SQLite).

The goal (the checkpoint inspector issue): ``runs`` over 100,000 DBOS workflows in 2 s, memory
flat. Needs ``pip install -e '.[bench]'`` (dbos). ``--workflows 2000 --template 50 --rounds 1``
is a smoke run.
"""

from __future__ import annotations

import argparse
import json
import sqlite3
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from langgraph_inspect import _measure, _median

#: The DBOS app writing the template workflows: ``python -c APP URL COUNT``.
APP = textwrap.dedent(
    """
    import os, sys
    from dbos import DBOS
    DBOS(config={"name": "bench", "system_database_url": sys.argv[1], "run_admin_server": False})

    @DBOS.step()
    def step(i: int) -> dict:
        return {"i": i, "text": "step output " * 4}

    @DBOS.workflow()
    def child(i: int) -> dict:
        return step(i)

    @DBOS.workflow()
    def work(i: int) -> list:
        done = [step(i), step(i + 1)]
        if i % 10 == 0:
            done.append(child(i))
        return done

    DBOS.launch()
    for i in range(int(sys.argv[2])):
        work(i)
    os._exit(0)
    """
)
#: Each table's columns that hold a workflow id, rewritten in the copies.
ID_COLUMNS = {
    "workflow_status": ("workflow_uuid", "parent_workflow_id", "forked_from"),
    "operation_outputs": ("workflow_uuid", "child_workflow_id"),
    "workflow_input": ("workflow_uuid",),
    "workflow_output": ("workflow_uuid",),
}
#: What streams the listing and reports the peak (``python -c STREAM FILE``).
STREAM = textwrap.dedent(
    """
    import sys, tracemalloc
    from wfctl.sources import open_source
    with open_source(sys.argv[1]) as source:
        tracemalloc.start()
        count = sum(1 for _ in source.runs())
        peak = tracemalloc.get_traced_memory()[1]
    print(count, peak)
    """
)


def write_store(path: Path, workflows: int, template: int) -> None:
    """Write ``template`` workflows with DBOS into ``path``, then copy them up to
    ``workflows`` rows of ``workflow_status`` (kept when it is there already)."""
    if path.exists():
        return
    partial = path.with_suffix(".partial")
    partial.unlink(missing_ok=True)
    subprocess.run([sys.executable, "-c", APP, f"sqlite:///{partial}", str(template)], check=True)
    with sqlite3.connect(partial) as conn:
        (rows,) = conn.execute("SELECT count(*) FROM workflow_status").fetchone()
        copy = 1
        while rows < workflows:
            for table, ids in ID_COLUMNS.items():
                columns = [r[1] for r in conn.execute(f"PRAGMA table_info({table})")]
                chosen = [f"{c} || '~{copy}'" if c in ids else f'"{c}"' for c in columns]
                names = ", ".join(f'"{c}"' for c in columns)
                conn.execute(
                    f"INSERT INTO {table} ({names}) SELECT {', '.join(chosen)} FROM {table}"
                    " WHERE workflow_uuid NOT LIKE '%~%'"
                )
            conn.commit()
            (rows,) = conn.execute("SELECT count(*) FROM workflow_status").fetchone()
            copy += 1
    partial.rename(path)


def _peak(path: Path) -> dict[str, float]:
    done = subprocess.run(
        [sys.executable, "-c", STREAM, str(path)], capture_output=True, text=True, check=True
    )
    count, peak = done.stdout.split()
    return {"runs": float(count), "peak_traced_mb": int(peak) / 2**20}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("workdir", type=Path)
    parser.add_argument("--workflows", type=int, default=100_000)
    parser.add_argument("--template", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args(argv)
    args.workdir.mkdir(parents=True, exist_ok=True)
    store = args.workdir / f"dbos-{args.workflows}.sqlite"
    tenth = args.workdir / f"dbos-{args.workflows // 10}.sqlite"
    write_store(store, args.workflows, args.template)
    write_store(tenth, args.workflows // 10, args.template)
    bindir = Path(sys.executable).parent
    wfctl = [str(bindir / "wfctl"), "runs", "--json", "--store", str(store)]
    peer = [str(bindir / "dbos"), "workflow", "list", "-s", f"sqlite:///{store}"]
    peer += ["--limit", str(args.workflows)]
    rounds: dict[str, list[dict[str, float]]] = {"wfctl runs": [], "dbos workflow list": []}
    for _ in range(args.rounds):  # interleaved: a busy moment weighs on both
        rounds["wfctl runs"].append(_measure(wfctl))
        rounds["dbos workflow list"].append(_measure(peer))
    report: dict[str, Any] = {name: _median(r) for name, r in rounds.items()}
    ours = report["wfctl runs"]["seconds"]["median"]
    theirs = report["dbos workflow list"]["seconds"]["median"]
    report["ratio"] = theirs / ours if ours else None
    report["streaming"] = {"store": _peak(store), "tenth": _peak(tenth)}
    report["workflows"] = args.workflows
    text = json.dumps(report, indent=2)
    print(text)
    if args.json is not None:
        args.json.write_text(text + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
