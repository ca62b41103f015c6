"""Broken copies of a healthy store, for the hostile-input tests (one way to break it per Kind).

The healthy store holds two runs of the harness pipeline: ``other`` (completed) and, newer,
``target`` (paused at its request, 10 records). :data:`KINDS` lists the ways to break
``target``; :func:`break_store` copies the store and applies one.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import zlib
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tests.harness import harness_workload as W
from wfctl import FileCheckpointStorage
from wfctl._records._checkpoint import FORMAT_VERSION

RUN, OTHER = "target", "other"
MID_LINE = 5  # target.4: the record of step s3
MID_ID = f"{RUN}.6"  # restore/replay from here: its history holds line 5


@dataclass(frozen=True)
class Baseline:
    """The healthy store and what each read path answers on it."""

    store: Path
    head_id: str
    ids: list[str]
    latest_all: str
    runs: list[tuple[str, str, str]]
    lines: int


def build_baseline(store: Path) -> Baseline:
    """Write the healthy store at ``store`` and record what each read path answers on it."""
    storage = FileCheckpointStorage(store)
    wf = W.pipeline.build(checkpoint_storage=storage)
    asyncio.run(wf.run(W.spec_for(1, seq=2, pause=False), run_id=OTHER))
    paused = asyncio.run(wf.run(W.spec_for(2), run_id=RUN))
    assert paused.status == "paused"
    ids = [c.checkpoint_id for c in asyncio.run(storage.load_chain(RUN))]
    latest = asyncio.run(storage.get_latest())
    assert latest is not None and latest.checkpoint_id == paused.checkpoint_id
    runs = [(s.run_id, s.status, s.head_checkpoint_id) for s in asyncio.run(storage.list_runs())]
    lines = (store / "runs" / RUN / "journal.jsonl").read_bytes().count(b"\n")
    storage.close()
    return Baseline(store, paused.checkpoint_id, ids, latest.checkpoint_id, runs, lines)


# --- ways to break it -------------------------------------------------------------------------


def sign(raw: dict[str, Any], *, replace: tuple[str, str] | None = None) -> bytes:
    """Encode a record as the journal does (compact JSON, CRC-32 last), without validation.

    ``replace`` swaps a JSON fragment for raw text before signing (for nesting too deep for
    :mod:`json` to write).
    """
    raw = {k: v for k, v in raw.items() if k != "crc"}
    text = json.dumps(raw, separators=(",", ":"), ensure_ascii=False)
    if replace is not None:
        text = text.replace(*replace)
    body = text.encode()
    return b'%s,"crc":"%08x"}' % (body[:-1], zlib.crc32(body))


def edit_record(line: bytes, change: Callable[[dict[str, Any]], Any]) -> bytes:
    raw = json.loads(line)
    change(raw)
    return sign(raw)


def set_result(value: Any) -> Callable[[dict[str, Any]], Any]:
    return lambda raw: raw["data"]["steps"][0].__setitem__("result", value)


def _flip(line: bytes) -> bytes:
    at = len(line) // 2
    return line[:at] + bytes([line[at] ^ 0x04]) + line[at + 1 :]


@dataclass(frozen=True)
class Kind:
    """A way to break ``target``'s journal.

    ``region`` says what it breaks: a record in the middle (``mid``), the chain's structure
    while every record verifies (``chain``; at its end, so the last record is not the head:
    ``tail-chain``; at its start: ``root-chain``), the last record (``head``), the first
    (``root``),
    the journal file itself (``file``), its end (``cut``: whole records removed from the end, so
    what is left is a healthy shorter chain that only the run's end marker contradicts), a
    record whose data does not read as its kind's (``payload``), or a value inside a valid
    record (``value``; ``value`` in the root's input: ``input``). ``line`` is the broken line,
    if one is.
    """

    name: str
    region: str
    edit: Callable[[list[bytes], Path, Baseline], list[bytes] | None] = field(repr=False)
    line: int | None = None


def line_edit(index: int, change: Callable[[bytes], bytes]) -> Callable[..., list[bytes]]:
    def edit(lines: list[bytes], journal: Path, base: Baseline) -> list[bytes]:
        i = index if index >= 0 else len(lines) + index
        lines[i] = change(lines[i])
        return lines

    return edit


def _deep(line: bytes) -> bytes:
    depth = 100_000
    raw = json.loads(line)
    raw["data"]["steps"][0]["result"] = "@DEEP@"
    return sign(raw, replace=('"@DEEP@"', "[" * depth + "]" * depth))


def _nan(line: bytes) -> bytes:
    raw = json.loads(line)
    raw["data"]["steps"][0]["dt"] = "@NAN@"  # a bare NaN: not JSON, never written by wfctl
    return sign(raw, replace=('"@NAN@"', "NaN"))


def _foreign(lines: list[bytes], journal: Path, base: Baseline) -> list[bytes]:
    other = (journal.parent.parent / OTHER / "journal.jsonl").read_bytes().split(b"\n")
    lines[MID_LINE - 1] = other[1]
    return lines


def _delete(lines: list[bytes], journal: Path, base: Baseline) -> list[bytes]:
    del lines[MID_LINE - 1]
    return lines


def _duplicate(lines: list[bytes], journal: Path, base: Baseline) -> list[bytes]:
    lines.insert(MID_LINE, lines[MID_LINE - 1])
    return lines


def _swap(i: int, j: int) -> Callable[..., list[bytes]]:
    def edit(lines: list[bytes], journal: Path, base: Baseline) -> list[bytes]:
        lines[i], lines[j] = lines[j], lines[i]
        return lines

    return edit


def _append_stale(lines: list[bytes], journal: Path, base: Baseline) -> list[bytes]:
    return [*lines, lines[2]]


def _append_garbage(lines: list[bytes], journal: Path, base: Baseline) -> list[bytes]:
    return [*lines, b"this is not a record"]


def _replace_journal(how: str) -> Callable[..., None]:
    def edit(lines: list[bytes], journal: Path, base: Baseline) -> None:
        healthy = journal.parent.parent.parent / "healthy-copy.jsonl"
        shutil.copyfile(journal, healthy)
        journal.unlink()
        if how == "symlink":
            journal.symlink_to(healthy)
        elif how == "fifo":
            os.mkfifo(journal, 0o600)
        else:
            journal.mkdir(0o700)

    return edit


def _symlink_run_dir(lines: list[bytes], journal: Path, base: Baseline) -> None:
    run_dir = journal.parent
    elsewhere = run_dir.parent.parent.parent / "elsewhere"
    shutil.move(run_dir, elsewhere)
    run_dir.symlink_to(elsewhere, target_is_directory=True)


def _future(raw: dict[str, Any]) -> None:
    raw["v"] = FORMAT_VERSION + 1


def _older(raw: dict[str, Any]) -> None:
    # a version this wfctl reads, but not its run's: its digests would be of another hash
    raw["v"] = FORMAT_VERSION - 1


def _bad_id(raw: dict[str, Any]) -> None:
    raw["id"] = "../../escape.4"


def _bad_step_record(raw: dict[str, Any]) -> None:
    raw["data"]["steps"][0] = {"no key": True, "result": 1}


def _bad_effects(raw: dict[str, Any]) -> None:
    raw["data"]["steps"][0]["effects"] = {"state": [1]}  # served, it would set the run's state


def _steps_not_a_list(raw: dict[str, Any]) -> None:
    raw["data"]["steps"] = "x"


def _bad_input(raw: dict[str, Any]) -> None:
    raw["data"]["input"] = {"$t": "evil", "v": 1}


KINDS = [
    Kind("truncated-mid", "mid", line_edit(MID_LINE - 1, lambda b: b[: len(b) * 3 // 5]), 5),
    Kind("bitflip-mid", "mid", line_edit(MID_LINE - 1, _flip), MID_LINE),
    Kind("zeroed-mid", "mid", line_edit(MID_LINE - 1, lambda b: b"\0" * len(b)), MID_LINE),
    Kind("foreign-record-mid", "mid", _foreign, MID_LINE),
    Kind(
        "future-version-mid", "mid", line_edit(MID_LINE - 1, lambda b: edit_record(b, _future)), 5
    ),
    Kind("older-version-mid", "mid", line_edit(MID_LINE - 1, lambda b: edit_record(b, _older)), 5),
    Kind("deep-nesting-mid", "mid", line_edit(MID_LINE - 1, _deep), MID_LINE),
    Kind("nan-mid", "mid", line_edit(MID_LINE - 1, _nan), MID_LINE),
    Kind("traversal-id-mid", "mid", line_edit(MID_LINE - 1, lambda b: edit_record(b, _bad_id)), 5),
    Kind("bitflip-before-head", "mid", line_edit(-2, _flip), 9),
    Kind("deleted-mid", "chain", _delete),
    Kind("duplicated-mid", "chain", _duplicate),
    Kind("swapped-mid", "chain", _swap(MID_LINE - 1, MID_LINE)),
    Kind("bitflip-head", "head", line_edit(-1, _flip)),
    Kind("truncated-head", "head", line_edit(-1, lambda b: b[: len(b) // 2])),
    Kind("future-version-head", "head", line_edit(-1, lambda b: edit_record(b, _future))),
    Kind("garbage-line-at-end", "head", _append_garbage),
    Kind("stale-record-appended", "tail-chain", _append_stale),
    Kind("last-two-swapped", "tail-chain", _swap(-1, -2)),
    Kind("bitflip-root", "root", line_edit(0, _flip), 1),
    Kind("root-deleted", "root-chain", lambda lines, journal, base: lines[1:]),
    Kind("cut-back-head", "cut", lambda lines, journal, base: lines[:-1]),
    Kind("cut-back-3", "cut", lambda lines, journal, base: lines[:-3]),
    Kind("journal-symlink", "file", _replace_journal("symlink")),
    Kind("journal-fifo", "file", _replace_journal("fifo")),
    Kind("journal-directory", "file", _replace_journal("directory")),
    Kind("run-dir-symlink", "file", _symlink_run_dir),
    Kind(
        "unknown-tag",
        "value",
        line_edit(MID_LINE - 1, lambda b: edit_record(b, set_result({"$t": "evil", "v": 1}))),
    ),
    Kind(
        "unregistered-class",
        "value",
        line_edit(
            MID_LINE - 1,
            lambda b: edit_record(
                b, set_result({"$t": "dataclass", "n": "os.system", "v": {"command": "true"}})
            ),
        ),
    ),
    Kind(
        "bad-base64",
        "value",
        line_edit(
            MID_LINE - 1,
            lambda b: edit_record(b, set_result({"$t": "bytes", "v": "%%% not base64 %%%"})),
        ),
    ),
    Kind(
        "step-record-without-key",
        "payload",
        line_edit(MID_LINE - 1, lambda b: edit_record(b, _bad_step_record)),
        MID_LINE,
    ),
    Kind(
        "effects-state-not-an-object",
        "payload",
        line_edit(MID_LINE - 1, lambda b: edit_record(b, _bad_effects)),
        MID_LINE,
    ),
    Kind(
        "steps-not-a-list",
        "payload",
        line_edit(MID_LINE - 1, lambda b: edit_record(b, _steps_not_a_list)),
        MID_LINE,
    ),
    Kind("unknown-tag-in-input", "input", line_edit(0, lambda b: edit_record(b, _bad_input))),
]


def break_store(base: Baseline, kind: Kind, into: Path) -> Path:
    """Copy the healthy store to ``into``, break ``target`` as ``kind`` says; return the store."""
    store = into / "store"
    shutil.copytree(base.store, store, symlinks=True)
    journal = store / "runs" / RUN / "journal.jsonl"
    lines = journal.read_bytes().split(b"\n")[:-1]
    edited = kind.edit(lines, journal, base)
    if edited is not None:
        journal.write_bytes(b"".join(line + b"\n" for line in edited))
    return store
