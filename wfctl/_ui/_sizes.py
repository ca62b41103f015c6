"""The sizes page as data: ``wfctl du`` as a picture, the largest runs first.

Where the listing says what each run takes (a file store: its run directory's files, counted
without reading a record), the largest runs are picked from it and only their records are
counted (:meth:`Source.sizes` of each): 100,000 runs are not read to draw 20 bars, and the
split by record kind and channel is of those runs, as the page says. Where it does not (a
server, another engine's store), every run is counted, as ``wfctl du`` counts them.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Final

from wfctl._errors import RunNotFoundError
from wfctl._sources._protocol import RunInfo, SizeInfo, Source

__all__ = ["LARGEST", "SizesView", "sizes_view"]

#: How many runs the page draws.
LARGEST: Final = 20


@dataclass(frozen=True, slots=True)
class SizesView:
    """The largest runs, the totals, and the bytes by record kind and by channel.

    ``run_count`` runs take ``total`` bytes; ``kinds`` and ``channels`` are counted over
    ``runs`` only when ``of_largest`` (else over every run).
    """

    runs: tuple[SizeInfo, ...]
    run_count: int
    total: int
    kinds: tuple[tuple[str, int], ...]
    channels: tuple[tuple[str, int], ...]
    of_largest: bool


def _split(sizes: Iterable[SizeInfo]) -> tuple[dict[str, int], dict[str, int]]:
    kinds: dict[str, int] = {}
    channels: dict[str, int] = {}
    for size in sizes:
        for part in size.by_kind:
            kinds[part.kind] = kinds.get(part.kind, 0) + part.size_bytes
        for part in size.by_channel:
            channels[part.kind] = channels.get(part.kind, 0) + part.size_bytes
    return kinds, channels


def _largest_first(parts: dict[str, int], count: int | None = None) -> tuple[tuple[str, int], ...]:
    return tuple(sorted(parts.items(), key=lambda item: -item[1])[:count])


def sizes_view(source: Source, listing: Sequence[RunInfo]) -> SizesView:
    """Return the sizes page of ``source``, whose runs ``listing`` lists."""
    if listing and all(run.size_bytes is not None for run in listing):
        largest = sorted(listing, key=lambda run: -(run.size_bytes or 0))[:LARGEST]
        counted: list[SizeInfo] = []
        for run in largest:
            try:
                counted.extend(source.sizes(run.run_id))
            except RunNotFoundError:  # removed since it was listed
                continue
        kinds, channels = _split(counted)
        return SizesView(
            runs=tuple(sorted(counted, key=lambda size: -size.size_bytes)),
            run_count=len(listing),
            total=sum(run.size_bytes or 0 for run in listing),
            kinds=_largest_first(kinds),
            channels=_largest_first(channels, LARGEST),
            of_largest=len(listing) > len(largest),
        )
    every = sorted(source.sizes(), key=lambda size: -size.size_bytes)
    kinds, channels = _split(every)
    return SizesView(
        runs=tuple(every[:LARGEST]),
        run_count=len(every),
        total=sum(size.size_bytes for size in every),
        kinds=_largest_first(kinds),
        channels=_largest_first(channels, LARGEST),
        of_largest=False,
    )
