"""``--store``, ``WFCTL_STORE`` and ``wfctl.toml`` take URLs as well as directories."""

from __future__ import annotations

from pathlib import Path

import pytest

from wfctl._config import locate_store

from .conftest import invoke, wfctl


@pytest.mark.parametrize("url", ["http://example.com/x", "sqlite:///runs.db"])
def test_an_unknown_store_url_is_one_line_and_exit_2(url: str, tmp_path: Path) -> None:
    outcome = wfctl("runs", "--store", url, cwd=tmp_path)
    assert outcome.code == 2
    assert "postgresql://" in outcome.error_line()
    assert not any(tmp_path.iterdir())  # nothing was created for it


def test_a_memory_store_lists_no_runs() -> None:
    outcome = invoke("runs", "--store", "memory:", "--json")
    assert outcome.code == 0, outcome.stderr
    assert outcome.json()["runs"] == []


def test_a_url_keeps_its_double_slash_from_every_source(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    url = "postgresql://me@db.example:5432/flows"
    assert locate_store(url).target == url
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("WFCTL_STORE", url)
    assert locate_store().target == url and locate_store().named
    monkeypatch.delenv("WFCTL_STORE")
    (tmp_path / "wfctl.toml").write_text(f'store = "{url}"\n', encoding="utf-8")
    location = locate_store()
    assert location.target == url and not location.named
