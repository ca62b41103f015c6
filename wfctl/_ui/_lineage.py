"""A run's lineage drawn as SVG: a node per record, an edge per parent, laid out by ``dot``.

The ``graphviz`` Python package writes the graph's source; Graphviz's ``dot`` (the Debian
``graphviz`` package), run with a time limit, lays it out: a chain for wfctl's runs, a tree for
a store whose histories fork. Every text taken from the store goes through ``graphviz.escape``
(no HTML-like label, no ``\\N`` escape), and ``dot`` writes it into the SVG as XML text. A
problem of the ``verify-lineage`` verdict that names a record's id marks that record's node.
Past :data:`MAX_NODES` records only the first are drawn, and the page says so. Without ``dot``
the drawing is None and the page says what to install.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final

from wfctl._sources._protocol import Entry

__all__ = ["MAX_NODES", "Drawing", "draw_lineage", "node_id", "problem_nodes"]

#: The most records one drawing holds.
MAX_NODES: Final = 400
#: How long ``dot`` may take over one drawing.
_DOT_SECONDS: Final = 20
_NO_DOT: Final = "Graphviz's dot is not installed (apt-get install graphviz): no drawing"


@dataclass(frozen=True, slots=True)
class Drawing:
    """The lineage as SVG text (None: ``dot`` is not installed or failed: ``missing`` says
    why) and how many records it holds of how many."""

    svg: str | None
    drawn: int
    total: int
    missing: str = ""


def node_id(entry: Entry) -> str:
    """Return the id a record's node has in the SVG (and its row in the timeline, ``#rec-N``)."""
    return f"node-{entry.order}"


def problem_nodes(entries: Sequence[Entry], problems: Sequence[str]) -> dict[str, list[int]]:
    """Return, for each problem, the orders of the records whose id it names (a whole id:
    ``RUN.1`` is not named by ``RUN.10``; a file named for it, ``ID.json``, names it)."""
    named: dict[str, list[int]] = {}
    for problem in problems:
        named[problem] = [
            entry.order
            for entry in entries
            if entry.entry_id in problem
            and re.search(rf"(?<![\w.-]){re.escape(entry.entry_id)}(?![\w-]|\.\d)", problem)
        ]
    return named


def draw_lineage(entries: Sequence[Entry], broken: set[int]) -> Drawing:
    """Draw ``entries`` (a run's records, in order); the orders in ``broken`` drawn red."""
    import graphviz

    drawn = entries[:MAX_NODES]
    known = {entry.entry_id for entry in drawn}
    graph = graphviz.Digraph(
        "lineage",
        graph_attr={"rankdir": "TB", "bgcolor": "transparent", "nodesep": "0.25"},
        node_attr={"shape": "box", "style": "rounded,filled", "fontname": "sans-serif"},
    )
    for entry in drawn:
        bad = entry.order in broken
        graph.node(
            f"r{entry.order}",
            graphviz.escape(f"{entry.order} {entry.kind}"[:40]),
            id=node_id(entry),
            tooltip=graphviz.escape(entry.entry_id[:200]),
            href=f"#rec-{entry.order}",
            fillcolor="#f8d0d0" if bad else "#e8eef8",
            color="#c00000" if bad else "#4060a0",
            **{"class": "record broken" if bad else "record"},
        )
    orders = {entry.entry_id: entry.order for entry in drawn}
    for entry in drawn:
        for parent in entry.parent_ids:
            if parent in known:
                graph.edge(f"r{orders[parent]}", f"r{entry.order}")
    dot = shutil.which("dot")
    if dot is None:
        return Drawing(None, 0, len(entries), _NO_DOT)
    try:
        done = subprocess.run(
            [dot, "-Tsvg"],
            input=graph.source,
            capture_output=True,
            text=True,
            timeout=_DOT_SECONDS,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        return Drawing(None, 0, len(entries), f"dot could not draw it: {exc}")
    svg = done.stdout
    if done.returncode != 0 or "<svg" not in svg:
        return Drawing(None, 0, len(entries), f"dot could not draw it: {done.stderr.strip()}")
    return Drawing(svg[svg.index("<svg") :], len(drawn), len(entries))
