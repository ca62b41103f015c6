"""Shared test helpers.

Async tests run through ``asyncio.run`` (no plugin); storages are wrapped, not mocked, to observe
or delay saves (tests import internals only where they say why). Every test that runs the
installed ``wfctl`` finds it through :func:`wfctl_executable`.
"""

from __future__ import annotations

import asyncio
import atexit
import itertools
import os
import shutil
import subprocess
import sys
import sysconfig
import tempfile
import tracemalloc
from collections.abc import Callable, Coroutine
from pathlib import Path
from typing import Any, TypeVar

import pytest

from wfctl import Checkpoint, FileCheckpointStorage, InMemoryCheckpointStorage

T = TypeVar("T")


#: How the name of the bytecode cache :func:`_share_bytecode` makes starts.
_BYTECODE_CACHE_NAME = "wfctl-tests-bytecode-"


def _share_bytecode() -> str | None:
    """Let the processes the tests start read compiled bytecode, as an installed wfctl does.

    pip compiles a wfctl it installs, but an editable install (the README's) leaves that to the
    first import, and with ``PYTHONDONTWRITEBYTECODE`` set (some machines set it) every process
    would compile every wfctl module again from source: about 0.1 s of each of the two thousand
    ``wfctl`` processes the tests run. So, when it is set, this process and its children write
    their bytecode to a private cache instead (``PYTHONPYCACHEPREFIX``, removed at exit), never
    beside the sources; xdist's workers inherit their controller's. A cache the caller chose is
    left alone. Returns the cache the tests' processes share, if any.
    """
    inherited = os.environ.get("PYTHONPYCACHEPREFIX", "")
    if Path(inherited).name.startswith(_BYTECODE_CACHE_NAME):  # the controller's, in a worker
        return inherited
    if not os.environ.get("PYTHONDONTWRITEBYTECODE") or inherited:
        return None
    cache = tempfile.mkdtemp(prefix=_BYTECODE_CACHE_NAME)
    atexit.register(shutil.rmtree, cache, ignore_errors=True)
    del os.environ["PYTHONDONTWRITEBYTECODE"]
    os.environ["PYTHONPYCACHEPREFIX"] = cache
    sys.pycache_prefix = cache
    sys.dont_write_bytecode = False
    return cache


#: The bytecode cache the processes the tests start share (None: bytecode as the caller set it).
BYTECODE_CACHE = _share_bytecode()


def wfctl_executable() -> str:
    """Return the installed ``wfctl`` script: this interpreter's own first, else the one on PATH.

    The script installed with this interpreter (its scripts directory, which for a virtual
    environment is beside ``sys.executable``) runs the code under test even when that
    environment is not on ``PATH``. A missing script fails the test: it is never a skip.
    """
    return console_script("wfctl", "the wfctl console script", "the package")


def console_script(name: str, what: str, package: str) -> str:
    """Return the console script ``name`` installed with this interpreter, else the one on PATH;
    a missing one fails the test, saying to install ``package`` (never a skip)."""
    own = os.pathsep.join([sysconfig.get_path("scripts"), str(Path(sys.executable).parent)])
    found = shutil.which(name, path=own) or shutil.which(name)
    if found is None:
        pytest.fail(
            f"{what} is not installed for {sys.executable} nor on PATH; "
            f"install {package} first: python -m pip install -e '.[test]'",
            pytrace=False,
        )
    return found


def traced_peak(call: Callable[[], object]) -> int:
    """Return the peak of the memory Python allocated while ``call()`` ran (tracemalloc)."""
    tracemalloc.start()
    try:
        call()
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def run_python(program: str) -> subprocess.CompletedProcess[str]:
    """Run ``program`` in a fresh interpreter (``python -c``) and return what it did."""
    return subprocess.run(
        [sys.executable, "-c", program], capture_output=True, text=True, check=False, timeout=60
    )


def arun(coro: Coroutine[Any, Any, T]) -> T:
    """Run ``coro`` on a fresh event loop."""
    return asyncio.run(coro)


@pytest.fixture(params=["memory", "file"])
def storage(request: pytest.FixtureRequest, tmp_path: Path) -> Any:
    """Each storage wfctl ships."""
    if request.param == "memory":
        return InMemoryCheckpointStorage()
    return FileCheckpointStorage(tmp_path / "store")


def assert_one_chain(checkpoints: list[Checkpoint]) -> None:
    """Assert that one run's checkpoints form a single linear chain from one root."""
    assert checkpoints, "no checkpoints"
    assert [c.seq for c in checkpoints] == list(range(len(checkpoints)))
    roots = [c for c in checkpoints if c.previous_checkpoint_id is None]
    assert len(roots) == 1 and roots[0].seq == 0
    for parent, child in itertools.pairwise(checkpoints):
        assert child.previous_checkpoint_id == parent.checkpoint_id
    parents = [c.previous_checkpoint_id for c in checkpoints if c.previous_checkpoint_id]
    assert len(parents) == len(set(parents)), "a checkpoint has two children"


class ObservedStorage:
    """Wraps a storage: records every save, and can hold chosen saves until released.

    ``gates[n]`` (an ``asyncio.Event``) holds the n-th save (0-based) until it is set.
    """

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.saved: list[Checkpoint] = []
        self.started: list[Checkpoint] = []
        self.gates: dict[int, asyncio.Event] = {}
        self._started_events: dict[int, asyncio.Event] = {}
        self.in_save = 0
        self.max_concurrent_saves = 0

    def save_started(self, index: int) -> asyncio.Event:
        """Return an event set when the ``index``-th save begins."""
        return self._started_events.setdefault(index, asyncio.Event())

    async def save(self, checkpoint: Checkpoint) -> None:
        index = len(self.started)
        self.started.append(checkpoint)
        self.save_started(index).set()
        self.in_save += 1
        self.max_concurrent_saves = max(self.max_concurrent_saves, self.in_save)
        try:
            gate = self.gates.get(index)
            if gate is not None:
                await gate.wait()
            await self.inner.save(checkpoint)
            self.saved.append(checkpoint)
        finally:
            self.in_save -= 1

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


def failure_of(caught: pytest.ExceptionInfo[Any]) -> Any:
    """Return the failed result a ``run()``/``resume()`` call raised its error with.

    A failed run raises the workflow's own exception, carrying the run id, the failed head and
    the result; this checks that they agree and returns the result (``status == "failed"``).
    """
    error = caught.value
    failed = error.wfctl_result
    assert failed.status == "failed" and failed.error is error
    assert (error.wfctl_run_id, error.wfctl_checkpoint_id) == (failed.run_id, failed.checkpoint_id)
    return failed
