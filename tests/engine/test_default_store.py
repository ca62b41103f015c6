"""A workflow given no storage stores in ``./.wfctl``: the library reads no CLI configuration.

``WFCTL_STORE`` and ``wfctl.toml`` are the ``wfctl`` command's settings (the command binds the
store it resolved); a program's runs do not move with them.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import arun
from wfctl import FileCheckpointStorage, workflow


@workflow(name="stored_where")
async def stored_where(n: int = 1) -> int:
    return n + 1


def _runs(store: Path) -> list[str]:
    runs = store / "runs"
    return sorted(p.name for p in runs.iterdir()) if runs.is_dir() else []


def test_no_storage_means_dot_wfctl_whatever_the_cli_configuration_says(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    project = tmp_path / "project"
    project.mkdir()
    configured, by_env = tmp_path / "configured", tmp_path / "by_env"
    configured.mkdir()
    by_env.mkdir()
    (project / "wfctl.toml").write_text(f'store = "{configured}"\n', encoding="utf-8")
    monkeypatch.chdir(project)
    monkeypatch.setenv("WFCTL_STORE", str(by_env))
    wf = stored_where.build()  # a fresh object: no storage chosen yet

    result = arun(wf.run(3, run_id="lib-1"))

    assert result.status == "completed" and result.get_outputs() == [4]
    assert isinstance(wf.storage, FileCheckpointStorage)
    assert wf.storage.root == project / ".wfctl"
    assert _runs(project / ".wfctl") == ["lib-1"]
    assert _runs(configured) == [] and _runs(by_env) == []
