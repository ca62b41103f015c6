"""``as_agent`` needs agent-framework, the optional extra: without it, one clear error naming
the extra, and ``import wfctl`` never imports it."""

from __future__ import annotations

import sys

import pytest

from tests.conftest import run_python
from wfctl import workflow


def test_as_agent_without_agent_framework_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "agent_framework", None)  # as if it were not installed
    monkeypatch.delitem(sys.modules, "wfctl._engine._agent", raising=False)

    @workflow(name="plain")
    async def plain(x: int) -> int:
        return x

    with pytest.raises(ImportError) as caught:
        plain.as_agent()
    assert str(caught.value) == (
        "Workflow.as_agent needs agent-framework, the optional extra of wfctl: "
        "pip install 'wfctl[agent-framework]'"
    )


def test_running_a_workflow_does_not_import_agent_framework() -> None:
    program = (
        "import asyncio, sys\n"
        "from wfctl import InMemoryCheckpointStorage, workflow\n"
        "@workflow(name='w', checkpoint_storage=InMemoryCheckpointStorage())\n"
        "async def w(x: int) -> int:\n"
        "    return x\n"
        "asyncio.run(w.run(1))\n"
        "print(sorted(m for m in sys.modules if m.startswith('agent_framework')))\n"
    )
    done = run_python(program)
    assert (done.returncode, done.stdout.strip()) == (0, "[]"), done.stderr
