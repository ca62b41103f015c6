"""The keys of a run's calls in the order they happened, held compressed a thousand at a time.

A run reports every call it executed, served or found changed (``executed``, ``cached``,
``changed``), never cut. Held as a list of strings those keys were the one part of a run's
memory that grew with its length: ~70 bytes a step, 6.6 MB at 100,000 steps. A run's keys
repeat themselves (``<scope>/<name>#<n>``, ``n`` counting up), so :class:`StepKeys` keeps the
most recent ones as strings and every full chunk of them as one ``zlib``-compressed ``marshal``
of their tuple: 2 to 5 bytes a key whatever their order, for 0.1 to 0.3 µs a key.
``marshal`` only reads back bytes this object packed: nothing read from a store is unmarshalled.
"""

from __future__ import annotations

import marshal
import zlib
from array import array
from bisect import bisect_right
from collections.abc import Collection, Iterable, Iterator, Sequence
from typing import overload

__all__ = ["CHUNK_KEYS", "StepKeys"]

#: Keys held as strings before they are packed together (~65 KB of strings; 2.2 KB packed).
CHUNK_KEYS = 1024


def _pack(keys: Sequence[str]) -> bytes:
    # A 1 KiB window and a small hash table: a key repeats the ones just before it, and the
    # compressor's buffers are ~0.1 MB instead of zlib's default ~0.35 MB (its ratio the same).
    compressor = zlib.compressobj(1, zlib.DEFLATED, 10, 4)
    return compressor.compress(marshal.dumps(tuple(keys))) + compressor.flush()


def _unpack(packed: bytes) -> tuple[str, ...]:
    keys: tuple[str, ...] = marshal.loads(zlib.decompress(packed))
    return keys


class StepKeys(Sequence[str]):
    """An appendable sequence of step keys, equal to the tuple of them; a slice is a tuple.

    ``_packed`` holds the full chunks, ``_ends`` the index after each one's last key (a chunk
    a removal shortened holds fewer than :data:`CHUNK_KEYS`), ``_tail`` the keys after them.
    The last chunk unpacked for an index is kept (``_seen``), so reading the keys in order by
    index unpacks each chunk once.
    """

    __slots__ = ("_ends", "_packed", "_seen", "_tail")

    def __init__(self, keys: Iterable[str] = ()) -> None:
        self._packed: list[bytes] = []
        self._ends = array("q")
        self._tail: list[str] = []
        self._seen: tuple[int, tuple[str, ...]] | None = None
        for key in keys:
            self.append(key)

    def append(self, key: str) -> None:
        """Add ``key`` at the end."""
        tail = self._tail
        tail.append(key)
        if len(tail) == CHUNK_KEYS:
            self._packed.append(_pack(tail))
            self._ends.append(self._packed_len() + CHUNK_KEYS)
            self._tail = []

    def remove_keys(self, keys: Collection[str]) -> set[str]:
        """Remove every occurrence of each of ``keys`` (a run's keys are unique: its one), and
        return the ones that were there.

        One pass over the keys, whatever the number removed; a chunk that loses keys is packed
        again, shorter, and one that loses them all is dropped.
        """
        removed: set[str] = set()
        if not keys:
            return removed
        packed: list[bytes] = []
        ends = array("q")
        for chunk in self._packed:
            held = _unpack(chunk)
            left = [key for key in held if key not in keys]
            if len(left) != len(held):
                removed.update(key for key in held if key in keys)
                chunk = _pack(left)
            if left:
                packed.append(chunk)
                ends.append((ends[-1] if ends else 0) + len(left))
        self._packed, self._ends, self._seen = packed, ends, None
        removed.update(key for key in self._tail if key in keys)
        self._tail = [key for key in self._tail if key not in keys]
        return removed

    def _packed_len(self) -> int:
        ends = self._ends
        return ends[-1] if ends else 0

    def _chunk(self, index: int) -> tuple[str, ...]:
        seen = self._seen
        if seen is not None and seen[0] == index:
            return seen[1]
        keys = _unpack(self._packed[index])
        self._seen = (index, keys)
        return keys

    def __len__(self) -> int:
        return self._packed_len() + len(self._tail)

    @overload
    def __getitem__(self, index: int) -> str: ...
    @overload
    def __getitem__(self, index: slice) -> tuple[str, ...]: ...
    def __getitem__(self, index: int | slice) -> str | tuple[str, ...]:
        if isinstance(index, slice):
            return tuple(self)[index]
        size = len(self)
        position = index + size if index < 0 else index
        if not 0 <= position < size:
            raise IndexError("step key index out of range")
        packed = self._packed_len()
        if position >= packed:
            return self._tail[position - packed]
        chunk = bisect_right(self._ends, position)
        return self._chunk(chunk)[position - (self._ends[chunk - 1] if chunk else 0)]

    def __iter__(self) -> Iterator[str]:
        for chunk in self._packed:
            yield from _unpack(chunk)
        yield from self._tail

    def __eq__(self, other: object) -> bool:
        if isinstance(other, StepKeys):
            other = tuple(other)
        if isinstance(other, tuple):
            return len(other) == len(self) and tuple(self) == other
        return NotImplemented

    def __hash__(self) -> int:
        return hash(tuple(self))

    def __repr__(self) -> str:
        return repr(tuple(self))
