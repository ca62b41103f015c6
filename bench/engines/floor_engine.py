"""The floor: what a durable step commit costs the disk itself, with no engine around it.

A plain loop appends one record of the size of a wfctl step record to a file and makes it
durable with ``os.fdatasync``, N times. wfctl's per-step cost is reported as a multiple of this.
"""

from __future__ import annotations

import os

from . import _common as common
from ._common import Job, Measurement

__all__ = ["big_payload", "sequential"]

#: Used when the harness has no measured wfctl record size to pass (``record_bytes`` option).
DEFAULT_RECORD_BYTES = 300


async def sequential(job: Job) -> Measurement:
    """Append and fdatasync N records of ``record_bytes`` bytes (newline included)."""
    size = int(job.options.get("record_bytes", DEFAULT_RECORD_BYTES))
    records = [
        (common.payload(i) * (size // common.PAYLOAD_CHARS + 1))[: size - 1].encode() + b"\n"
        for i in range(job.n)
    ]
    fd = os.open(job.store / "journal.jsonl", os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    try:
        _, m_seconds = await common.timed(_append_all(fd, records))
    finally:
        os.close(fd)
    files, size_on_disk, largest = common.disk_usage(job.store)
    return Measurement(
        seconds=m_seconds,
        records=job.n,
        files=files,
        bytes=size_on_disk,
        largest_file=largest,
        detail={"record_bytes": size},
    )


async def big_payload(job: Job) -> Measurement:
    """Append and fdatasync N records of 1 MB (the size of a wfctl big-payload record)."""
    options = {"record_bytes": common.BIG_CHARS + 200, **job.options}
    return await sequential(
        Job(job.engine, job.variant, job.scenario, job.phase, job.n, job.store, options)
    )


async def _append_all(fd: int, records: list[bytes]) -> None:
    for record in records:
        os.write(fd, record)
        os.fdatasync(fd)
