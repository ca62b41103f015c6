"""``wfctl ui`` in a real browser: headless Chromium from Debian, driven by Selenium.

The pages load with no console error, list the runs, link to each other, draw a node per
record, refuse a browser without the token, show hostile text as text (no script of the store
runs) and fold a huge value. One browser serves every test (the ``browser`` fixture).
"""

from __future__ import annotations

import asyncio
import json
import os
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import WebDriverWait

from tests.cli.conftest import held_at_gate
from wfctl._ui._listing import PAGE_SIZE, QUICK_FROM_RUNS

from .conftest import Served, greet_runs, runs_of, serve
from .hostile import HOSTILE

#: Set by the store's hostile text if any of it ran as a script.
PWNED = "return window.__wfctl_pwned === undefined"


@pytest.fixture(autouse=True)
def fresh_console(browser: Any) -> None:
    """Each test reads only its own console: what the tests before it left is dropped."""
    browser.get_log("browser")


def errors_of(browser: Any) -> list[str]:
    """The console's errors since it was last read (Chromium's SEVERE entries)."""
    return [entry["message"] for entry in browser.get_log("browser") if entry["level"] == "SEVERE"]


def visit(browser: Any, server: Served, path: str) -> None:
    """Open ``path`` with the token's cookie (set through the printed URL first)."""
    browser.get(server.url)  # trades the token for the cookie and lands on the runs page
    browser.get(server.base + path)


def test_the_pages_load_without_console_errors(
    browser: Any, served: Served, ui_store: Path
) -> None:
    runs = runs_of(ui_store)
    for path in (
        "/",
        f"/run?id={runs[0]['run_id']}",
        f"/run?id={runs[1]['run_id']}",
        f"/replay?id={runs[2]['run_id']}",
        "/sizes",
        "/?status=failed&sort=workflow",
    ):
        visit(browser, served, path)
        assert browser.find_elements(By.CSS_SELECTOR, "main"), path
        assert errors_of(browser) == [], path
        assert browser.execute_script(PWNED), path


def test_runs_are_listed_and_their_links_lead_to_their_pages(
    browser: Any, served: Served, ui_store: Path
) -> None:
    runs = runs_of(ui_store)
    visit(browser, served, "/")
    links = browser.find_elements(By.CSS_SELECTOR, "a.run-link")
    assert sorted(link.text for link in links) == sorted(run["run_id"] for run in runs)
    first = next(link for link in links if link.text == runs[0]["run_id"])
    first.click()
    assert browser.find_element(By.ID, "run-id").text == runs[0]["run_id"]
    nodes = browser.find_elements(By.CSS_SELECTOR, "#lineage svg g.node")
    assert len(nodes) == runs[0]["head_seq"] + 1
    assert browser.find_element(By.ID, "verdict").text == "verify-lineage: ok"
    browser.find_element(By.LINK_TEXT, "sizes").click()
    assert browser.find_elements(By.CSS_SELECTOR, "#largest meter")
    assert errors_of(browser) == []


def test_a_browser_without_the_token_is_refused(browser: Any, served: Served) -> None:
    browser.delete_all_cookies()
    browser.get(served.base + "/")
    assert "refused" in browser.find_element(By.TAG_NAME, "body").text
    assert not browser.find_elements(By.CSS_SELECTOR, "a.run-link")
    browser.get(served.url)
    assert browser.current_url == served.base + "/"
    assert browser.find_elements(By.CSS_SELECTOR, "a.run-link")


def test_hostile_text_is_shown_as_text_and_never_runs(
    browser: Any, served: Served, ui_store: Path
) -> None:
    hostile = runs_of(ui_store)[1]
    visit(browser, served, "/")
    assert "hostile<script>" in browser.find_element(By.ID, "runs").text
    visit(browser, served, f"/run?id={hostile['run_id']}")
    text = browser.find_element(By.TAG_NAME, "main").text
    assert "hostile<script>" in text
    assert not browser.find_elements(By.CSS_SELECTOR, "main img, main script")
    for fact in browser.find_elements(By.CSS_SELECTOR, "details"):
        browser.execute_script("arguments[0].open = true", fact)
    text = browser.find_element(By.TAG_NAME, "main").text
    assert json.dumps(HOSTILE)[1:-1] in text  # the value and the error text, as JSON text
    assert "more characters folded" in text  # the 200,000-character result
    assert len(browser.page_source) < 100_000
    assert browser.execute_script(PWNED)
    assert errors_of(browser) == []


def test_a_running_run_is_followed_on_the_runs_page(browser: Any, tmp_path: Path) -> None:
    store, gate = tmp_path / "store", tmp_path / "gate"
    gate.mkdir()
    driver = held_at_gate(str(store), gate, "followed-run")
    server = serve(store)
    try:
        visit(browser, server, "/")
        row = "#runs tr.status-running a.run-link"
        assert [link.text for link in browser.find_elements(By.CSS_SELECTOR, row)] == [
            "followed-run"
        ]
        assert browser.find_element(By.ID, "runs").get_attribute("data-live") == "1"
        (gate / "gate").write_text("open", encoding="utf-8")
        assert driver.wait(timeout=60) == 0
        # no reload: the page reads itself again until the run's row says it completed
        WebDriverWait(browser, 60).until(
            lambda page: page.find_elements(By.CSS_SELECTOR, "#runs tr.status-completed")
        )
        assert browser.find_element(By.CSS_SELECTOR, "#runs .status").text == "completed"
        assert errors_of(browser) == []
    finally:
        if driver.poll() is None:
            driver.kill()
        driver.communicate()
        server.stop()


def test_a_large_store_s_first_page_comes_at_once_then_the_listing(
    browser: Any, tmp_path: Path
) -> None:
    store = tmp_path / "store"
    asyncio.run(greet_runs(store, QUICK_FROM_RUNS))
    newest = max(os.listdir(store / "runs"))
    server = serve(store)
    try:
        browser.get(server.url)  # the first request (then "/"): the listing has just started
        assert browser.find_elements(By.ID, "partial")
        links = browser.find_elements(By.CSS_SELECTOR, "a.run-link")
        assert len(links) == PAGE_SIZE and links[0].text == newest
        assert f"{QUICK_FROM_RUNS} runs" in browser.find_element(By.ID, "count").text
        # no reload by hand: the page reloads itself once the whole listing is read
        WebDriverWait(browser, 120).until(lambda page: not page.find_elements(By.ID, "partial"))
        options = browser.find_elements(By.CSS_SELECTOR, "select[name=status] option")
        assert [option.text for option in options] == ["any", "completed"]
        assert errors_of(browser) == []
    finally:
        server.stop()


def test_a_hostile_workflow_name_of_another_engine_is_text(browser: Any, af_store: Path) -> None:
    server = serve(af_store)  # agent-framework names a run by its first checkpoint's id
    try:
        visit(browser, server, "/")
        cells = browser.find_elements(By.CSS_SELECTOR, "tbody tr td")
        assert HOSTILE in [cell.text for cell in cells]
        browser.find_element(By.CSS_SELECTOR, "a.run-link").click()
        assert browser.find_element(By.CSS_SELECTOR, "main b").text == HOSTILE
        assert browser.find_elements(By.CSS_SELECTOR, "#lineage svg g.node")
        visit(browser, server, "/run?id=" + quote(HOSTILE))
        assert not browser.find_elements(By.CSS_SELECTOR, "main img, main script")
        assert browser.execute_script(PWNED)
        assert errors_of(browser) == []
    finally:
        server.stop()
