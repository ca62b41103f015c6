"""Bytes on disk per step: wfctl's stores beside LangGraph's and agent-framework's, and what one
step record spends on framing.

    python bench/bytes_per_step.py [--steps 100] [--text-kb 8] [--small-steps 1000]
        [--only wfctl_file,wfctl_file_answered,wfctl_postgres,langgraph_sqlite,agent_framework]
        [--own-fields key,digest,args,result] [--workdir DIR] [--json FILE]

1. The text pipeline: the run's input is an English-like text of ``--text-kb`` KB
   (``_prose.py``: seeded, compresses like prose), and each of ``--steps`` steps takes the text
   and returns it with one sentence replaced. Run on each engine into a fresh store
   (``_text_pipeline.py`` says what is measured for each); each row gives the store's bytes,
   per step, and per step over the text's size ("x text/step": 2 when a step stores its
   argument and its result whole and nothing else). A row whose final text differs from the
   expected one is "wrong"; an engine that cannot run here says why. ``wfctl_file_answered``
   is wfctl's file store with the run asking a question after each step, each answered by a
   resume: a new writer for each step, as when a person answers a paused run.
2. Small steps: ``--small-steps`` steps on wfctl's file store, each taking and returning a
   100-character string (the workload of ``run.py``): the store's bytes per step, the step
   records' mean size, and the bytes of one typical step record (the median by size) parted
   by field (``_framing.py``): the step's own values (``--own-fields``) against every other
   field found in the record, whatever the record format.

Prints a table; ``--json FILE`` writes the figures too. Exit 1 when a wfctl row failed or any
row's text is wrong.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import tempfile
import time
from collections.abc import Sequence
from importlib import metadata
from pathlib import Path
from typing import Any

BENCH = Path(__file__).resolve().parent
sys.path.insert(1, str(BENCH.parent))  # the wfctl being developed
sys.path.insert(0, str(BENCH))

import _prose  # noqa: E402 - needs the path above
from _framing import OWN, breakdown, step_records  # noqa: E402
from _text_pipeline import ENGINES, Unavailable  # noqa: E402
from engines import _common as common  # noqa: E402

Row = dict[str, Any]
#: Distributions whose versions the report names.
VERSIONS = ("wfctl", "langgraph", "langgraph-checkpoint-sqlite", "agent-framework-core")


def text_pipeline(engine: str, texts: Sequence[str], where: Path) -> Row:
    """Run the pipeline on ``engine`` into ``where``; return its row.

    Args:
        texts: the input, then what each step must return in turn.
    """
    label, run = ENGINES[engine]
    row: Row = {"engine": engine, "label": label, "status": "ok", "note": ""}
    steps = len(texts) - 1
    started = time.perf_counter()
    try:
        stored = run(texts[0], steps, where)
    except Unavailable as exc:
        return {**row, "status": "skipped", "note": str(exc)}
    except Exception as exc:  # a peer's failure is its row's news, not the bench's end
        return {**row, "status": "error", "note": f"{type(exc).__name__}: {exc}"[:200]}
    per_step = stored.total_bytes / steps
    row.update(
        seconds=round(time.perf_counter() - started, 2),
        measured=stored.measured,
        total_bytes=stored.total_bytes,
        bytes_per_step=round(per_step, 1),
        x_text_per_step=round(per_step / _mean_bytes(texts[1:]), 3),
        detail=stored.detail,
    )
    if stored.output != texts[-1]:
        row.update(status="wrong", note="the final text is not the expected one")
    return row


def small_steps(steps: int, where: Path, own: Sequence[str]) -> Row:
    """Run ``steps`` steps of 100 characters on wfctl's file store; part a typical record."""
    from engines.wfctl_engine import sequential_wf  # run.py's workflow, run.py's figures

    from wfctl import FileCheckpointStorage

    store = where / "wfctl-small"
    started = time.perf_counter()
    wf = sequential_wf.build(checkpoint_storage=FileCheckpointStorage(store))
    result = asyncio.run(wf.run(steps))
    seconds = time.perf_counter() - started
    files, size, _ = common.disk_usage(store)
    records = step_records(store, own)
    typical = sorted(records, key=len)[len(records) // 2] if records else b""
    parted = breakdown(typical, own)
    right = result.get_outputs()[-1] == common.expected_outputs(steps)[-1]
    return {
        "status": "ok" if right else "wrong",
        "steps": steps,
        "seconds": round(seconds, 2),
        "files": files,
        "total_bytes": size,
        "bytes_per_step": round(size / steps, 1),
        "step_records": len(records),
        "record_bytes_mean": round(statistics.fmean(map(len, records)), 1) if records else None,
        "typical_record": {
            "total": parted.total,
            "own": parted.own,
            "framing": parted.framing,
            "fields": [{"field": p.field, "bytes": p.bytes, "own": p.own} for p in parted.parts],
        },
    }


def render(report: Row) -> str:
    """The report as people read it: the pipeline's table, then the small steps' framing."""
    config = report["config"]
    text = report["text"]
    out = [
        f"Text pipeline: {config['steps']} steps, each given a text of {text['first_bytes']:,}"
        f" bytes (mean {text['mean_bytes']:,.0f} over the steps) and returning it with one"
        " sentence replaced",
        "",
        f"  {'engine':<40} {'total bytes':>12} {'bytes/step':>11} {'x text/step':>11}  measured",
    ]
    for row in report["text_pipeline"]:
        if "total_bytes" not in row:
            out.append(f"  {row['label']:<40} {row['status']}: {row['note']}")
            continue
        out.append(
            f"  {row['label']:<40} {row['total_bytes']:>12,} {row['bytes_per_step']:>11,.0f}"
            f" {row['x_text_per_step']:>10.2f}x  {row['measured']}"
            + (f" [{row['status']}: {row['note']}]" if row["status"] != "ok" else "")
        )
        out += [f"  {'':<40} {line}" for line in _detail_lines(row["detail"])]
    small = report["small_steps"]
    record = small["typical_record"]
    out += [
        "",
        f"Small steps: {small['steps']:,} steps of a 100-character argument and result, wfctl's"
        f" file store: {small['total_bytes']:,} bytes, {small['bytes_per_step']:,.0f} a step;"
        f" {small['step_records']:,} step records"
        + (
            f" of {small['record_bytes_mean']} bytes on average"
            if small["step_records"]
            else " (no JSON line found that holds a step's own fields)"
        )
        + (f" [{small['status']}]" if small["status"] != "ok" else ""),
        f"One typical step record (the median by size): {record['total']} bytes, the step's own"
        f" ({', '.join(config['own_fields'])}) {record['own']}, framing {record['framing']}",
        "",
        f"  {'field':<36} {'bytes':>6}",
    ]
    out += [
        f"  {part['field']:<36} {part['bytes']:>6}" + ("  own" if part["own"] else "")
        for part in record["fields"]
    ]
    return "\n".join(out)


def _detail_lines(detail: Row) -> list[str]:
    if "blob_bytes" in detail:
        return [
            f"blobs: {detail['blob_bytes']:,} bytes ({detail['checkpoints']} checkpoints"
            f" {detail['checkpoint_blob_bytes']:,}, {detail['writes']} writes"
            f" {detail['write_blob_bytes']:,})"
        ]
    if "record_bytes" in detail:
        return [
            f"records: {detail['record_bytes']:,} bytes as written (octet_length),"
            f" {detail['stored_bytes']:,} as stored (pg_column_size), {detail['records']} rows"
        ]
    return []


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--steps", type=int, default=100, help="steps of the text pipeline")
    parser.add_argument("--text-kb", type=float, default=8, help="size of the pipeline's text")
    parser.add_argument("--small-steps", type=int, default=1000, help="steps of 100 characters")
    parser.add_argument("--only", default=",".join(ENGINES), help="the pipeline's engines")
    parser.add_argument("--own-fields", default=",".join(OWN), help="a step's own")
    parser.add_argument("--workdir", type=Path, help="where the stores go (default: a temp dir)")
    parser.add_argument("--json", type=Path, help="write the report here as JSON too")
    args = parser.parse_args(argv)
    unknown = set(args.only.split(",")) - set(ENGINES)
    if unknown:
        parser.error(f"--only: no engine {', '.join(sorted(unknown))} (have {', '.join(ENGINES)})")
    if args.steps < 1 or args.small_steps < 1 or args.text_kb <= 0:
        parser.error("--steps and --small-steps take 1 or more, --text-kb more than 0")
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    own = args.own_fields.split(",")
    started = time.perf_counter()
    prose = _prose.text(int(args.text_kb * 1024))
    texts = [prose]
    for _ in range(args.steps):
        texts.append(_prose.edit(texts[-1]))
    if args.workdir:
        args.workdir.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="bytes-per-step-", dir=args.workdir) as scratch:
        rows = []
        for engine in [e for e in ENGINES if e in args.only.split(",")]:
            where = Path(scratch, engine)
            where.mkdir()
            rows.append(text_pipeline(engine, texts, where))
            print(f"  {engine}: {rows[-1]['status']}", file=sys.stderr, flush=True)
        small = small_steps(args.small_steps, Path(scratch), own)
    report: Row = {
        "config": {
            "steps": args.steps,
            "text_kb": args.text_kb,
            "small_steps": args.small_steps,
            "own_fields": own,
            "wall_seconds": round(time.perf_counter() - started, 1),
        },
        "versions": {name: _version(name) for name in VERSIONS},
        "text": {
            "first_bytes": len(prose.encode()),
            "mean_bytes": round(_mean_bytes(texts[1:]), 1),
        },
        "text_pipeline": rows,
        "small_steps": small,
    }
    print(render(report))
    if args.json:
        args.json.write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    failed = [r for r in rows if r["status"] == "wrong"]
    failed += [r for r in rows if r["engine"].startswith("wfctl") and r["status"] == "error"]
    return 1 if failed or small["status"] != "ok" else 0


def _mean_bytes(texts: Sequence[str]) -> float:
    """The mean size of ``texts`` in UTF-8: the "text" of "x text/step"."""
    return statistics.fmean(len(text.encode()) for text in texts)


def _version(distribution: str) -> str | None:
    try:
        return metadata.version(distribution)
    except metadata.PackageNotFoundError:
        return None


if __name__ == "__main__":
    sys.exit(main())
