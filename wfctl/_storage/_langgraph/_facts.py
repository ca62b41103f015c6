"""Facts of a LangGraph checkpoint row, read without building any object it names.

A SQLite row's ``checkpoint`` is msgpack: it is decoded with the plain ``msgpack`` decoder and
an extension hook that keeps only the extension's code (code 7 is a DeltaChannel snapshot), so
no module is imported and nothing is constructed. ``metadata`` is JSON.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any

import msgpack  # type: ignore[import-untyped]  # msgpack ships no type information

from ._keep import Facts, UnprovenThreadError

__all__ = [
    "DELTA_SNAPSHOT_EXT",
    "facts_of",
    "grouped",
    "is_delta_snapshot",
    "metadata_facts",
    "removed_ids",
]

#: LangGraph's msgpack extension code of a ``_DeltaSnapshot``.
DELTA_SNAPSHOT_EXT = 7


class _Ext:
    """An extension value, described by its code only."""

    __slots__ = ("code",)

    def __init__(self, code: int) -> None:
        self.code = code


def _ext(code: int, _data: bytes) -> _Ext:
    return _Ext(code)


def metadata_facts(metadata: Any) -> tuple[frozenset[str], str | None, bool]:
    """The DeltaChannels a checkpoint's metadata names (``counters_since_delta_snapshot``), its
    ``parents[""]``, and whether it says DeltaChannel writes are versioned (a form this
    decision does not know)."""
    if isinstance(metadata, bytes | str):
        metadata = json.loads(metadata)
    if not isinstance(metadata, dict):
        return frozenset(), None, False
    counters = metadata.get("counters_since_delta_snapshot")
    delta = frozenset(counters) if isinstance(counters, dict) else frozenset()
    parents = metadata.get("parents")
    root = parents.get("") if isinstance(parents, dict) else None
    return delta, root if isinstance(root, str) else None, "delta_writes_versioned" in metadata


def facts_of(
    checkpoint_id: str, parent: str | None, kind: str | None, checkpoint: bytes, metadata: Any
) -> Facts:
    """Read the :class:`Facts` of a SQLite checkpoint row.

    Raises:
        UnprovenThreadError: the row is not msgpack (a ``pickle`` row is never loaded), cannot
            be decoded, or its metadata names a DeltaChannel form not known here.
    """
    if kind != "msgpack":
        raise UnprovenThreadError(f"checkpoint {checkpoint_id} is of type {kind!r}, not msgpack")
    try:
        body = msgpack.unpackb(checkpoint, ext_hook=_ext, strict_map_key=False, raw=False)
        delta, root, versioned = metadata_facts(metadata)
    except (ValueError, msgpack.UnpackException) as exc:
        raise UnprovenThreadError(f"checkpoint {checkpoint_id} cannot be decoded: {exc}") from None
    if versioned:
        raise UnprovenThreadError(f"checkpoint {checkpoint_id} has versioned DeltaChannel writes")
    values = body.get("channel_values") if isinstance(body, dict) else None
    if not isinstance(values, dict):
        raise UnprovenThreadError(f"checkpoint {checkpoint_id} holds no channel_values")
    snapshots = (
        k for k, v in values.items() if isinstance(v, _Ext) and v.code == DELTA_SNAPSHOT_EXT
    )
    version = body.get("v")
    return Facts(
        parent=parent,
        seeds=frozenset(str(k) for k in values),
        delta=delta | frozenset(str(k) for k in snapshots),
        root=root,
        version=version if isinstance(version, int) else 0,
    )


def is_delta_snapshot(head: bytes) -> bool:
    """Whether a msgpack value starting with ``head`` (its first 6 bytes) is an extension of
    :data:`DELTA_SNAPSHOT_EXT`."""
    code_at = {0xD4: 1, 0xD5: 1, 0xD6: 1, 0xD7: 1, 0xD8: 1, 0xC7: 2, 0xC8: 3, 0xC9: 5}
    at = code_at.get(head[0]) if head else None
    return at is not None and len(head) > at and head[at] == DELTA_SNAPSHOT_EXT


def grouped(rows: Iterable[tuple[str, str, Facts]]) -> dict[str, dict[str, Facts]]:
    """``namespace -> id -> facts`` of ``(namespace, id, facts)`` rows."""
    namespaces: dict[str, dict[str, Facts]] = {}
    for ns, checkpoint_id, facts in rows:
        namespaces.setdefault(ns, {})[checkpoint_id] = facts
    return namespaces


def removed_ids(
    namespaces: Mapping[str, Mapping[str, Facts]], kept: Mapping[str, frozenset[str]]
) -> dict[str, list[str]]:
    """Per namespace, the ids a prune removes (those not kept), sorted."""
    return {ns: sorted(set(rows) - kept[ns]) for ns, rows in namespaces.items()}
