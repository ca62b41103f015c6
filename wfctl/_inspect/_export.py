"""``wfctl export`` as data: a whole run written as one JSON or TOML document, never half a file."""

from __future__ import annotations

import errno
import json
import os
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from math import isfinite
from pathlib import Path
from typing import Any

import orjson

from wfctl._config import StoreRef
from wfctl._errors import WfctlError
from wfctl._records._checkpoint import Checkpoint
from wfctl._storage._open import within_store

from ._documents import document, summary_json
from ._json_pages import _JSON_FLOAT, _float_repr, _json_text
from ._log import read_chain
from ._show import _read_as_its_kind, _toml_text

__all__ = ["EXPORT_FORMATS", "export_run"]

EXPORT_FORMATS = ("json", "toml")


@dataclass(frozen=True, slots=True)
class ExportResult:
    """An exported run: how many checkpoints, and the file it was written to (if any).

    Without a file, ``chunks`` is the document's text, read from the store as it is iterated
    (a record that fails raises then, after the text before it: the document is left
    unfinished).
    """

    run_id: str
    format: str
    checkpoints: int
    output: Path | None = None
    chunks: Iterable[str] = ()

    def to_json(self) -> dict[str, Any]:
        """Return the ``wfctl/export-result@1`` document: what was written where."""
        return document(
            "export-result",
            {
                "run_id": self.run_id,
                "format": self.format,
                "checkpoint_count": self.checkpoints,
                "output_file": str(self.output) if self.output else None,
            },
        )


def export_run(
    store: StoreRef, run_id: str, fmt: str, output: Path | None = None, *, must_exist: bool = True
) -> ExportResult:
    """Export a run (its summary and every checkpoint) as JSON or TOML.

    The document is ``wfctl/export@1`` (docs/json.md): the run's summary, then every
    checkpoint as stored (without its checksum), each verified as :func:`run_log` verifies
    it. JSON is written a checkpoint at a time, as the run is read, and given a page (200
    checkpoints, or about a million characters) at a time, so memory grows neither with the
    run's length nor with a page of big values; TOML is made whole first (tomli_w lays out an
    array of tables from all of it). With ``output`` the document is written to a new file
    beside it, renamed over it once complete: the file is replaced whole, or left as it was (a
    device or a pipe, which cannot be replaced, is written in place). Without, the text is the
    result's ``chunks``.

    Raises:
        WfctlError: ``fmt`` is not json or toml, or ``output`` cannot be written.
        StoreLocationError: the store is missing (with ``must_exist``) or is not one.
        InvalidIdError, RunNotFoundError: no such run.
        CheckpointCorruptError: its chain cannot be trusted (the root or head: at once;
            another record of a file or PostgreSQL store, while ``chunks`` is read).
    """
    if fmt not in EXPORT_FORMATS:
        raise WfctlError(f"unknown export format {fmt!r} (choose json or toml)")
    if output is not None:
        _refuse_inside_store(store, output)
    summary, chain, _ = read_chain(store, run_id, must_exist=must_exist)
    records = map(_read_as_its_kind, chain)
    count = summary.head_seq + 1
    placed = document(
        "export", {"run": summary_json(summary), "checkpoint_count": count, "checkpoints": [None]}
    )
    if fmt == "json":
        chunks: Iterable[str] = _json_text(placed, records, _checkpoint_text)
    else:
        whole = placed | {"checkpoints": [c.to_dict() for c in records]}
        chunks = [_toml_text(whole, f"run {run_id}", "export it as JSON (--format json)")]
    if output is None:
        return ExportResult(run_id, fmt, count, None, chunks)
    _write_document(output, chunks)
    return ExportResult(run_id, fmt, count, output)


def _refuse_inside_store(store: StoreRef, output: Path) -> None:
    """Refuse to write a file inside a directory store: it would replace a run's journal, end
    marker or answers, or leave a stranger among the runs.

    Raises:
        WfctlError: ``output`` is the store's directory or inside it (links resolved).
    """
    if within_store(output, store):
        raise WfctlError(
            f"cannot write {str(output)!r}: it is inside the store {os.path.realpath(store)}, "
            "which only wfctl writes: write the export outside it"
        )


def _checkpoint_text(checkpoint: Checkpoint) -> str:
    """A checkpoint as ``json.dumps`` writes it in the export's ``checkpoints``."""
    return _checkpoint_json(checkpoint).replace("\n", "\n    ")


def _checkpoint_json(checkpoint: Checkpoint) -> str:
    """``json.dumps(checkpoint.to_dict(), indent=2, ensure_ascii=False)``, with orjson if it can.

    orjson writes the same text (see :func:`_indented_json`) but for floats, so each float is
    given as the standard library writes it (~5 µs a checkpoint of a step instead of ~30). What
    orjson refuses (an integer beyond 64 bits, a lone surrogate, nesting deeper than 255) is
    written by the standard library.
    """
    document = checkpoint.to_dict()
    try:
        return orjson.dumps(_stdlib_floats(document), option=orjson.OPT_INDENT_2).decode()
    except (orjson.JSONEncodeError, RecursionError):
        return json.dumps(document, indent=2, ensure_ascii=False)


def _stdlib_floats(value: Any) -> Any:
    """``value`` (decoded JSON) with each float as the text ``json.dumps`` writes for it."""
    if isinstance(value, str):
        return value
    if isinstance(value, dict):  # subclasses too, as json.dumps reads them
        return {key: _stdlib_floats(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [_stdlib_floats(item) for item in value]
    if isinstance(value, float):
        return orjson.Fragment(_float_repr(value) if isfinite(value) else _JSON_FLOAT.encode(value))
    return value


def _write_document(output: Path, chunks: Iterable[str]) -> None:
    """Write ``chunks`` to ``output``, replacing it whole once they are all written (see
    :func:`~wfctl._storage._fs.replacing`; a link's target is what is replaced). A file that cannot
    be written is refused, as writing it would be; what cannot be replaced (a device, a pipe, a
    file in a directory no new file can be made in) is written in place. Text UTF-8 cannot hold
    (a lone surrogate) is written as a JSON escape (see :mod:`wfctl._escapes`).

    Raises:
        WfctlError: the file cannot be written (the error is the writing's, not the reading's).
    """
    import stat

    from wfctl._escapes import ESCAPE
    from wfctl._storage._fs import OS_FS, replacing, write_all

    target = os.path.realpath(output)
    read_failed = False

    def read() -> Iterator[str]:
        nonlocal read_failed
        try:
            yield from chunks
        except BaseException:
            read_failed = True
            raise

    try:
        try:
            info: os.stat_result | None = os.stat(target)
        except FileNotFoundError:
            info = None
        if info is not None and not os.access(target, os.W_OK):  # as writing it would be
            raise PermissionError(errno.EACCES, os.strerror(errno.EACCES))
        if info is not None and (
            not stat.S_ISREG(info.st_mode)
            or not os.access(os.path.dirname(target), os.W_OK | os.X_OK)
        ):
            # What cannot be replaced (a device, a pipe; a file in a directory no new file can
            # be made in) is written in place; a directory is refused here.
            with open(target, "w", encoding="utf-8", errors=ESCAPE) as written:
                written.writelines(read())
            return
        with replacing(OS_FS, target, 0o666, durable=True) as (fd, tmp):
            if info is not None:
                os.fchmod(fd, stat.S_IMODE(info.st_mode))  # as the file it replaces
            for chunk in read():
                write_all(OS_FS, fd, chunk.encode("utf-8", ESCAPE), tmp)
    except OSError as exc:
        if read_failed:
            raise
        raise WfctlError(f"cannot write {str(output)!r}: {exc.strerror or exc}") from None
