"""``wfctl show`` as data: one checkpoint read strictly with its run, as JSON or TOML (TOML's limits, shared with ``export``)."""

from __future__ import annotations

from typing import Any, Final

from wfctl._config import StoreRef
from wfctl._errors import CheckpointNotFoundError, RunNotFoundError, WfctlError
from wfctl._records._checkpoint import Checkpoint, split_checkpoint_id
from wfctl._records._payloads import payload_of
from wfctl._storage import FileCheckpointStorage
from wfctl._storage._open import on_store, open_storage
from wfctl._storage._pages import PagedRun, PagedStore

from ._documents import document

__all__ = ["TOML_MAX_DEPTH", "checkpoint_json", "checkpoint_toml", "show_checkpoint", "to_toml"]


def show_checkpoint(store: StoreRef, checkpoint_id: str, *, must_exist: bool = True) -> Checkpoint:
    """Return one checkpoint, read strictly with its run.

    Raises:
        StoreLocationError: the store is missing (with ``must_exist``) or is not one.
        InvalidIdError, CheckpointNotFoundError: no such checkpoint.
        CheckpointCorruptError: its run's chain cannot be trusted, or its data does not read
            as its kind's.
    """

    run_id, seq = split_checkpoint_id(checkpoint_id)
    storage = open_storage(store, must_exist=must_exist)
    found: Checkpoint | None
    if isinstance(storage, FileCheckpointStorage):
        try:
            found = storage.checked_record(run_id, seq)
        except RunNotFoundError:
            raise CheckpointNotFoundError(checkpoint_id) from None
    elif isinstance(storage, PagedStore) and (ends := PagedRun.opened(storage, run_id)):
        reader, (chain_ends, _, head) = ends
        found = reader.record_at(seq, chain_ends, head)
    else:  # another store, or a database run without ends that verify: read whole
        from wfctl._engine._restore import load_target

        return _read_as_its_kind(
            on_store(
                store, lambda storage: load_target(storage, checkpoint_id), must_exist=must_exist
            )[1]
        )
    if found is None:
        raise CheckpointNotFoundError(checkpoint_id)
    return _read_as_its_kind(found)


def checkpoint_json(checkpoint: Checkpoint) -> dict[str, Any]:
    """Return the ``wfctl/show@1`` document: the checkpoint's record exactly as stored."""
    return document(
        "show",
        {
            "run_id": checkpoint.run_id,
            "checkpoint_id": checkpoint.checkpoint_id,
            "record": checkpoint.to_dict(),
        },
    )


def checkpoint_toml(checkpoint: Checkpoint) -> str:
    """Return the checkpoint's record as stored, as TOML (``wfctl show --toml``).

    Raises:
        WfctlError: TOML cannot hold the record, as :func:`export_run` refuses a run.
    """
    return _toml_text(
        checkpoint.to_dict(), f"checkpoint {checkpoint.checkpoint_id}", "show it as JSON (--json)"
    )


def _toml_safe(value: Any) -> Any:
    """Return ``value`` with nulls TOML cannot hold: dropped from tables, ``"null"`` in arrays."""
    if isinstance(value, dict):
        return {str(k): _toml_safe(v) for k, v in value.items() if v is not None}
    if isinstance(value, list | tuple):
        return ["null" if v is None else _toml_safe(v) for v in value]
    return value


def to_toml(document: dict[str, Any]) -> str:
    """Return ``document`` as TOML (TOML has no null: see :func:`_toml_safe`)."""
    import tomli_w

    return tomli_w.dumps(_toml_safe(document))


def _read_as_its_kind(checkpoint: Checkpoint) -> Checkpoint:
    """``checkpoint``, once its data has read as its kind's, as ``log`` and a resume read it.

    Raises:
        CheckpointCorruptError: it does not (a record edited with its checksum).
    """
    payload_of(checkpoint)
    return checkpoint


#: TOML has no limit of its own; tomli_w writes and tomllib reads by recursion, so what they
#: manage depends on the interpreter's stack (about 240 arrays deep on Python 3.11, 330 on 3.13).
#: wfctl counts instead, with room to spare below both, so that what ``export --format toml``
#: and ``show --toml`` write, and what they refuse, is the same on every supported Python.
TOML_MAX_DEPTH: Final = 100


def _toml_text(document: dict[str, Any], holder: str, instead: str) -> str:
    """``document`` as TOML, or why TOML cannot hold it (``export`` and ``show`` alike).

    Args:
        document: the export or the record.
        holder: what the refusal says holds it (``run RUN``, ``checkpoint RUN.SEQ``).
        instead: what the refusal says to do instead (``export it as JSON (--format json)``).

    Raises:
        WfctlError: values nest deeper than :data:`TOML_MAX_DEPTH`, a string holds a lone
            surrogate (TOML text is Unicode scalar values only, and has no escape for one), or
            an integer is beyond 64 bits (a TOML reader must refuse one it cannot hold exactly,
            and 64 bits is all TOML asks a reader to hold). Checked in that order.
    """
    depth, wide = _toml_limits(document)
    if depth > TOML_MAX_DEPTH:
        raise WfctlError(
            f"{holder} holds values nested deeper than wfctl can write as TOML (more than "
            f"{TOML_MAX_DEPTH} levels of tables and arrays): {instead}"
        )
    try:
        text = to_toml(document)
        text.encode()
    except UnicodeEncodeError as exc:
        held = exc.object[exc.start : exc.end]
        raise WfctlError(
            f"{holder} holds text TOML cannot hold ({held!a}, a lone surrogate): {instead}"
        ) from None
    if wide is not None:
        raise WfctlError(
            f"{holder} holds an integer TOML cannot hold ({wide.bit_length()} bits, beyond "
            f"64): {instead}"
        )
    return text


def _toml_limits(document: Any) -> tuple[int, int | None]:
    """How deep ``document``'s dicts and lists nest (itself 1), and its first integer outside
    64-bit signed range (or None). One walk, without recursion: any depth is measured.
    """
    deepest = 0
    wide: int | None = None
    stack: list[tuple[Any, int]] = [(document, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict):
            deepest = max(deepest, depth)
            stack.extend((value, depth + 1) for value in item.values())
        elif isinstance(item, list | tuple):
            deepest = max(deepest, depth)
            stack.extend((value, depth + 1) for value in item)
        elif wide is None and type(item) is int and not -(2**63) <= item < 2**63:
            wide = item
    return deepest, wide
