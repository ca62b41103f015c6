"""One process, one measurement: ``python bench/_worker.py ENGINE SCENARIO N STORE_DIR``.

Prints exactly one JSON line on stdout: the engine's :class:`Measurement` plus ``status``
(``ok``, ``wrong`` when a result check failed, ``n/a`` when the engine cannot express the
scenario, ``not installed`` when the engine cannot be imported) and ``note``. Any other failure
exits non-zero with a traceback on stderr; the harness reports it as an error.

Scenarios spanning processes are split into phases, each run by its own worker:
``restore_setup`` then ``restore``; ``pause`` then ``resume``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from pathlib import Path
from typing import Any

BENCH = Path(__file__).resolve().parent
# The repository root goes ahead of site-packages so the wfctl being developed is measured,
# whether or not it was installed with `pip install -e .`.
sys.path.insert(1, str(BENCH.parent))

from engines import ENGINES, load  # noqa: E402 - needs the path above
from engines._common import Job, NotApplicable  # noqa: E402

#: Worker scenario -> (engine function, phase).
SCENARIOS: dict[str, tuple[str, str]] = {
    "sequential": ("sequential", "run"),
    "big_payload": ("big_payload", "run"),
    "fanout": ("fanout", "run"),
    "restore_setup": ("restore", "setup"),
    "restore": ("restore", "measure"),
    "pause": ("pause_resume", "pause"),
    "resume": ("pause_resume", "resume"),
    "populate": ("populate", "run"),
}


def measure(
    engine: str, scenario: str, n: int, store: Path, options: dict[str, Any]
) -> dict[str, Any]:
    """Make one measurement and return the JSON object the worker prints."""
    row: dict[str, Any] = {"engine": engine, "scenario": scenario, "n": n}
    try:
        module = load(engine)
    except ModuleNotFoundError as exc:  # a broken package (ImportError) is an error, not this
        return row | {"status": "not installed", "note": f"{type(exc).__name__}: {exc}"}
    function_name, phase = SCENARIOS[scenario]
    function = getattr(module, function_name, None)
    if function is None:
        return row | {"status": "n/a", "note": f"{engine} has no {function_name} scenario"}
    store.mkdir(parents=True, exist_ok=True)
    job = Job(engine, ENGINES[engine].variant, scenario, phase, n, store, options)
    try:
        measurement = asyncio.run(function(job))
    except NotApplicable as exc:
        return row | {"status": "n/a", "note": str(exc)}
    row["status"] = "wrong" if measurement.problems else "ok"
    row["note"] = "; ".join(measurement.problems)
    row.update(measurement.to_json())
    return row


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("engine", choices=sorted(ENGINES))
    parser.add_argument("scenario", choices=sorted(SCENARIOS))
    parser.add_argument("n", type=int, help="number of step calls")
    parser.add_argument("store", type=Path, help="directory the engine stores checkpoints in")
    parser.add_argument(
        "--option",
        action="append",
        default=[],
        metavar="KEY=JSON",
        help="scenario option, e.g. record_bytes=300 (floor) or runs=100 (populate)",
    )
    args = parser.parse_args()
    options = {k: json.loads(v) for k, _, v in (o.partition("=") for o in args.option)}
    print(json.dumps(measure(args.engine, args.scenario, args.n, args.store, options)), flush=True)


if __name__ == "__main__":
    main()
