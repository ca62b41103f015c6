"""The sample workflows, loaded by path, and one known-good input for each.

Samples are plain files (``sample_workflows/*.py``), not a package, so tests import them with
``importlib`` by path, as ``wfctl run`` does. Each is loaded once per session under its own
module name.
"""

from __future__ import annotations

import functools
import importlib.util
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any

from wfctl import Workflow, WorkflowRunResult

SAMPLES_DIR = Path(__file__).resolve().parents[2] / "sample_workflows"


@functools.cache
def load_sample(stem: str) -> ModuleType:
    """Import ``sample_workflows/<stem>.py`` (once) and return the module."""
    path = SAMPLES_DIR / f"{stem}.py"
    name = f"wfctl_sample_{stem}"
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def sample_workflow(stem: str, storage: Any) -> Workflow:
    """Return the sample's workflow (named like its file) bound to ``storage``."""
    workflow = getattr(load_sample(stem), stem)
    assert isinstance(workflow, Workflow)
    return workflow.build(checkpoint_storage=storage)


@dataclass(frozen=True)
class Case:
    """A sample, an input for it, the answers it needs, and the outputs it must return."""

    stem: str
    message: Callable[[Path], Any]
    expected: Callable[[Path], list[Any]] | None = None
    answers: dict[str, Any] = field(default_factory=dict)

    def __str__(self) -> str:
        return self.stem


CASES = [
    Case("concurrent_branches", lambda _: None, lambda _: [["result:A", "result:B"]]),
    Case(
        "parallel_steps",
        lambda _: {"value": 1, "fan_out": 3},
        lambda _: [[2, 3, 10, 11, 12]],
    ),
    Case("fan_out", lambda _: 20, lambda _: [{"count": 20, "sum_of_squares": 2470}]),
    Case(
        "flaky_service",
        lambda _: "WFC",
        lambda _: [{"symbol": "WFC", "price": 42, "attempts": 3}],
    ),
    Case("file_pipeline", lambda tmp: {"output": str(tmp / "out")}),
    Case("human_review", lambda _: "cats", answers={"request#0": "yes"}),
    Case(
        "af_review_loop",
        lambda _: "tides",
        lambda _: [
            {
                "status": "approved",
                "topic": "tides",
                "text": "Tides matter. Here is an example (add an example).",
                "reviews": ["add an example", "PASS"],
            }
        ],
        answers={"approval": "yes"},
    ),
]


async def run_to_end(
    workflow: Workflow, message: Any, answers: dict[str, Any]
) -> WorkflowRunResult:
    """Run ``workflow``; if it pauses, answer it once from ``answers``."""
    result = await workflow.run(message)
    if result.status == "paused" and answers:
        result = await workflow.run(checkpoint_id=result.checkpoint_id, responses=answers)
    assert result.status == "completed", result.error
    return result
