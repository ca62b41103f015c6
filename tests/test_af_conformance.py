"""``scripts/af_conformance.py`` runs agent-framework's test file and samples, as a release's
git tag holds them, against wfctl with only their import lines changed, and fails on a failing
test docs/agent-framework.md does not list.

The "release" here is a tiny git repository made in the test: two tests that pass, one failure
the doc lists, one it does not, and two samples, one calling a model through the stand-in."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SCRIPT = ROOT / "scripts" / "af_conformance.py"

TESTS = """\
from agent_framework import AgentResponseUpdate, InMemoryCheckpointStorage, workflow


class TestBasic:
    async def test_runs_on_wfctl(self):
        @workflow
        async def wf(x: int) -> int:
            return x + 1

        result = await wf.build(checkpoint_storage=InMemoryCheckpointStorage()).run(1)
        assert result.get_outputs() == [2]
        assert type(wf).__module__.startswith("wfctl")

    def test_other_names_stay_agent_framework_s(self):
        assert AgentResponseUpdate.__module__.startswith("agent_framework")


class TestConcurrencyGuard:
    def test_concurrent_run_raises(self):
        raise AssertionError("listed in docs/agent-framework.md")


class TestNew:
    def test_not_listed(self):
        raise AssertionError("not listed")
"""

PLAIN_SAMPLE = """\
import asyncio

from agent_framework import workflow


@workflow
async def wf(x: int) -> int:
    return x * 2


async def main() -> None:
    assert (await wf.run(21)).get_outputs() == [42]


if __name__ == "__main__":
    asyncio.run(main())
"""

AGENT_SAMPLE = """\
import asyncio

from agent_framework import Agent, workflow
from agent_framework.foundry import FoundryChatClient
from azure.identity import AzureCliCredential

agent = Agent(client=FoundryChatClient(credential=AzureCliCredential()), name="a", instructions="x")


@workflow
async def wf(topic: str) -> str:
    return (await agent.run(f"about {topic}")).text


async def main() -> None:
    assert (await wf.run("cats")).get_outputs() == ["stand-in reply"]


if __name__ == "__main__":
    asyncio.run(main())
"""


def git(repository: Path, *args: str) -> None:
    subprocess.run(["git", "-C", str(repository), *args], check=True, capture_output=True)


def release(tmp_path: Path) -> Path:
    """A git repository laid out as agent-framework's, tagged ``python-0.0.1``."""
    repository = tmp_path / "agent-framework"
    files = {
        "python/packages/core/tests/workflow/test_functional_workflow.py": TESTS,
        "python/samples/03-workflows/functional/plain.py": PLAIN_SAMPLE,
        "python/samples/01-get-started/05_functional_workflow_with_agents.py": AGENT_SAMPLE,
        "python/samples/03-workflows/graph/sequential.py": "raise SystemExit(1)\n",
    }
    for path, text in files.items():
        (repository / path).parent.mkdir(parents=True, exist_ok=True)
        (repository / path).write_text(textwrap.dedent(text), encoding="utf-8")
    git(repository.parent, "init", "-q", repository.name)
    git(repository, "add", ".")
    git(repository, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "release")
    git(repository, "tag", "python-0.0.1")
    return repository


def conformance(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(SCRIPT), *args], capture_output=True, text=True, timeout=300
    )


def test_a_release_s_tests_and_samples_are_run_and_an_unlisted_failure_fails(
    tmp_path: Path,
) -> None:
    repository = release(tmp_path)
    done = conformance("--version", "0.0.1", "--source", str(repository), "--only-source", "--json")
    assert done.returncode == 1, done.stderr
    assert "UNLISTED" in done.stderr and "docs/agent-framework.md" in done.stderr
    (measured,) = json.loads(done.stdout)
    assert (measured["tests"], measured["passed"]) == (4, 2)
    assert set(measured["failures"]) == {
        "TestConcurrencyGuard::test_concurrent_run_raises",
        "TestNew::test_not_listed",
    }
    assert measured["unlisted"] == ["TestNew::test_not_listed"]
    assert measured["samples"] == {
        "python/samples/01-get-started/05_functional_workflow_with_agents.py": "pass",
        "python/samples/03-workflows/functional/plain.py": "pass",
    }
    assert not list(ROOT.glob("**/test_functional_workflow.py"))  # fetched, never copied here


def test_a_release_no_source_holds_is_reported_as_not_measured(tmp_path: Path) -> None:
    repository = release(tmp_path)
    done = conformance("--version", "9.9.9", "--source", str(repository), "--only-source")
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == (
        f"9.9.9: not measured: agent-framework-core 9.9.9: {repository} has no tag "
        "python-9.9.9 with the test file"
    )
