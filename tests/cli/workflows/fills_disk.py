"""A workflow whose failure is too large to record under a small file-size limit.

One step records a small result; then the body fails with an error whose message is larger
than the room left in the journal, so writing the ``failed`` checkpoint fails too (the test
runs wfctl with ``RLIMIT_FSIZE`` set, so the kernel stores part of it and refuses the rest).
"""

from __future__ import annotations

import base64
import hashlib

from wfctl import step, workflow


@step
async def small(size: int) -> int:
    """A result that fits."""
    return size


@workflow(name="fills_disk")
async def fills_disk(size: int) -> int:
    """Record one step, then fail with a message of ``size`` characters that do not compress
    (a record's big data is stored compressed)."""
    await small(size)
    noise = base64.b64encode(hashlib.shake_256(b"fills").digest(size)).decode()
    raise RuntimeError("xxx" + noise[: size - 3])
