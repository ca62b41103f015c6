"""Stores for the web inspector's tests, written by real runs, and ``wfctl ui`` served over them.

``ui_store`` holds, oldest first, a completed run with a retried step
(sample_workflows/flaky_service.py), a failed run of ``hostile.py`` whose workflow name, values
and error text hold HTML and script and one of whose values is far past what a page shows, a
replay of the first, a run of ``hostile.py:large`` whose output is huge, and its replay, whose
output differs. ``af_store`` is an
agent-framework directory written by agent-framework, its workflow (a run, there) named with
HTML. ``Served`` is the installed ``wfctl ui`` running over a store: its URL read from its first
line, stopped with SIGINT.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import signal
import subprocess
import urllib.error
import urllib.request
import warnings
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest

from tests.cli.conftest import SAMPLES, base_env, wfctl
from tests.conftest import wfctl_executable
from tests.postgres.conftest import pg_server, pg_url  # noqa: F401  # fixtures (a PostgreSQL store)
from tests.sources.stores import greet
from wfctl import FileCheckpointStorage

from .hostile import HOSTILE

HERE = Path(__file__).resolve().parent


@dataclass
class Served:
    """A ``wfctl ui`` process and the URL it printed."""

    process: subprocess.Popen[str]
    url: str

    @property
    def base(self) -> str:
        """The server's address without the token (``http://127.0.0.1:PORT``)."""
        parts = urlsplit(self.url)
        return f"{parts.scheme}://{parts.netloc}"

    @property
    def token(self) -> str:
        """The access token of the URL."""
        return self.url.split("token=", 1)[1]

    @property
    def cookie(self) -> str:
        """The cookie the server sets for the token."""
        return f"wfctl-ui-{urlsplit(self.url).port}={self.token}"

    def get(self, path: str, *, cookie: bool = True, method: str = "GET") -> tuple[int, str]:
        """Request ``path`` (with the token's cookie unless told not to): status and text."""
        request = urllib.request.Request(self.base + path, method=method)
        if cookie:
            request.add_header("Cookie", self.cookie)
        try:
            with urllib.request.urlopen(request, timeout=60) as answer:
                return answer.status, answer.read().decode()
        except urllib.error.HTTPError as error:
            return error.code, error.read().decode()

    def stop(self) -> tuple[int, str, str]:
        """Send SIGINT, wait; return the exit code, the rest of stdout and stderr."""
        self.process.send_signal(signal.SIGINT)
        out, err = self.process.communicate(timeout=60)
        return self.process.returncode, out, err


def serve(store: str | Path, *flags: str, env: Mapping[str, str] | None = None) -> Served:
    """Start ``wfctl ui --port 0`` over ``store`` (``env``: variables to set) and return once
    it printed its URL."""
    process = subprocess.Popen(
        [wfctl_executable(), "ui", "--port", "0", "--store", str(store), *flags],
        env=base_env(env),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert process.stdout is not None
    line = process.stdout.readline().strip()
    if not line.startswith("http://"):
        process.kill()
        _, err = process.communicate()
        raise AssertionError(f"wfctl ui printed {line!r}, stderr {err!r}")
    return Served(process, line)


async def greet_runs(store: Path, count: int) -> None:
    """Write ``count`` completed runs, each greeting a name longer than the last."""
    storage = FileCheckpointStorage(store, durable=False)
    bound = greet.build(checkpoint_storage=storage)
    for i in range(count):
        assert (await bound.run("n" * (i + 1))).status == "completed"


def runs_of(store: str | Path) -> list[dict[str, Any]]:
    """The store's runs as ``wfctl runs --json`` lists them, oldest first."""
    listed = wfctl("runs", "--store", store, "--json", "--reverse")
    assert listed.code == 0, listed.stderr
    runs: list[dict[str, Any]] = listed.json()["runs"]
    return runs


@pytest.fixture(scope="session")
def ui_store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    store = tmp_path_factory.mktemp("ui") / "store"
    ran = wfctl("run", SAMPLES / "flaky_service.py", "--store", store)
    assert ran.code == 0, ran.stderr
    failed = wfctl(
        "run", f"{HERE / 'hostile.py'}:hostile", "--input", json.dumps(HOSTILE), "--store", store
    )
    assert failed.code == 1, failed.stderr
    source = runs_of(store)[0]["run_id"]
    replayed = wfctl("replay", "-c", f"{source}.2", "--store", store)
    assert replayed.code in (0, 1), replayed.stderr
    ran = wfctl("run", f"{HERE / 'hostile.py'}:large", "--input", "200000", "--store", store)
    assert ran.code == 0, ran.stderr
    large = runs_of(store)[3]["run_id"]
    replayed = wfctl("replay", "-c", f"{large}.0", "--store", store)
    assert replayed.code == 1, replayed.stderr  # the output changed
    return store


@pytest.fixture(scope="session")
def af_store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    import agent_framework as af  # the test extra installs it

    directory = tmp_path_factory.mktemp("af-hostile")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the functional API says it is experimental

        @af.step
        async def echo(text: str) -> str:
            return text

        @af.workflow(name=HOSTILE)
        async def hostile(text: str) -> str:
            return await echo(text)

        async def main() -> None:
            storage = af.FileCheckpointStorage(directory)
            await hostile.build(checkpoint_storage=storage).run(HOSTILE)

        asyncio.run(main())
    return directory


@pytest.fixture(scope="session")
def served(ui_store: Path) -> Iterator[Served]:
    server = serve(ui_store)
    yield server
    code, _, err = server.stop()
    assert (code, err) == (0, "")


#: Where Debian's packages put the browser and its driver.
CHROMIUM = "/usr/bin/chromium"
CHROMEDRIVER = "/usr/bin/chromedriver"


@pytest.fixture(scope="session")
def browser(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    """One headless Chromium (Debian's, through its chromium-driver) for the whole session.

    Without them the browser tests skip, saying what to install; with WFCTL_REQUIRE_BROWSER=1
    (set by .ci/run, which installs them) they fail instead. Its profile and the files it
    leaves in its temporary directory are under the session's own (``/tmp`` keeps none).
    """
    missing = [path for path in (CHROMIUM, CHROMEDRIVER) if not shutil.which(path)]
    if missing:
        reason = f"no {' or '.join(missing)}: apt-get install chromium chromium-driver"
        if os.environ.get("WFCTL_REQUIRE_BROWSER") == "1":
            pytest.fail(reason + " (WFCTL_REQUIRE_BROWSER=1)")
        pytest.skip(reason)
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for argument in ("--headless=new", "--no-sandbox", "--disable-gpu", "--window-size=1280,900"):
        options.add_argument(argument)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    home = tmp_path_factory.mktemp("browser")
    options.add_argument(f"--user-data-dir={home / 'profile'}")
    service = Service(CHROMEDRIVER, env={**os.environ, "TMPDIR": str(home)})
    driver = webdriver.Chrome(options=options, service=service)
    try:
        yield driver
    finally:
        driver.quit()
