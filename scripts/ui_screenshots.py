"""Regenerate the screenshots of ``wfctl ui``'s pages in docs/ui/ from a real session.

Usage::

    python scripts/ui_screenshots.py [--out docs/ui]

Fills a scratch store with the sample workflows (a run whose step is retried, one that pauses
for a person's answer, one that fans out, and a replay of the first), serves it with the
installed ``wfctl ui --port 0``, and saves a PNG of each page, taken by Debian's headless
Chromium through chromium-driver (``apt-get install chromium chromium-driver``; Selenium comes
with the ``test`` extra): ``runs.png``, ``run.png``, ``replay.png``, ``sizes.png``.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
from pathlib import Path
from urllib.parse import urlsplit

REPO = Path(__file__).resolve().parent.parent
SAMPLES = REPO / "sample_workflows"
CHROMIUM = "/usr/bin/chromium"
CHROMEDRIVER = "/usr/bin/chromedriver"


def _wfctl() -> str:
    here = Path(sys.executable).parent / "wfctl"
    return str(here) if here.exists() else shutil.which("wfctl") or "wfctl"


def _run(*args: str, codes: tuple[int, ...] = (0,)) -> str:
    done = subprocess.run([_wfctl(), *args], capture_output=True, text=True, check=False)
    if done.returncode not in codes:
        raise SystemExit(f"wfctl {' '.join(args)} exited {done.returncode}: {done.stderr}")
    return done.stdout


def _fill(store: Path) -> dict[str, str]:
    """Write the sample runs; return the ids of the retried run and of its replay."""
    _run("run", str(SAMPLES / "flaky_service.py"), "--store", str(store))
    _run("run", str(SAMPLES / "human_review.py"), "--store", str(store), codes=(3,))
    _run("run", str(SAMPLES / "fan_out.py"), "--store", str(store))
    runs = json.loads(_run("runs", "--store", str(store), "--json", "--reverse"))["runs"]
    first = runs[0]["run_id"]
    _run("replay", "-c", f"{first}.2", "--store", str(store), codes=(0, 1))
    runs = json.loads(_run("runs", "--store", str(store), "--json", "--reverse"))["runs"]
    return {"run": first, "replay": runs[-1]["run_id"]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=REPO / "docs" / "ui")
    args = parser.parse_args()
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    args.out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as scratch:
        store = Path(scratch) / "store"
        ids = _fill(store)
        env = {**os.environ, "TZ": "UTC"}
        server = subprocess.Popen(
            [_wfctl(), "ui", "--port", "0", "--store", str(store)],
            stdout=subprocess.PIPE,
            text=True,
            env=env,
        )
        options = webdriver.ChromeOptions()
        options.binary_location = CHROMIUM
        for argument in ("--headless=new", "--no-sandbox", "--window-size=1280,900"):
            options.add_argument(argument)
        browser = webdriver.Chrome(options=options, service=Service(CHROMEDRIVER))
        try:
            assert server.stdout is not None
            url = server.stdout.readline().strip()
            parts = urlsplit(url)
            base = f"{parts.scheme}://{parts.netloc}"
            browser.get(url)
            pages = {
                "runs": "/",
                "run": f"/run?id={ids['run']}",
                "replay": f"/replay?id={ids['replay']}",
                "sizes": "/sizes",
            }
            for name, path in pages.items():
                browser.get(base + path)
                target = args.out / f"{name}.png"
                browser.save_screenshot(str(target))
                print(
                    f"wrote {target.relative_to(REPO) if target.is_relative_to(REPO) else target}"
                )
        finally:
            browser.quit()
            server.send_signal(signal.SIGINT)
            server.wait(timeout=60)


if __name__ == "__main__":
    main()
