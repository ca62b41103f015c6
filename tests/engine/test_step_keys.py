"""A run's step keys (``executed``, ``cached``, ``changed``), held compressed a chunk at a time."""

from __future__ import annotations

import random
from collections.abc import Callable, Iterator

import pytest

import wfctl._engine._stepkeys as stepkeys
from tests.conftest import traced_peak
from wfctl._engine._stepkeys import StepKeys

# Keys of every shape a run makes, and text no run makes, which must come back unchanged.
_ODD = ["named@k", "a#01", "a#", "#", "", "line\nbreak@x", "nul\x00@y", "\udcff#1", "é/ü#3"]


def _random_keys(rng: random.Random, size: int) -> list[str]:
    keys: list[str] = []
    while len(keys) < size:
        if rng.random() < 0.15:
            keys.append(rng.choice(_ODD))
            continue
        prefix = rng.choice(["double#", "0/double#", "a/b#3/inner#", "ask#"])
        first = rng.randrange(1000)
        keys.extend(f"{prefix}{n}" for n in range(first, first + rng.randrange(1, 12)))
    return keys[:size]


@pytest.fixture
def small_chunks(monkeypatch: pytest.MonkeyPatch) -> None:
    """Chunks of 7 keys, so that short sequences cross many chunk boundaries."""
    monkeypatch.setattr(stepkeys, "CHUNK_KEYS", 7)


@pytest.mark.usefixtures("small_chunks")
@pytest.mark.parametrize("seed", range(30))
def test_the_keys_read_back_as_a_list_of_them_would(seed: int) -> None:
    rng = random.Random(seed)
    model = _random_keys(rng, rng.randrange(0, 60))
    keys = StepKeys()
    for key in model:
        keys.append(key)
    assert list(keys) == model and len(keys) == len(model)
    assert keys == tuple(model) and keys == StepKeys(model) and hash(keys) == hash(tuple(model))
    assert repr(keys) == repr(tuple(model))
    assert keys != (*model, "extra#0") and keys != list(model)
    order = list(range(-len(model), len(model)))
    rng.shuffle(order)  # out of order: the kept chunk is not always the one asked for
    for index in order:
        assert keys[index] == model[index]
    for _ in range(20):
        start, stop, step = rng.randrange(-5, 70), rng.randrange(-5, 70), rng.choice([1, 3, -1])
        assert keys[start:stop:step] == tuple(model)[start:stop:step]
    for probe in [*model[:10], *_ODD, "double#99999"]:
        assert (probe in keys) == (probe in model)
    for bad in (len(model), -len(model) - 1):
        with pytest.raises(IndexError):
            keys[bad]


@pytest.mark.usefixtures("small_chunks")
@pytest.mark.parametrize("seed", range(30))
def test_removed_keys_leave_the_others_in_order(seed: int) -> None:
    rng = random.Random(seed)
    model = list(dict.fromkeys(_random_keys(rng, rng.randrange(1, 60))))  # unique, as a run's
    keys = StepKeys(model)
    for _ in range(3):
        gone = set(rng.sample(model, rng.randrange(0, len(model) + 1))) if model else set()
        assert keys.remove_keys(gone | {"absent#0"}) == gone  # what was there, and only that
        model = [key for key in model if key not in gone]
        assert list(keys) == model and len(keys) == len(model)
        assert all(keys[i] == key for i, key in enumerate(model))
        more = [f"more#{rng.randrange(10**6)}" for _ in range(rng.randrange(10))]
        for key in more:  # what follows a removal is appended as before
            keys.append(key)
        model.extend(more)
        assert list(keys) == model and keys[-1:] == tuple(model[-1:])


def _held(keys: Iterator[str]) -> int:
    """The peak of memory allocated while ``keys`` (each a new string) are appended."""

    def hold() -> None:
        held = StepKeys()
        for key in keys:
            held.append(key)

    return traced_peak(hold)


@pytest.mark.parametrize(
    "shape",
    [
        lambda n, _: f"double#{n}",  # a loop of one step
        lambda n, _: f"0/fetch#{n // 2}" if n % 2 else f"0/store#{n // 2}",  # of two steps
        lambda _, lane: f"double#{lane}",  # a fan-out's lanes, finishing in any order
    ],
    ids=["in order", "interleaved", "shuffled"],
)
def test_a_long_run_of_keys_is_held_in_a_few_bytes_a_key(
    shape: Callable[[int, int], str],
) -> None:
    # Measured: a list of keys "double#N" holds 66 bytes a key (6.6 MB at 100,000 keys);
    # StepKeys 2.2 (in order) to 4.1 (shuffled) bytes a key, besides ~0.4 MB it holds at any
    # length (the chunk held as strings, the compressor's buffers). Bound: 6 bytes a key.
    def peak(size: int) -> int:
        lanes = random.Random(size).sample(range(size), size)
        return _held(shape(n, lane) for n, lane in enumerate(lanes))

    small, large = peak(50_000), peak(150_000)
    assert (large - small) / 100_000 < 6, (small, large)
