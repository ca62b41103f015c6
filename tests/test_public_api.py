"""The public surface: everything in ``wfctl.__all__`` exists, and nothing public is missing."""

from __future__ import annotations

import wfctl
from tests.conftest import run_python
from wfctl import _errors
from wfctl._engine import _events


def test_every_exported_name_resolves() -> None:
    for name in wfctl.__all__:
        assert getattr(wfctl, name) is not None, name


def test_every_lazy_export_is_public_and_the_reverse() -> None:
    assert set(wfctl.__all__) == set(wfctl._EXPORTS)  # internal: the lazy import table


def test_errors_and_events_are_all_exported() -> None:
    assert set(_errors.__all__) <= set(wfctl.__all__)
    assert set(_events.__all__) - {"EVENT_KINDS"} <= set(wfctl.__all__)
    for name in _errors.__all__:
        assert issubclass(getattr(wfctl, name), wfctl.WfctlError)


def test_the_pause_signal_is_not_an_exception() -> None:
    assert issubclass(wfctl.PauseSignal, BaseException)
    assert not issubclass(wfctl.PauseSignal, Exception)


def test_the_spec_surface_is_there() -> None:
    required = {
        "step",
        "workflow",
        "Workflow",
        "RunContext",
        "get_run_context",
        "WorkflowRunResult",
        "FileCheckpointStorage",
        "InMemoryCheckpointStorage",
        "WfctlError",
        "CheckpointNotFoundError",
        "CheckpointCorruptError",
        "ReplayDivergenceError",
        "WorkflowChangedError",
        "RunLockedError",
        "DuplicateStepKeyError",
    }
    assert required <= set(wfctl.__all__)


def test_a_name_of_an_optional_extra_resolves_by_name_and_stays_out_of_a_star_import() -> None:
    from wfctl._engine._agent import FunctionalWorkflowAgent

    assert wfctl.FunctionalWorkflowAgent is FunctionalWorkflowAgent
    assert "FunctionalWorkflowAgent" in dir(wfctl)
    assert "FunctionalWorkflowAgent" not in wfctl.__all__
    program = (
        "import sys\n"
        "sys.modules['agent_framework'] = None  # as if the extra were not installed\n"
        "from wfctl import *\n"
        "print(workflow.__module__)\n"
    )
    done = run_python(program)
    assert (done.returncode, done.stdout.strip()) == (0, "wfctl._engine._workflow"), done.stderr
