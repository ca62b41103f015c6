"""Builders shared by the storage tests (imported as ``tests.storage.helpers``)."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from collections.abc import Coroutine, Iterable
from pathlib import Path
from typing import Any, TypeVar

from wfctl._records._checkpoint import Checkpoint, Kind, checkpoint_id_for

T = TypeVar("T")

_KINDS_BY_SEQ = {0: "root"}


def arun(coro: Coroutine[Any, Any, T]) -> T:
    """Run ``coro`` on a fresh event loop (no pytest-asyncio here)."""
    return asyncio.run(coro)


REPO = Path(__file__).resolve().parents[2]


def start_holder(
    children: list[subprocess.Popen[str]], script: str, args: list[str], ready: str
) -> subprocess.Popen[str]:
    """Start ``python -c script args`` in the repository and wait for its ``ready`` line.

    The child goes into ``children``, for :func:`stop_children` to stop.
    """
    child = subprocess.Popen(
        [sys.executable, "-c", script, *args],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        cwd=REPO,
        env={**os.environ, "PYTHONPATH": str(REPO)},
    )
    children.append(child)
    assert child.stdout is not None
    assert child.stdout.readline().strip() == ready
    return child


def stop_children(children: Iterable[subprocess.Popen[str]]) -> None:
    """Kill the child processes a test left running, reap them and close their pipes."""
    for child in children:
        if child.poll() is None:
            child.kill()
        child.wait()
        for stream in (child.stdin, child.stdout):
            if stream is not None:
                stream.close()


def ckpt(
    run_id: str,
    seq: int,
    kind: str | None = None,
    *,
    workflow: str = "wf",
    minute: int = 0,
    data: dict[str, Any] | None = None,
    parent: str | bool | None = True,
    origin: tuple[str, str] | None = None,
) -> Checkpoint:
    """Build checkpoint ``seq`` of ``run_id`` (parent = the previous seq unless given).

    Without ``data``, the record's data is ``{"n": seq}``, with an empty ``steps`` list for a
    step record (so that it reads as one, as ``verify-lineage`` checks).
    """
    record_kind = Kind(kind or _KINDS_BY_SEQ.get(seq, "step"))
    if data is None:
        data = {"n": seq, "steps": []} if record_kind == Kind.STEP else {"n": seq}
    if parent is True:
        parent_id = checkpoint_id_for(run_id, seq - 1) if seq else None
    else:
        parent_id = parent or None
    return Checkpoint(
        run_id=run_id,
        seq=seq,
        kind=record_kind,
        workflow_name=workflow,
        timestamp=f"2026-01-01T00:{minute:02d}:{seq % 60:02d}.{seq:06d}+00:00",
        previous_checkpoint_id=parent_id,
        origin_run_id=origin[0] if origin else None,
        origin_checkpoint_id=origin[1] if origin else None,
        data=data,
    )


async def build_run(
    storage: Any,
    run_id: str,
    length: int,
    *,
    workflow: str = "wf",
    minute: int = 0,
    last_kind: str | None = None,
    last_data: dict[str, Any] | None = None,
) -> list[Checkpoint]:
    """Save a run of ``length`` checkpoints (root, steps, optionally a special head)."""
    saved = []
    for seq in range(length):
        is_last = seq == length - 1
        kind = last_kind if is_last and last_kind and seq else None
        data = last_data if is_last and last_data is not None else None
        checkpoint = ckpt(run_id, seq, kind, workflow=workflow, minute=minute, data=data)
        await storage.save(checkpoint)
        saved.append(checkpoint)
    return saved


def pause_data(*request_ids: str) -> dict[str, Any]:
    """The data of a pause checkpoint waiting for ``request_ids``."""
    return {
        "reason": "request",
        "requests": [{"request_id": rid, "request_data": {"q": rid}} for rid in request_ids],
    }


def rewrite_as_format_version_1(path: Path, calls: Iterable[tuple[Any, ...]]) -> None:
    """Rewrite the journal at ``path`` as wfctl wrote it in format version 1.

    Each record gets ``"v":1`` and each step's BLAKE3 digest the blake2b digest of the same
    call (``calls``: the positional arguments of every call the run made); the fields and their
    order are version 2's (see :func:`rewrite_as_format_version_2`). The end marker goes: it
    names the checksum of the last record as first written.
    """
    from wfctl._records._codec import digest

    blake2b_of = {digest(args, {}): digest(args, {}, version=1) for args in calls}
    rewrite_as_format_version_2(path, version=1, digests=blake2b_of)


def rewrite_as_format_version_2(
    path: Path, *, version: int = 2, digests: dict[str, str] | None = None
) -> None:
    """Rewrite the journal at ``path`` as wfctl wrote it in format version 2: every field of
    every record (``seq`` and ``prev`` too), its data as it is (never packed), each argument
    as it is (never a reference). The end marker goes, as above."""
    import dataclasses

    from wfctl._records._refs import resolved
    from wfctl._storage._journal import decode_record, encode_record

    records = [
        decode_record(line, f"{path}:{n}")
        for n, line in enumerate(path.read_bytes().splitlines(), 1)
    ]
    lines = []
    for record in resolved(records, str(path)):
        for entry in record.data.get("steps", []) if digests is not None else ():
            entry["digest"] = digests[entry["digest"]]
        lines.append(encode_record(dataclasses.replace(record, version=version)))
    path.write_bytes(b"".join(lines))
    (path.parent / "end.json").unlink(missing_ok=True)
