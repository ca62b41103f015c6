"""A multi-step pipeline over local files: list, read, count words, summarise, write.

Each file is read and counted by its own step call under an explicit durable key, the file's
name (``read_file@durable.txt``, ``count_words@durable.txt``), so adding or removing a file does
not shift the identity of the others. The summary is written as ``summary.json`` to the output
directory; writing the same summary to the same place again is harmless, so a replay that
re-runs the last step stays identical.

Run it (input: ``{"source": DIR, "output": DIR}``, both optional; ``source`` defaults to
``sample_workflows/data/``, ``output`` to ``<system temp>/wfctl-samples/file_pipeline``, never
the repository)::

    wfctl run sample_workflows/file_pipeline.py
    wfctl run sample_workflows/file_pipeline.py --input '{"source": "docs", "output": "/tmp/out"}'

It returns the summary: ``{"source", "output", "files", "lines", "words", "top_words",
"per_file"}``; with the bundled data, 3 files, 8 lines and 88 words.
"""

from __future__ import annotations

import asyncio
import json
import re
import tempfile
from collections import Counter
from pathlib import Path
from typing import Any

from wfctl import step, workflow

DATA_DIR = Path(__file__).resolve().parent / "data"
_WORD = re.compile(r"[a-z']+")


def default_output_dir() -> Path:
    """Where the summary goes when the input names no output directory."""
    return Path(tempfile.gettempdir()) / "wfctl-samples" / "file_pipeline"


def _list_txt(source: str) -> list[str]:
    return sorted(p.name for p in Path(source).glob("*.txt") if p.is_file())


def _write_json(path: Path, data: Any) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, indent=2, sort_keys=True) + "\n", encoding="utf-8")


def _directories(options: dict[str, str]) -> tuple[Path, Path]:
    source = Path(options.get("source") or DATA_DIR).resolve()
    return source, Path(options.get("output") or default_output_dir()).resolve()


# File I/O runs in a worker thread (asyncio.to_thread) so a step never blocks the event loop.


@step
async def list_files(source: str) -> list[str]:
    """Return the names of the ``.txt`` files in ``source``, sorted."""
    return await asyncio.to_thread(_list_txt, source)


@step
async def read_file(path: str) -> str:
    """Return the text of one file."""
    return await asyncio.to_thread(Path(path).read_text, encoding="utf-8")


@step
async def count_words(text: str) -> dict[str, Any]:
    """Count the lines and the words of one text."""
    words = _WORD.findall(text.lower())
    return {"lines": len(text.splitlines()), "words": len(words), "counts": dict(Counter(words))}


@step
async def summarize(source: str, per_file: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """Fold the per-file counts into one summary."""
    overall: Counter[str] = Counter()
    for stats in per_file.values():
        overall.update(stats["counts"])
    return {
        "source": source,
        "files": len(per_file),
        "lines": sum(s["lines"] for s in per_file.values()),
        "words": sum(s["words"] for s in per_file.values()),
        "top_words": [[w, c] for w, c in sorted(overall.items(), key=lambda x: (-x[1], x[0]))[:5]],
        "per_file": {
            name: {"lines": s["lines"], "words": s["words"]} for name, s in per_file.items()
        },
    }


@step
async def write_summary(output: str, summary: dict[str, Any]) -> str:
    """Write the summary as ``summary.json`` in ``output``; return the file's path."""
    target = Path(output) / "summary.json"
    await asyncio.to_thread(_write_json, target, summary)
    return str(target)


@workflow(name="file_pipeline")
async def file_pipeline(message: dict[str, str] | None = None) -> dict[str, Any]:
    """Summarise the text files of a directory and write the summary to another."""
    source, output = _directories(message or {})
    names = await list_files(str(source))
    texts = await asyncio.gather(*(read_file.keyed(name)(str(source / name)) for name in names))
    stats = await asyncio.gather(
        *(count_words.keyed(name)(text) for name, text in zip(names, texts, strict=True))
    )
    summary = await summarize(str(source), dict(zip(names, stats, strict=True)))
    written = await write_summary(str(output), summary)
    return {**summary, "output": written}
