"""A pickle read as data: what it would build, described, and nothing run or imported."""

from __future__ import annotations

import datetime
import pickle
import subprocess
import sys
from pathlib import Path
from typing import Any

from wfctl._sources._pickle_read import MAX_NODES, read_pickle

#: How a pickle names the builtin ``open`` (``io.open``, ``_io.open`` from Python 3.12).
OPEN = f"{open.__module__}.open"


class _Plant:
    """Unpickled, creates the file it names."""

    def __init__(self, target: Path) -> None:
        self.target = target

    def __reduce__(self) -> tuple[Any, ...]:
        return (open, (str(self.target), "w"))


class Point:
    def __init__(self, x: int, label: str) -> None:
        self.x, self.label = x, label


def test_a_hostile_call_is_described_never_made(tmp_path: Path) -> None:
    target = tmp_path / "planted"
    for protocol in range(pickle.HIGHEST_PROTOCOL + 1):
        reading = read_pickle(pickle.dumps(_Plant(target), protocol=protocol))
        assert reading == {"$type": OPEN, "$args": [str(target), "w"]}
    assert not target.exists()


def test_values_and_objects_read_as_json() -> None:
    value = {
        "n": [1, 2.5, None, True, b"xy", 10**30, float("inf")],
        "point": Point(3, "p"),
        "when": datetime.date(2020, 1, 2),
        "s": {7},
        ("a", 1): "tuple key",
    }
    assert read_pickle(pickle.dumps(value)) == {
        "n": [1, 2.5, None, True, {"$bytes": 2}, {"$int": "100 bits"}, "inf"],
        "point": {"$type": f"{__name__}.Point", "x": 3, "label": "p"},
        "when": {"$type": "datetime.date", "$args": [{"$bytes": 4}]},
        "s": [7],  # a set, as a list
        "['a', 1]": "tuple key",
    }


def test_what_cannot_be_read_gives_no_reading() -> None:
    looped: list[Any] = []
    looped.append(looped)
    shared: list[Any] = [1]
    for _ in range(40):  # 2**40 copies if shared references were expanded without a bound
        shared = [shared, shared]
    wide = list(range(MAX_NODES + 1))
    for raw in (b"not a pickle", pickle.dumps(looped), pickle.dumps(shared), pickle.dumps(wide)):
        assert read_pickle(raw) is None
    assert read_pickle(pickle.dumps(list(range(100)))) == list(range(100))


def test_reading_imports_nothing() -> None:
    code = (
        "import pickle, sys\n"
        "from wfctl._sources._pickle_read import read_pickle\n"
        "raw = pickle.dumps(__import__('decimal').Decimal('1.5'))\n"
        "del sys.modules['decimal'], sys.modules['_decimal']\n"
        "print(read_pickle(raw), 'decimal' in sys.modules)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "{'$type': 'decimal.Decimal', '$args': ['1.5']} False"
