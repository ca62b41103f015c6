"""``wfctl show RUN.SEQ`` of a long run: every record verified, one decoded.

The whole journal is checked in one read (every checksum and link, as ``runs`` trusts a run),
so a record that fails anywhere in the run is still named; only the checkpoint shown and the
run's ends are decoded, so showing one checkpoint of a long run holds little memory.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.cli.conftest import (
    count_reads,
    spoil_step_record,
    wfctl,
)
from tests.conftest import arun
from wfctl._errors import CheckpointCorruptError, CheckpointNotFoundError
from wfctl._inspect._show import show_checkpoint
from wfctl._storage import FileCheckpointStorage

STEPS = 40
HEAD = STEPS + 1


def test_one_checkpoint_is_decoded_after_every_record_verified(
    store: Path, long_run: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    chain = arun(FileCheckpointStorage(store).load_chain(long_run))
    reads = count_reads(monkeypatch)
    for seq in (0, 17, HEAD):
        assert show_checkpoint(store, f"{long_run}.{seq}") == chain[seq]
    assert reads.decoded == [*(0, HEAD, 0), *(0, HEAD, 17), *(0, HEAD, HEAD)]  # ends, then one
    with pytest.raises(CheckpointNotFoundError):
        show_checkpoint(store, f"{long_run}.{HEAD + 1}")
    with pytest.raises(CheckpointNotFoundError):
        show_checkpoint(store, "nosuchrun.0")


def test_a_failing_record_anywhere_in_the_run_is_named(store: Path, long_run: str) -> None:
    spoil_step_record(store, long_run, 30)  # after the checkpoint shown
    with pytest.raises(CheckpointCorruptError, match="checksum mismatch") as raised:
        show_checkpoint(store, f"{long_run}.5")
    assert raised.value.where.endswith("journal.jsonl:31")
    done = wfctl("show", f"{long_run}.5", "--store", store)
    assert done.code == 2 and "journal.jsonl:31: checksum mismatch" in done.error_line()
    assert done.stdout == ""
