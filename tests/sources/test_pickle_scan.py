"""A pickle is scanned, never run: its opcodes are read for the globals and strings they name."""

from __future__ import annotations

import os
import pickle
from pathlib import Path
from typing import Any

import pytest

from wfctl._sources._pickle import MAX_SCANNED_STRINGS, MAX_STRING_CHARS, pickle_marker


class _Planter:
    """Unpickled, runs a shell command that creates a file."""

    def __init__(self, target: Path) -> None:
        self.target = target

    def __reduce__(self) -> tuple[Any, ...]:
        return (os.system, (f"touch {self.target}",))


@pytest.mark.parametrize("protocol", range(pickle.HIGHEST_PROTOCOL + 1))
def test_a_hostile_pickle_is_described_and_never_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, protocol: int
) -> None:
    # A relative target, run from tmp_path: the command stays shorter than a scanned string
    # may be, however long the temporary directory's path is (pytest-xdist's are longer).
    monkeypatch.chdir(tmp_path)
    target = Path("planted")
    raw = pickle.dumps(_Planter(target), protocol=protocol)
    marker = pickle_marker(raw, "app:Planter")
    assert marker["$opaque"] == "pickle" and marker["type"] == "app:Planter"
    assert marker["bytes"] == len(raw)
    assert marker["scan"] == {"globals": [f"{os.name}.system"], "strings": [f"touch {target}"]}
    assert not (tmp_path / "planted").exists()


def test_strings_are_listed_once_cut_and_bounded() -> None:
    words = [f"w{i}" for i in range(MAX_SCANNED_STRINGS + 3)]
    raw = pickle.dumps({"a": "x" * 500, "b": words, "c": "w0"})
    scan = pickle_marker(raw)["scan"]
    assert "type" not in pickle_marker(raw)
    assert scan["strings"][:2] == ["a", "x" * (MAX_STRING_CHARS - 1) + "…"]
    assert len(scan["strings"]) == MAX_SCANNED_STRINGS and scan["more"] is True
    assert scan["strings"].count("w0") <= 1


def test_an_exception_names_its_class() -> None:
    scan = pickle_marker(pickle.dumps(ValueError("boom")))["scan"]
    assert scan == {"globals": ["builtins.ValueError"], "strings": ["boom"]}


@pytest.mark.parametrize("raw", [b"", b"garbage", pickle.dumps(["alpha", "beta"])[:-3]])
def test_a_broken_stream_says_so_and_keeps_what_it_read(raw: bytes) -> None:
    scan = pickle_marker(raw)["scan"]
    assert scan["problem"].startswith("not a whole pickle stream")
    if raw.startswith(b"\x80"):
        assert scan["strings"] == ["alpha", "beta"]
