"""Run agent-framework's own functional-workflow tests and samples against wfctl.

For each release asked for (default: 1.13.0, the release the port was measured on, and the newest
agent-framework-core on the package index), this fetches into a temporary directory, at run time
and never into the repository, the release's ``test_functional_workflow.py`` and its functional
samples; changes only their import lines (each name wfctl exports is imported from ``wfctl``, any
other stays ``agent_framework``'s); runs the tests with pytest and each sample as a script; and
prints the counts and every failing test. A failing test that docs/agent-framework.md does not
list under "Upstream's own tests" is reported as unlisted, and the script then exits 1.

Where the files come from, first found first:

1. the release's source distribution on the package index (``pip download``), if it holds them;
2. GitHub, at the release's tag ``python-<version>``;
3. ``--source PATH``: a git repository of microsoft/agent-framework (a clone or a bare mirror),
   read at the same tag, for a machine that cannot reach GitHub.

A release whose files none of them has is reported as not measured, with why. Samples that
call a model (``FoundryChatClient``) get a stand-in chat client that answers every prompt with a
fixed reply; ``azure.identity`` and ``dotenv`` get stand-ins only when they are not installed.
The tests and samples run with the agent-framework installed here, whose types (``Agent``,
``Message``, ``AgentResponse``) they still import.

usage: python scripts/af_conformance.py [--version V]... [--source PATH [--only-source]] [--json]
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import tarfile
import tempfile
import textwrap
import urllib.request
import xml.etree.ElementTree as ET
from dataclasses import asdict, dataclass, field
from pathlib import Path

import wfctl

ROOT = Path(__file__).resolve().parents[1]
DOC = ROOT / "docs" / "agent-framework.md"
PACKAGE = "agent-framework-core"
PORTED_ON = "1.13.0"
TEST_PATH = "python/packages/core/tests/workflow/test_functional_workflow.py"
SDIST_TEST_PATH = "tests/workflow/test_functional_workflow.py"
SAMPLES_UNDER = "python/samples/"
RAW = "https://raw.githubusercontent.com/microsoft/agent-framework/{tag}/{path}"
TREE = "https://api.github.com/repos/microsoft/agent-framework/git/trees/{tag}?recursive=1"
SAMPLE_TIMEOUT = 120.0
#: What ``from wfctl import`` gives: the public names and those of an optional extra.
WFCTL_NAMES = frozenset(wfctl.__all__) | frozenset(wfctl._OPTIONAL_EXPORTS)
IMPORT = re.compile(
    r"^([ \t]*)from agent_framework(?:\._workflows\._functional)? import "
    r"(?:\(([^)]*)\)|([^\n(]+))\n",
    re.MULTILINE,
)

#: Runs the tests' ``async def`` functions without a plugin (agent-framework's own suite uses
#: pytest-asyncio's auto mode).
CONFTEST = """\
import asyncio
import inspect

import pytest


@pytest.hookimpl(tryfirst=True)
def pytest_pyfunc_call(pyfuncitem):
    if inspect.iscoroutinefunction(pyfuncitem.obj):
        names = pyfuncitem._fixtureinfo.argnames
        asyncio.run(pyfuncitem.obj(**{name: pyfuncitem.funcargs[name] for name in names}))
        return True
    return None
"""

#: Runs one sample as ``__main__`` with stand-ins for the model client and its credentials.
SAMPLE_RUNNER = '''\
import importlib.util
import runpy
import sys
import types

from agent_framework import BaseChatClient, ChatResponse, ChatResponseUpdate, Message


class StandInChatClient(BaseChatClient):
    """Answers every prompt with one fixed reply, streamed or not: no model, no network."""

    def __init__(self, *args, **kwargs):
        super().__init__()

    def _inner_get_response(self, *, messages, stream, options, **kwargs):
        reply = "stand-in reply"
        if stream:
            async def updates():
                yield ChatResponseUpdate(role="assistant", contents=[{"type": "text", "text": reply}])
            return updates()

        async def response():
            return ChatResponse(messages=[Message(role="assistant", contents=[reply])])
        return response()


def stand_in(name, **attributes):
    module = types.ModuleType(name)
    module.__dict__.update(attributes)
    sys.modules[name] = module


stand_in("agent_framework.foundry", FoundryChatClient=StandInChatClient)
if importlib.util.find_spec("azure") is None or importlib.util.find_spec("azure.identity") is None:
    stand_in("azure")
    stand_in("azure.identity", AzureCliCredential=lambda *a, **k: object())
if importlib.util.find_spec("dotenv") is None:
    stand_in("dotenv", load_dotenv=lambda *a, **k: False)
sys.argv = [sys.argv[1]]
runpy.run_path(sys.argv[0], run_name="__main__")
'''


@dataclass
class Measured:
    """What one release's files did against wfctl."""

    version: str
    source: str | None = None
    why_not: str | None = None
    tests: int = 0
    passed: int = 0
    failures: dict[str, str] = field(default_factory=dict)
    unlisted: list[str] = field(default_factory=list)
    samples: dict[str, str] = field(default_factory=dict)  # path -> "pass" or why not


def switch_imports(source: str) -> str:
    """Return ``source`` with each ``from agent_framework import`` line split: the names wfctl
    exports from ``wfctl``, the others still from ``agent_framework``."""

    def switched(match: re.Match[str]) -> str:
        indent, body = match.group(1), match.group(2) or match.group(3)
        names = [n.strip() for n in body.replace("\n", " ").split(",") if n.strip()]
        ours = [n for n in names if n.split(" as ")[0].strip() in WFCTL_NAMES]
        theirs = [n for n in names if n not in ours]
        lines = [f"{indent}from wfctl import {', '.join(ours)}\n"] if ours else []
        lines += [f"{indent}from agent_framework import {', '.join(theirs)}\n"] if theirs else []
        return "".join(lines)

    return IMPORT.sub(switched, source)


def newest_version() -> str:
    """The newest release of agent-framework-core on the package index."""
    listed = subprocess.run(
        [sys.executable, "-m", "pip", "index", "versions", PACKAGE],
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
    ).stdout
    found = re.search(rf"^{re.escape(PACKAGE)} \(([^)]+)\)", listed, re.MULTILINE)
    if found is None:
        raise SystemExit(f"af_conformance: the package index lists no {PACKAGE}")
    return found.group(1)


def from_sdist(version: str, work: Path) -> dict[str, str] | None:
    """The test file and samples in the release's source distribution, if it holds them."""
    where = work / "sdist"
    pip = [sys.executable, "-m", "pip", "download", "--quiet", "--no-deps"]
    done = subprocess.run(
        [*pip, "--no-binary", ":all:", "--dest", str(where), f"{PACKAGE}=={version}"],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    archives = sorted(where.glob("*.tar.gz")) if done.returncode == 0 else []
    if not archives:
        return None
    files: dict[str, str] = {}
    with tarfile.open(archives[0]) as archive:
        for member in archive.getmembers():
            inner = member.name.partition("/")[2]
            wanted = inner == SDIST_TEST_PATH or (
                inner.startswith("samples/") and "functional" in inner and inner.endswith(".py")
            )
            extracted = archive.extractfile(member) if wanted and member.isfile() else None
            if extracted is not None:
                key = TEST_PATH if inner == SDIST_TEST_PATH else "python/" + inner
                files[key] = extracted.read().decode("utf-8")
    return files if TEST_PATH in files else None


def from_github(version: str) -> dict[str, str] | None:
    """The test file and functional samples at the release's tag on GitHub, if reachable."""
    tag = f"python-{version}"
    try:
        with urllib.request.urlopen(TREE.format(tag=tag), timeout=15) as answer:
            tree = json.load(answer)["tree"]
        paths = [TEST_PATH] + [
            entry["path"]
            for entry in tree
            if entry["path"].startswith(SAMPLES_UNDER)
            and "functional" in entry["path"]
            and entry["path"].endswith(".py")
        ]
        files = {}
        for path in paths:
            with urllib.request.urlopen(RAW.format(tag=tag, path=path), timeout=15) as answer:
                files[path] = answer.read().decode("utf-8")
    except (OSError, ValueError, KeyError):
        return None
    return files


def from_git(version: str, repository: Path) -> dict[str, str] | None:
    """The test file and functional samples at the release's tag in a local git repository."""
    tag = f"python-{version}"

    def git(*args: str) -> str | None:
        done = subprocess.run(
            ["git", "-C", str(repository), *args],
            capture_output=True,
            text=True,
            check=False,
            timeout=120,
        )
        return done.stdout if done.returncode == 0 else None

    listed = git("ls-tree", "-r", "--name-only", tag, "--", "python/")
    if listed is None:
        return None
    paths = [
        path
        for path in listed.splitlines()
        if path == TEST_PATH
        or (path.startswith(SAMPLES_UNDER) and "functional" in path and path.endswith(".py"))
    ]
    files = {path: text for path in paths if (text := git("show", f"{tag}:{path}")) is not None}
    return files if TEST_PATH in files else None


def listed_in_doc() -> set[str]:
    """The tests docs/agent-framework.md lists as failing on purpose (its section's table)."""
    text = DOC.read_text(encoding="utf-8")
    _, _, section = text.partition("## Upstream's own tests")
    section = section.split("\n## ", 1)[0]
    return set(re.findall(r"^\| `(Test\w+::test_\w+)` \|", section, re.MULTILINE))


def run_tests(test_file: str, work: Path, measured: Measured) -> None:
    """Run the switched test file in ``work``; record its counts and failures."""
    (work / "test_functional_workflow.py").write_text(switch_imports(test_file), encoding="utf-8")
    (work / "conftest.py").write_text(CONFTEST, encoding="utf-8")
    (work / "pytest.ini").write_text("[pytest]\n", encoding="utf-8")
    report = work / "report.xml"
    pytest = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider"]
    subprocess.run(
        [*pytest, f"--junitxml={report}", "test_functional_workflow.py"],
        cwd=work,
        capture_output=True,
        text=True,
        check=False,
        timeout=900,
    )
    for case in ET.parse(report).getroot().iter("testcase"):
        name = f"{case.get('classname', '').rpartition('.')[2]}::{case.get('name')}"
        measured.tests += 1
        problem = case.find("failure")
        if problem is None:
            problem = case.find("error")
        if problem is None:
            if case.find("skipped") is None:
                measured.passed += 1
            continue
        first = (problem.get("message") or "").strip().splitlines()
        measured.failures[name] = first[0][:160] if first else "failed"
    listed = listed_in_doc()
    measured.unlisted = sorted(name for name in measured.failures if name not in listed)


def run_samples(files: dict[str, str], work: Path, measured: Measured) -> None:
    """Run each switched sample as a script in its own directory; record pass or why not."""
    runner = work / "run_sample.py"
    runner.write_text(SAMPLE_RUNNER, encoding="utf-8")
    for path in sorted(p for p in files if p.startswith(SAMPLES_UNDER)):
        place = work / "samples" / Path(path).stem
        place.mkdir(parents=True)
        script = place / Path(path).name
        script.write_text(switch_imports(files[path]), encoding="utf-8")
        try:
            done = subprocess.run(
                [sys.executable, str(runner), str(script)],
                cwd=place,
                capture_output=True,
                text=True,
                check=False,
                timeout=SAMPLE_TIMEOUT,
            )
        except subprocess.TimeoutExpired:
            measured.samples[path] = f"no end within {SAMPLE_TIMEOUT:.0f} s"
            continue
        lines = done.stderr.strip().splitlines()
        measured.samples[path] = (
            "pass" if done.returncode == 0 else (lines[-1] if lines else f"exit {done.returncode}")
        )


def measure(version: str, source: Path | None, only_source: bool = False) -> Measured:
    """Fetch ``version``'s files into a temporary directory and run them against wfctl."""
    measured = Measured(version)
    with tempfile.TemporaryDirectory(prefix="af-conformance-") as temporary:
        work = Path(temporary)
        files = None if only_source else from_sdist(version, work)
        measured.source = "sdist"
        if files is None and not only_source:
            files, measured.source = from_github(version), "github"
        if files is None and source is not None:
            files, measured.source = from_git(version, source), f"git {source}"
        if files is None:
            measured.source = None
            searched = (
                []
                if only_source
                else [
                    f"its sdist holds no {SDIST_TEST_PATH}",
                    f"GitHub's tag python-{version} is out of reach",
                ]
            )
            if source is not None:
                searched.append(f"{source} has no tag python-{version} with the test file")
            measured.why_not = f"{PACKAGE} {version}: " + ", ".join(searched)
            return measured
        run_tests(files[TEST_PATH], work, measured)
        run_samples(files, work, measured)
    return measured


def show(measured: Measured) -> None:
    """Print one release's outcome for people."""
    if measured.why_not is not None:
        print(f"{measured.version}: not measured: {measured.why_not}")
        return
    samples_passed = sum(outcome == "pass" for outcome in measured.samples.values())
    print(
        f"{measured.version} (files from {measured.source}): tests {measured.passed}/"
        f"{measured.tests} pass; samples {samples_passed}/{len(measured.samples)} pass"
    )
    for name, why in sorted(measured.failures.items()):
        mark = "UNLISTED " if name in measured.unlisted else ""
        print(f"  {mark}{name}: {why}")
    for path, outcome in sorted(measured.samples.items()):
        if outcome != "pass":
            print(f"  sample {path}: {outcome}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--version",
        action="append",
        help=f"a release of {PACKAGE} (repeatable; default {PORTED_ON} and the newest)",
    )
    parser.add_argument(
        "--source", type=Path, help="a git repository of microsoft/agent-framework to read from"
    )
    parser.add_argument(
        "--only-source",
        action="store_true",
        help="read only --source: neither the package index nor GitHub",
    )
    parser.add_argument("--json", action="store_true", help="print one JSON document")
    arguments = parser.parse_args(argv)
    if arguments.only_source and arguments.source is None:
        parser.error("--only-source needs --source")
    versions = arguments.version or list(dict.fromkeys([PORTED_ON, newest_version()]))
    outcomes = [measure(version, arguments.source, arguments.only_source) for version in versions]
    if arguments.json:
        print(json.dumps([asdict(outcome) for outcome in outcomes], indent=2))
    else:
        for outcome in outcomes:
            show(outcome)
    if any(outcome.unlisted for outcome in outcomes):
        print(
            textwrap.fill(
                "af_conformance: failing tests marked UNLISTED are not in docs/agent-framework.md's "
                "list: fix them or list them there with why",
                width=100,
            ),
            file=sys.stderr,
        )
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
