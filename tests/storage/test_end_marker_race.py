"""A run that ends while another process reads it is not reported as cut back.

A run's end marker names the last record committed when it ended (see ``wfctl._storage._marker``).
A reader that read the journal first and the marker after could see a run end in between: the
journal as it was (seq N), the marker written since (seq N + 1), and report committed records
"cut off its end" -- a healthy run called broken (``wfctl verify-lineage`` exited 1 beside
running workflows). Every reader reads the marker first: it never names more than the journal
held when it was written, and a journal only grows.

The run ends exactly between the reader's two reads: the reader's file system (the store's
``fs=`` seam) runs the other writer when the reader closes the journal, on a thread of its own
with its own storage and event loop, as another process would, and waits for it.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable, Coroutine
from pathlib import Path
from typing import Any

import pytest

from tests.storage.helpers import arun, ckpt
from wfctl import FileCheckpointStorage
from wfctl._storage._appender import READ_FLAGS
from wfctl._storage._fs import OsFileSystem

RUN = "r1"


class EndsOnClose(OsFileSystem):
    """The real file system; runs ``then`` once, when a journal read through it is closed."""

    def __init__(self) -> None:
        self.then: Callable[[], None] | None = None
        self._journals: set[int] = set()

    def open(self, path: str, flags: int, mode: int = 0o777) -> int:
        fd = super().open(path, flags, mode)
        if path.endswith("journal.jsonl") and flags == READ_FLAGS:
            self._journals.add(fd)
        return fd

    def close(self, fd: int) -> None:
        super().close(fd)
        if fd in self._journals:
            self._journals.discard(fd)
            then, self.then = self.then, None
            if then is not None:
                then()


def _elsewhere(work: Coroutine[Any, Any, None]) -> None:
    """Run ``work`` to its end on another thread's event loop, as another process would."""
    thread = threading.Thread(target=asyncio.run, args=(work,))
    thread.start()
    thread.join()


async def _complete(store: Path) -> None:
    writer = FileCheckpointStorage(store)
    try:
        await writer.save(ckpt(RUN, 3, "completed"))  # writes the end marker too
    finally:
        await writer.aclose()


def _reader_meeting_the_end(store: Path) -> FileCheckpointStorage:
    """A store of one running run (seq 0-2), and a reader during whose read the run ends."""

    async def start() -> None:
        writer = FileCheckpointStorage(store)
        for seq in range(3):
            await writer.save(ckpt(RUN, seq))
        await writer.aclose()

    arun(start())
    fs = EndsOnClose()
    fs.then = lambda: _elsewhere(_complete(store))
    return FileCheckpointStorage(store, fs=fs)


async def _read_run(reader: FileCheckpointStorage) -> int:
    journal = await reader.read_run(RUN)
    assert journal.problems == ()
    return journal.checkpoints[-1].seq


async def _get_latest(reader: FileCheckpointStorage) -> int:
    head = await reader.get_latest(run_id=RUN)
    assert head is not None
    return head.seq


async def _stream(reader: FileCheckpointStorage) -> int:
    _summary, records = reader.stream_chain(RUN)
    return [record.seq for record in records][-1]


async def _stream_checked(reader: FileCheckpointStorage) -> int:
    _summary, records = reader.stream_checked_chain(RUN)
    return [record.seq for record in records][-1]


@pytest.mark.parametrize("read", [_read_run, _get_latest, _stream, _stream_checked])
def test_a_run_that_ends_during_a_read_is_read_as_it_was(
    tmp_path: Path, read: Callable[[FileCheckpointStorage], Coroutine[Any, Any, int]]
) -> None:
    reader = _reader_meeting_the_end(tmp_path / "store")

    seen = arun(read(reader))

    assert seen in (2, 3)  # before the end or after it: either is what the journal held
    assert reader._fs.then is None, "the run did not end during the read"  # type: ignore[attr-defined]
    assert arun(_read_run(reader)) == 3  # and the ended run reads whole afterwards
