"""``--input`` is checked against the workflow parameter's annotation before anything is stored,
as answers are against their request's ``response_type``: exit 2, one line, no run, no store."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.cli.conftest import WORKFLOWS, wfctl

ANNOTATED = WORKFLOWS / "annotated.py"


@pytest.mark.parametrize("command", ["run", "submit"])
def test_a_message_that_does_not_fit_is_refused_and_nothing_is_stored(
    command: str, tmp_path: Path
) -> None:
    store = tmp_path / "store"
    done = wfctl(command, f"{ANNOTATED}:doubled", "--input", '"five"', "--store", store)
    assert done.code == 2, done.stderr
    line = done.error_line()
    assert "workflow 'doubled' must be int" in line and "'five'" in line, line
    assert not store.exists()  # not even the store's directory

    wrong = wfctl(command, f"{ANNOTATED}:place", "--input", '{"item": "tea"}', "--store", store)
    assert wrong.code == 2, wrong.stderr
    line = wrong.error_line()
    assert "workflow 'place' must be" in line and line.endswith("Order needs field(s) count"), line
    assert not store.exists()


def test_a_message_that_fits_is_converted_to_the_annotation(store: Path) -> None:
    number = wfctl("run", f"{ANNOTATED}:doubled", "--input", '"5"', "--store", store, "--json")
    assert number.code == 0, number.stderr
    assert number.json()["outputs"] == [10]  # "5" for an int is 5, as an answer's text is

    order = '{"item": "tea", "count": 2}'
    placed = wfctl("run", f"{ANNOTATED}:place", "--input", order, "--store", store, "--json")
    assert placed.code == 0, placed.stderr
    assert placed.json()["outputs"] == ["Order: 2 x tea"]  # a dataclass, not a dict
